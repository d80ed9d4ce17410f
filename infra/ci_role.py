"""The nightly workflow's AWS role: GitHub OIDC trust and a least-privilege deploy policy, as code.

An administrator applies this once per sandbox account (`gpu-finops infra synth`, then
`terraform -chdir=cdktf.out/stacks/ci-role apply`; docs/runbook.md). It is deliberately outside the
network -> cluster -> addons order and outside teardown's reach: the role is named `nightly-<cluster>`
(teardown claims names that *start* with `<cluster>-`) and tagged `gpu-finops.io/ci`, never with the
project tag, so a nightly `make destroy` can never delete the role it runs as.

What the policy allows is derived, not guessed twice: `TERRAFORM_ACTIONS` (data: iam/ci_actions.yaml)
maps every Terraform resource and data type the stacks synthesize to the API actions the AWS provider calls for it (a test
fails when a stack gains a type that is not in the map), and `HARNESS_ACTIONS` lists what preflight,
the cost guard, the acts and teardown call (a test records every call they make against moto and
fails on one the policy does not allow, deciding the destructive ones with the target's real tags).
How it is scoped (the permissions boundary, tag conditions) is in iam/ci_policies.py and
iam/ci_boundary.py; tests/infra/test_iam_lint.py and test_iam_escalation.py prove it offline.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from gpu_finops.facts.config import Config
from gpu_finops.facts.names import CI_ROLE_STACK, TAG_CI
from iam.ci_boundary import boundary_policy
from iam.ci_policies import (
    ALL_ACTIONS,
    HARNESS_ACTIONS,
    TERRAFORM_ACTIONS,
    UNSCOPED_LISTS,
    boundary_arn,
    boundary_policy_name,
    by_prefix,
    deploy_policies,
)
from iam.iam_eval import coverage

__all__ = [
    "ALL_ACTIONS",
    "HARNESS_ACTIONS",
    "TERRAFORM_ACTIONS",
    "UNSCOPED_LISTS",
    "boundary_arn",
    "boundary_policy",
    "boundary_policy_name",
    "by_prefix",
    "deploy_policies",
]

GITHUB_OIDC_HOST = "token.actions.githubusercontent.com"
GITHUB_OIDC_AUDIENCE = "sts.amazonaws.com"
# The workflows, on the one branch, that may assume the role (job_workflow_ref and ref claims; AWS STS
# validates GitHub's claims as condition keys since January 2026): the nightly, and the leak check, which
# runs `teardown verify` alone (tests/ci/test_leak_check_workflow.py holds it to that). The `sandbox`
# environment is restricted to the same branch in GitHub (docs/runbook.md), which is what `sub` names.
CI_WORKFLOW_PATH = ".github/workflows/nightly.yml"
LEAK_CHECK_WORKFLOW_PATH = ".github/workflows/leak-check.yml"
CI_WORKFLOW_PATHS = (CI_WORKFLOW_PATH, LEAK_CHECK_WORKFLOW_PATH)
CI_BRANCH_REF = "refs/heads/main"
MAX_SESSION_SECONDS = 4 * 3600  # covers the workflow's job timeout: credentials must outlive teardown
MANAGED_POLICY_MAX_CHARS = 6144  # IAM's limit for one managed policy document, whitespace excluded
CI_TAG = {TAG_CI: "bootstrap"}


def trust_policy(c: Config, account: str) -> dict[str, Any]:
    """Only this repository's nightly and leak-check workflows, run from the default branch in the GitHub
    environment `c.ci_environment`, may assume the role."""
    if not c.github_repository:
        raise ValueError(
            "config key 'github_repository' is empty: set it to owner/name of the repository whose "
            "nightly workflow assumes the role"
        )
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "GitHubOidcThisRepositoryAndEnvironmentOnly",
                "Effect": "Allow",
                "Principal": {"Federated": f"arn:aws:iam::{account}:oidc-provider/{GITHUB_OIDC_HOST}"},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{GITHUB_OIDC_HOST}:aud": GITHUB_OIDC_AUDIENCE,
                        f"{GITHUB_OIDC_HOST}:sub": f"repo:{c.github_repository}:environment:{c.ci_environment}",
                        f"{GITHUB_OIDC_HOST}:job_workflow_ref": [
                            f"{c.github_repository}/{path}@{CI_BRANCH_REF}" for path in CI_WORKFLOW_PATHS
                        ],
                        f"{GITHUB_OIDC_HOST}:ref": CI_BRANCH_REF,
                    }
                },
            }
        ],
    }


def role_name(c: Config) -> str:
    return c.ci_role


def allows(policies: Iterable[Mapping[str, Any]], action: str) -> bool:
    """Whether some Allow statement names `action` (wildcards as IAM matches them), and no blanket Deny
    does. The coverage check; `iam.iam_eval.decide` decides a real request with its resource and tags."""
    return coverage(policies, action)


def minified_size(policy: Mapping[str, Any]) -> int:
    return len(json.dumps(policy, separators=(",", ":")))


def ci_role_stack(scope: Any, c: Config) -> Any:
    """A CDK Terrain stack with the OIDC provider (optional: one per account), the role and its policies."""
    from cdktn import TerraformOutput, TerraformStack
    from cdktn_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
    from cdktn_provider_aws.data_aws_iam_openid_connect_provider import DataAwsIamOpenidConnectProvider
    from cdktn_provider_aws.iam_openid_connect_provider import IamOpenidConnectProvider
    from cdktn_provider_aws.iam_policy import IamPolicy
    from cdktn_provider_aws.iam_role import IamRole
    from cdktn_provider_aws.iam_role_policy_attachment import IamRolePolicyAttachment
    from cdktn_provider_aws.provider import AwsProvider

    from infra.state import local_state

    stack = TerraformStack(scope, CI_ROLE_STACK)
    local_state(stack, c, CI_ROLE_STACK)
    AwsProvider(
        stack,
        "aws",
        region=c.region,
        allowed_account_ids=list(c.allowed_accounts) or None,
        default_tags=[{"tags": CI_TAG}],  # never the project tag: teardown must not claim the CI role
    )
    account = DataAwsCallerIdentity(stack, "me").account_id
    if c.ci_create_oidc_provider:
        provider_arn = IamOpenidConnectProvider(
            stack, "github-oidc", url=f"https://{GITHUB_OIDC_HOST}", client_id_list=[GITHUB_OIDC_AUDIENCE]
        ).arn
    else:
        provider_arn = DataAwsIamOpenidConnectProvider(
            stack, "github-oidc", url=f"https://{GITHUB_OIDC_HOST}"
        ).arn
    trust = trust_policy(c, account)
    trust["Statement"][0]["Principal"]["Federated"] = provider_arn
    role = IamRole(
        stack,
        "role",
        name=role_name(c),
        description=f"gpu-finops nightly ({c.github_repository}, environment {c.ci_environment})",
        assume_role_policy=json.dumps(trust),
        max_session_duration=MAX_SESSION_SECONDS,
    )
    boundary = IamPolicy(
        stack,
        "boundary",
        name=boundary_policy_name(c),
        description=f"gpu-finops: the ceiling of every role the {c.cluster_name} stacks create",
        policy=json.dumps(boundary_policy(c, account)),
    )
    for policy_name, document in deploy_policies(c, account).items():
        policy = IamPolicy(stack, policy_name, name=policy_name, policy=json.dumps(document))
        IamRolePolicyAttachment(stack, f"{policy_name}-attach", role=role.name, policy_arn=policy.arn)
    sandbox_budget(stack, c)
    bucket = state_bucket(stack, c, account)
    TerraformOutput(stack, "role_arn", value=role.arn, description="vars.GPU_FINOPS_ROLE_ARN in GitHub")
    TerraformOutput(
        stack, "state_bucket", value=bucket.bucket, description="state_backend s3 keeps state here"
    )
    TerraformOutput(stack, "boundary_arn", value=boundary.arn, description="on every role the stacks create")
    return stack


STATE_NONCURRENT_DAYS = (
    90  # a state's earlier versions: how far back a bad apply or a lost object is recoverable
)


def state_bucket(stack: Any, c: Config, account: str) -> Any:
    """The bucket of the cluster stacks' Terraform state and teardown's run record and journal
    (`state_backend: s3`, infra/state.py): off the runner, so a lost runner loses no evidence. Versioned (a
    state overwritten or deleted is recoverable), encrypted with S3's AWS-managed KMS key, no public access,
    TLS only, objects owned by the bucket's account; earlier versions expire after STATE_NONCURRENT_DAYS.
    Terraform may never destroy it (`prevent_destroy`): it is the evidence teardown proves ownership by.
    Tagged as the CI role is, never with the project tag, and named `nightly-...`: teardown never claims it."""
    from cdktn import TerraformResourceLifecycle
    from cdktn_provider_aws.s3_bucket import S3Bucket
    from cdktn_provider_aws.s3_bucket_ownership_controls import S3BucketOwnershipControls
    from cdktn_provider_aws.s3_bucket_policy import S3BucketPolicy

    from infra.buckets import private_versioned

    bucket = S3Bucket(
        stack,
        "state",
        bucket=c.state_bucket(account),
        lifecycle=TerraformResourceLifecycle(prevent_destroy=True),
    )
    name = bucket.id
    private_versioned(stack, "state", name, noncurrent_days=STATE_NONCURRENT_DAYS)  # S3's own KMS key
    S3BucketOwnershipControls(
        stack, "state-ownership", bucket=name, rule={"object_ownership": "BucketOwnerEnforced"}
    )
    S3BucketPolicy(
        stack,
        "state-tls-only",
        bucket=name,
        policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "TlsOnly",
                        "Effect": "Deny",
                        "Principal": "*",
                        "Action": "s3:*",
                        "Resource": [bucket.arn, f"{bucket.arn}/*"],
                        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                    }
                ],
            }
        ),
    )
    return bucket


def sandbox_budget(stack: Any, c: Config) -> Any:
    """The sandbox account's monthly cost budget, apart from any run: a leak no nightly and no leak check saw
    still reaches a person as money. E-mails at 80 % of the budget spent and at 100 % forecast; without
    `budget_alert_emails` the budget is still there to see in the console, and notifies no one."""
    from cdktn_provider_aws.budgets_budget import BudgetsBudget, BudgetsBudgetNotification

    emails = list(c.budget_alert_emails)
    notifications = (
        [
            BudgetsBudgetNotification(
                comparison_operator="GREATER_THAN",
                notification_type=kind,
                threshold=percent,
                threshold_type="PERCENTAGE",
                subscriber_email_addresses=emails,
            )
            for kind, percent in (("ACTUAL", 80), ("FORECASTED", 100))
        ]
        if emails
        else None
    )
    return BudgetsBudget(
        stack,
        "sandbox-budget",
        name=f"{c.project}-{c.cluster_name}-sandbox",
        budget_type="COST",
        limit_amount=str(c.sandbox_monthly_budget_usd),
        limit_unit="USD",
        time_unit="MONTHLY",
        notification=notifications,
    )
