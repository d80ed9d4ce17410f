"""The nightly workflow's AWS role: GitHub OIDC trust and a least-privilege deploy policy, as code.

An administrator applies this once per sandbox account (`gpu-finops infra synth`, then
`terraform -chdir=cdktf.out/stacks/ci-role apply`; docs/runbook.md). It is deliberately outside the
network -> cluster -> addons order and outside teardown's reach: the role is named `nightly-<cluster>`
(teardown claims names that *start* with `<cluster>-`) and tagged `gpu-finops.io/ci`, never with the
project tag, so a nightly `make destroy` can never delete the role it runs as.

What the policy allows is derived, not guessed twice: `TERRAFORM_ACTIONS` (data: infra/ci_actions.yaml)
maps every Terraform resource and data type the stacks synthesize to the API actions the AWS provider calls for it (a test
fails when a stack gains a type that is not in the map), and `HARNESS_ACTIONS` lists what preflight,
the cost guard, the acts and teardown call (a test records every call they make against moto and
fails on one the policy does not allow).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from facts.config import Config
from facts.kube_keys import cluster_tag
from facts.names import PROJECT, SPOT_SLR, TAG_CI

GITHUB_OIDC_HOST = "token.actions.githubusercontent.com"
GITHUB_OIDC_AUDIENCE = "sts.amazonaws.com"
MAX_SESSION_SECONDS = 4 * 3600  # covers the workflow's job timeout: credentials must outlive teardown
MANAGED_POLICY_MAX_CHARS = 6144  # IAM's limit for one managed policy document, whitespace excluded
CI_TAG = {TAG_CI: "bootstrap"}

# The action table is data (infra/ci_actions.yaml): Terraform type -> the IAM actions the AWS provider calls
# for it; what our own code calls; and the regional list calls that take no resource ARN.
_ACTIONS = yaml.safe_load(Path(__file__).with_name("ci_actions.yaml").read_text())
TERRAFORM_ACTIONS: dict[str, tuple[str, ...]] = {
    rtype: tuple(actions or ()) for rtype, actions in _ACTIONS["terraform_actions"].items()
}
HARNESS_ACTIONS: tuple[str, ...] = tuple(_ACTIONS["harness_actions"])
UNSCOPED_LISTS: tuple[str, ...] = tuple(_ACTIONS["unscoped_lists"])


def _arn(c: Config, account: str, service: str, resource: str, *, region: bool = True) -> str:
    return f"arn:aws:{service}:{c.region if region else ''}:{account}:{resource}"


ALL_ACTIONS = sorted({a for acts in TERRAFORM_ACTIONS.values() for a in acts} | set(HARNESS_ACTIONS))


def by_prefix(prefix: str, *, exclude: Iterable[str] = ()) -> list[str]:
    """Every mapped or called action of one service (`ec2:`), less `exclude` and the unscoped lists."""
    skip = set(exclude) | set(UNSCOPED_LISTS)
    return [a for a in ALL_ACTIONS if a.startswith(prefix) and a not in skip]


def ours(sid: str, prefix: str, resource: str | list[str]) -> dict[str, Any]:
    return {"Sid": sid, "Effect": "Allow", "Action": by_prefix(prefix), "Resource": resource}


def deploy_policies(c: Config, account: str) -> dict[str, dict[str, Any]]:
    """The role's managed policies, by name, each under IAM's size limit. Scoped to the region, to our
    names and to the configured instance types wherever the service supports it."""
    return {
        f"{c.ci_role}-network": network_policy(c, account),
        f"{c.ci_role}-iam": iam_policy(c, account),
        f"{c.ci_role}-services": services_policy(c, account),
    }


def network_policy(c: Config, account: str) -> dict[str, Any]:
    """EC2 in our region; instances launched only of the configured types, terminated only when ours."""
    name = c.cluster_name
    in_region = {"StringEquals": {"aws:RequestedRegion": c.region}}
    ec2_scoped = {"ec2:RunInstances", "ec2:TerminateInstances", "ec2:DescribeSpotPriceHistory"}
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Ec2NetworkAndTemplatesInOurRegion",
                "Effect": "Allow",
                "Action": by_prefix("ec2:", exclude=ec2_scoped),
                "Resource": "*",
                "Condition": in_region,
            },
            {
                "Sid": "LaunchOnlyTheConfiguredInstanceTypes",
                "Effect": "Allow",
                "Action": "ec2:RunInstances",
                "Resource": _arn(c, "*", "ec2", "instance/*"),
                "Condition": {
                    "StringEquals": {
                        "ec2:InstanceType": sorted({*c.gpu_instance_types, c.system_instance_type})
                    }
                },
            },
            {
                "Sid": "LaunchWithOurTemplatesSubnetsAndImages",
                "Effect": "Allow",
                "Action": "ec2:RunInstances",
                "Resource": [
                    _arn(c, "*", "ec2", f"{kind}/*")
                    for kind in ("launch-template", "subnet", "security-group", "network-interface", "volume")
                ]
                + [f"arn:aws:ec2:{c.region}::image/*", f"arn:aws:ec2:{c.region}::snapshot/*"],
                "Condition": in_region,
            },
            {
                "Sid": "TerminateOnlyOurClustersInstances",
                "Effect": "Allow",
                "Action": "ec2:TerminateInstances",
                "Resource": _arn(c, account, "ec2", "instance/*"),
                "Condition": {"StringEquals": {f"aws:ResourceTag/{cluster_tag(name)}": "owned"}},
            },
            {
                "Sid": "SpotPricesForTheCostGuard",
                "Effect": "Allow",
                "Action": "ec2:DescribeSpotPriceHistory",
                "Resource": "*",
                "Condition": in_region,
            },
        ],
    }


def iam_policy(c: Config, account: str) -> dict[str, Any]:
    """Our roles, profiles and policies; PassRole only to their services; the spot role only when ours."""
    name = c.cluster_name
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "OurRolesPoliciesAndInstanceProfiles",
                "Effect": "Allow",
                "Action": by_prefix(
                    "iam:",
                    exclude=(
                        "iam:PassRole",
                        "iam:CreateServiceLinkedRole",
                        "iam:DeleteServiceLinkedRole",
                        "iam:GetServiceLinkedRoleDeletionStatus",
                        "iam:ListRoles",
                        "iam:ListInstanceProfiles",
                        "iam:ListPolicies",
                    ),
                ),
                "Resource": [
                    f"arn:aws:iam::{account}:{r}"
                    for r in (
                        f"role/{name}-*",
                        f"instance-profile/{name}-*",
                        f"instance-profile/{name}_*",  # Karpenter's per-EC2NodeClass profiles
                        f"policy/{name}-*",
                        f"role/aws-service-role/spot.amazonaws.com/{SPOT_SLR}",
                    )
                ],
            },
            {
                "Sid": "PassOurRolesToTheirServicesOnly",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": f"arn:aws:iam::{account}:role/{name}-*",
                "Condition": {
                    "StringEquals": {
                        "iam:PassedToService": [
                            "eks.amazonaws.com",
                            "ec2.amazonaws.com",
                            "fis.amazonaws.com",
                            "pods.eks.amazonaws.com",
                        ]
                    }
                },
            },
            {
                "Sid": "ServiceLinkedRolesEksAndSpotNeed",
                "Effect": "Allow",
                "Action": "iam:CreateServiceLinkedRole",
                "Resource": "*",
                "Condition": {
                    "StringEquals": {
                        "iam:AWSServiceName": [
                            "eks.amazonaws.com",
                            "eks-nodegroup.amazonaws.com",
                            "spot.amazonaws.com",
                        ]
                    }
                },
            },
            {
                "Sid": "DeleteOnlyTheSpotRoleWeCreated",
                "Effect": "Allow",
                "Action": ["iam:DeleteServiceLinkedRole", "iam:GetServiceLinkedRoleDeletionStatus"],
                "Resource": f"arn:aws:iam::{account}:role/aws-service-role/spot.amazonaws.com/*",
            },
            {
                "Sid": "TeardownInventoryLists",
                "Effect": "Allow",
                "Action": ["iam:ListRoles", "iam:ListInstanceProfiles", "iam:ListPolicies"],
                "Resource": "*",
            },
        ],
    }


def services_policy(c: Config, account: str) -> dict[str, Any]:
    """EKS, SQS, EventBridge, DynamoDB, Logs, ECR and SSM scoped to our names; KMS and FIS to our region."""
    name = c.cluster_name
    in_region = {"StringEquals": {"aws:RequestedRegion": c.region}}
    eks_resources = [
        _arn(c, account, "eks", r)
        for r in (
            f"cluster/{name}",
            f"nodegroup/{name}/*",
            f"addon/{name}/*",
            f"access-entry/{name}/*",
            f"podidentityassociation/{name}/*",
        )
    ] + ["arn:aws:eks::aws:cluster-access-policy/*"]
    return {
        "Version": "2012-10-17",
        "Statement": [
            ours("OurCluster", "eks:", eks_resources),
            ours("OurQueue", "sqs:", _arn(c, account, "sqs", f"{name}-*")),
            ours("OurEventRules", "events:", _arn(c, account, "events", f"rule/{name}-*")),
            ours("OurCostTable", "dynamodb:", _arn(c, account, "dynamodb", f"table/{c.cost_table}")),
            ours("OurLogGroup", "logs:", _arn(c, account, "logs", f"log-group:/aws/eks/{name}/*")),
            ours("OurCollectorRepository", "ecr:", _arn(c, account, "ecr", f"repository/{name}/*")),
            ours("OurSpotRoleRecord", "ssm:", _arn(c, account, "ssm", f"parameter/{PROJECT}/{name}/*")),
            ours(
                "OurExportBucket",
                "s3:",
                [f"arn:aws:s3:::{c.export_bucket}", f"arn:aws:s3:::{c.export_bucket}/*"],
            ),
            {
                "Sid": "KmsKeysInOurRegion",
                "Effect": "Allow",
                "Action": by_prefix("kms:"),
                "Resource": "*",
                "Condition": in_region,
            },
            ours(
                "FisTemplatesAndExperimentsInOurRegion",
                "fis:",
                [
                    _arn(c, account, "fis", "experiment-template/*"),
                    _arn(c, account, "fis", "experiment/*"),
                    _arn(c, "", "fis", "action/*"),
                ],
            ),
            {
                "Sid": "ListsThatTakeNoResource",
                "Effect": "Allow",
                "Action": list(UNSCOPED_LISTS),
                "Resource": "*",
                "Condition": in_region,
            },
            {
                "Sid": "PricesAndQuotasForPreflightAndTheCostGuard",
                "Effect": "Allow",
                "Action": ["pricing:GetProducts", "servicequotas:GetServiceQuota"],
                "Resource": "*",
            },
        ],
    }


def trust_policy(c: Config, account: str) -> dict[str, Any]:
    """Only this repository's jobs in the GitHub environment `c.ci_environment` may assume the role."""
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
                    }
                },
            }
        ],
    }


def role_name(c: Config) -> str:
    return c.ci_role


def allows(policies: Iterable[Mapping[str, Any]], action: str) -> bool:
    """Whether some Allow statement names `action` (wildcards as IAM matches them), and no Deny does.
    Resources and conditions are the reviewer's part; this is the coverage check."""

    def names(stmt: Mapping[str, Any]) -> list[str]:
        a = stmt.get("Action", [])
        return [a] if isinstance(a, str) else list(a)

    def match(stmt: Mapping[str, Any]) -> bool:
        return any(fnmatch.fnmatchcase(action.lower(), n.lower()) for n in names(stmt))

    stmts = [s for p in policies for s in p["Statement"]]
    return any(s["Effect"] == "Allow" and match(s) for s in stmts) and not any(
        s["Effect"] == "Deny" and match(s) for s in stmts
    )


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

    from infra.network import local_state

    stack = TerraformStack(scope, "ci-role")
    local_state(stack, c, "ci-role")
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
    for policy_name, document in deploy_policies(c, account).items():
        policy = IamPolicy(stack, policy_name, name=policy_name, policy=json.dumps(document))
        IamRolePolicyAttachment(stack, f"{policy_name}-attach", role=role.name, policy_arn=policy.arn)
    TerraformOutput(stack, "role_arn", value=role.arn, description="vars.GPU_FINOPS_ROLE_ARN in GitHub")
    return stack
