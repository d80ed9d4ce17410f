"""The nightly workflow's AWS role: GitHub OIDC trust and a least-privilege deploy policy, as code.

An administrator applies this once per sandbox account (`gpu-finops infra synth`, then
`terraform -chdir=cdktf.out/stacks/ci-role apply`; docs/runbook.md). It is deliberately outside the
network -> cluster -> addons order and outside teardown's reach: the role is named `nightly-<cluster>`
(teardown claims names that *start* with `<cluster>-`) and tagged `gpu-finops.io/ci`, never with the
project tag, so a nightly `make destroy` can never delete the role it runs as.

What the policy allows is derived, not guessed twice: `TERRAFORM_ACTIONS` maps every Terraform
resource and data type the stacks synthesize to the API actions the AWS provider calls for it (a test
fails when a stack gains a type that is not in the map), and `HARNESS_ACTIONS` lists what preflight,
the cost guard, the acts and teardown call (a test records every call they make against moto and
fails on one the policy does not allow).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping
from typing import Any

from facts.config import Config
from facts.kube_keys import cluster_tag
from facts.names import PROJECT, SPOT_SLR, TAG_CI

GITHUB_OIDC_HOST = "token.actions.githubusercontent.com"
GITHUB_OIDC_AUDIENCE = "sts.amazonaws.com"
MAX_SESSION_SECONDS = 4 * 3600  # covers the workflow's job timeout: credentials must outlive teardown
MANAGED_POLICY_MAX_CHARS = 6144  # IAM's limit for one managed policy document, whitespace excluded
CI_TAG = {TAG_CI: "bootstrap"}

# Terraform type -> the IAM actions the AWS provider calls to create, read, update and delete it.
TERRAFORM_ACTIONS: dict[str, tuple[str, ...]] = {
    # network stack
    "aws_vpc": (
        "ec2:CreateVpc",
        "ec2:DeleteVpc",
        "ec2:ModifyVpcAttribute",
        "ec2:DescribeVpcs",
        "ec2:DescribeVpcAttribute",
        "ec2:CreateTags",
        "ec2:DeleteTags",
        "ec2:DescribeNetworkAcls",
        "ec2:DescribeRouteTables",
        "ec2:DescribeSecurityGroups",
    ),
    "aws_default_security_group": (
        "ec2:DescribeSecurityGroups",
        "ec2:DescribeSecurityGroupRules",
        "ec2:RevokeSecurityGroupIngress",
        "ec2:RevokeSecurityGroupEgress",
        "ec2:AuthorizeSecurityGroupIngress",
        "ec2:AuthorizeSecurityGroupEgress",
    ),
    "aws_subnet": (
        "ec2:CreateSubnet",
        "ec2:DeleteSubnet",
        "ec2:ModifySubnetAttribute",
        "ec2:DescribeSubnets",
    ),
    "aws_internet_gateway": (
        "ec2:CreateInternetGateway",
        "ec2:AttachInternetGateway",
        "ec2:DetachInternetGateway",
        "ec2:DeleteInternetGateway",
        "ec2:DescribeInternetGateways",
    ),
    "aws_eip": (
        "ec2:AllocateAddress",
        "ec2:ReleaseAddress",
        "ec2:DisassociateAddress",
        "ec2:DescribeAddresses",
        "ec2:DescribeAddressesAttribute",
    ),
    "aws_nat_gateway": ("ec2:CreateNatGateway", "ec2:DeleteNatGateway", "ec2:DescribeNatGateways"),
    "aws_route_table": ("ec2:CreateRouteTable", "ec2:DeleteRouteTable", "ec2:DescribeRouteTables"),
    "aws_route": ("ec2:CreateRoute", "ec2:ReplaceRoute", "ec2:DeleteRoute", "ec2:DescribeRouteTables"),
    "aws_route_table_association": ("ec2:AssociateRouteTable", "ec2:DisassociateRouteTable"),
    # cluster stack
    "aws_security_group": (
        "ec2:CreateSecurityGroup",
        "ec2:DeleteSecurityGroup",
        "ec2:DescribeSecurityGroups",
        "ec2:AuthorizeSecurityGroupIngress",
        "ec2:AuthorizeSecurityGroupEgress",
        "ec2:RevokeSecurityGroupIngress",
        "ec2:RevokeSecurityGroupEgress",
        "ec2:DescribeNetworkInterfaces",
    ),
    "aws_launch_template": (
        "ec2:CreateLaunchTemplate",
        "ec2:CreateLaunchTemplateVersion",
        "ec2:ModifyLaunchTemplate",
        "ec2:DeleteLaunchTemplate",
        "ec2:DescribeLaunchTemplates",
        "ec2:DescribeLaunchTemplateVersions",
    ),
    "aws_kms_key": (
        "kms:CreateKey",
        "kms:DescribeKey",
        "kms:GetKeyPolicy",
        "kms:PutKeyPolicy",
        "kms:GetKeyRotationStatus",
        "kms:EnableKeyRotation",
        "kms:ListResourceTags",
        "kms:TagResource",
        "kms:UntagResource",
        "kms:ScheduleKeyDeletion",
        "kms:CreateGrant",
    ),
    "aws_cloudwatch_log_group": (
        "logs:CreateLogGroup",
        "logs:DeleteLogGroup",
        "logs:DescribeLogGroups",
        "logs:PutRetentionPolicy",
        "logs:TagResource",
        "logs:ListTagsForResource",
    ),
    "aws_iam_role": (
        "iam:CreateRole",
        "iam:GetRole",
        "iam:DeleteRole",
        "iam:TagRole",
        "iam:UntagRole",
        "iam:UpdateAssumeRolePolicy",
        "iam:ListRolePolicies",
        "iam:ListAttachedRolePolicies",
        "iam:ListInstanceProfilesForRole",
    ),
    "aws_iam_role_policy": ("iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy"),
    "aws_iam_role_policy_attachment": (
        "iam:AttachRolePolicy",
        "iam:DetachRolePolicy",
        "iam:ListAttachedRolePolicies",
    ),
    "aws_iam_instance_profile": (
        "iam:CreateInstanceProfile",
        "iam:GetInstanceProfile",
        "iam:DeleteInstanceProfile",
        "iam:AddRoleToInstanceProfile",
        "iam:RemoveRoleFromInstanceProfile",
        "iam:TagInstanceProfile",
        "iam:PassRole",
    ),
    "data.aws_iam_role": ("iam:GetRole",),
    "data.aws_caller_identity": (),  # sts:GetCallerIdentity needs no permission
    "aws_eks_cluster": (
        "eks:CreateCluster",
        "eks:DescribeCluster",
        "eks:DeleteCluster",
        "eks:UpdateClusterConfig",
        "eks:UpdateClusterVersion",
        "eks:TagResource",
        "eks:UntagResource",
        "eks:ListTagsForResource",
        "iam:PassRole",
        "iam:CreateServiceLinkedRole",
        "ec2:DescribeSubnets",
        "ec2:DescribeSecurityGroups",
        "kms:DescribeKey",
        "kms:CreateGrant",
    ),
    "aws_eks_node_group": (
        "eks:CreateNodegroup",
        "eks:DescribeNodegroup",
        "eks:DeleteNodegroup",
        "eks:UpdateNodegroupConfig",
        "eks:UpdateNodegroupVersion",
        "iam:PassRole",
        "iam:CreateServiceLinkedRole",
        "iam:GetRole",
        "ec2:RunInstances",  # checked when the node group's Auto Scaling group uses our launch template
        "ec2:DescribeLaunchTemplateVersions",
    ),
    "aws_eks_addon": (
        "eks:CreateAddon",
        "eks:DescribeAddon",
        "eks:DeleteAddon",
        "eks:UpdateAddon",
        "eks:DescribeAddonVersions",
    ),
    "aws_eks_access_entry": (
        "eks:CreateAccessEntry",
        "eks:DescribeAccessEntry",
        "eks:DeleteAccessEntry",
        "eks:UpdateAccessEntry",
    ),
    "aws_eks_access_policy_association": (
        "eks:AssociateAccessPolicy",
        "eks:DisassociateAccessPolicy",
        "eks:ListAssociatedAccessPolicies",
    ),
    "aws_eks_pod_identity_association": (
        "eks:CreatePodIdentityAssociation",
        "eks:DescribePodIdentityAssociation",
        "eks:DeletePodIdentityAssociation",
        "eks:UpdatePodIdentityAssociation",
        "iam:PassRole",
        "iam:GetRole",
    ),
    "aws_sqs_queue": (
        "sqs:CreateQueue",
        "sqs:DeleteQueue",
        "sqs:GetQueueAttributes",
        "sqs:SetQueueAttributes",
        "sqs:GetQueueUrl",
        "sqs:TagQueue",
        "sqs:ListQueueTags",
    ),
    "aws_sqs_queue_policy": ("sqs:SetQueueAttributes", "sqs:GetQueueAttributes"),
    "aws_cloudwatch_event_rule": (
        "events:PutRule",
        "events:DescribeRule",
        "events:DeleteRule",
        "events:TagResource",
        "events:ListTagsForResource",
    ),
    "aws_cloudwatch_event_target": ("events:PutTargets", "events:RemoveTargets", "events:ListTargetsByRule"),
    "aws_fis_experiment_template": (
        "fis:CreateExperimentTemplate",
        "fis:GetExperimentTemplate",
        "fis:UpdateExperimentTemplate",
        "fis:DeleteExperimentTemplate",
        "fis:TagResource",
        "fis:ListTagsForResource",
        "iam:PassRole",
    ),
    "aws_dynamodb_table": (
        "dynamodb:CreateTable",
        "dynamodb:DescribeTable",
        "dynamodb:DeleteTable",
        "dynamodb:UpdateTable",
        "dynamodb:DescribeContinuousBackups",
        "dynamodb:UpdateContinuousBackups",
        "dynamodb:DescribeTimeToLive",
        "dynamodb:TagResource",
        "dynamodb:ListTagsOfResource",
    ),
    "aws_ecr_repository": (
        "ecr:CreateRepository",
        "ecr:DescribeRepositories",
        "ecr:DeleteRepository",
        "ecr:PutImageScanningConfiguration",
        "ecr:PutImageTagMutability",
        "ecr:TagResource",
        "ecr:ListTagsForResource",
    ),
    "terraform_data": (),
    "data.terraform_remote_state": (),
    # addons stack: Helm and Kubernetes talk to the cluster API as the role the cluster creator got
    "helm_release": ("eks:DescribeCluster",),
    "kubernetes_namespace": ("eks:DescribeCluster",),
}

# What our own code calls: preflight, the cost guard, the acts (on AWS) and teardown.
HARNESS_ACTIONS: tuple[str, ...] = (
    "servicequotas:GetServiceQuota",
    "iam:GetRole",
    "iam:CreateServiceLinkedRole",
    "iam:DeleteServiceLinkedRole",
    "iam:GetServiceLinkedRoleDeletionStatus",
    "ssm:PutParameter",
    "ssm:GetParameter",
    "ssm:DeleteParameter",
    "ssm:AddTagsToResource",
    "pricing:GetProducts",
    "ec2:DescribeSpotPriceHistory",
    "fis:StartExperiment",
    "fis:GetExperiment",
    "fis:ListExperimentTemplates",
    "dynamodb:Query",
    "dynamodb:Scan",
    "dynamodb:ListTables",
    # teardown: inventory of every type, then deletion in graph order
    "ec2:DescribeInstances",
    "ec2:TerminateInstances",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DeleteNetworkInterface",
    "ec2:DetachNetworkInterface",
    "ec2:DescribeVolumes",
    "ec2:DeleteVolume",
    "eks:ListClusters",
    "eks:ListNodegroups",
    "iam:ListRoles",
    "iam:ListRoleTags",
    "iam:ListInstanceProfiles",
    "iam:ListPolicies",
    "iam:ListPolicyVersions",
    "iam:DeletePolicy",
    "iam:DeletePolicyVersion",
    "sqs:ListQueues",
    "events:ListRules",
    "logs:DescribeLogGroups",
    "kms:ListAliases",
)


# Regional list and catalog calls that take no resource ARN: allowed on "*" in the region, in one statement.
UNSCOPED_LISTS = (
    "eks:ListClusters",
    "eks:DescribeAddonVersions",
    "sqs:ListQueues",
    "events:ListRules",
    "dynamodb:ListTables",
    "logs:DescribeLogGroups",
    "fis:ListExperimentTemplates",
)


def _arn(c: Config, account: str, service: str, resource: str, *, region: bool = True) -> str:
    return f"arn:aws:{service}:{c.region if region else ''}:{account}:{resource}"


def deploy_policies(c: Config, account: str) -> dict[str, dict[str, Any]]:
    """The role's managed policies, by name, each under IAM's size limit. Scoped to the region, to our
    names and to the configured instance types wherever the service supports it."""
    name = c.cluster_name
    in_region = {"StringEquals": {"aws:RequestedRegion": c.region}}
    all_actions = sorted({a for acts in TERRAFORM_ACTIONS.values() for a in acts} | set(HARNESS_ACTIONS))

    def by_prefix(prefix: str, *, exclude: Iterable[str] = ()) -> list[str]:
        skip = set(exclude) | set(UNSCOPED_LISTS)
        return [a for a in all_actions if a.startswith(prefix) and a not in skip]

    def ours(sid: str, prefix: str, resource: str | list[str]) -> dict[str, Any]:
        return {"Sid": sid, "Effect": "Allow", "Action": by_prefix(prefix), "Resource": resource}

    ec2_scoped = {"ec2:RunInstances", "ec2:TerminateInstances", "ec2:DescribeSpotPriceHistory"}
    network = {
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
    iam = {
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
    services = {
        "Version": "2012-10-17",
        "Statement": [
            ours("OurCluster", "eks:", eks_resources),
            ours("OurQueue", "sqs:", _arn(c, account, "sqs", f"{name}-*")),
            ours("OurEventRules", "events:", _arn(c, account, "events", f"rule/{name}-*")),
            ours("OurCostTable", "dynamodb:", _arn(c, account, "dynamodb", f"table/{c.cost_table}")),
            ours("OurLogGroup", "logs:", _arn(c, account, "logs", f"log-group:/aws/eks/{name}/*")),
            ours("OurCollectorRepository", "ecr:", _arn(c, account, "ecr", f"repository/{name}/*")),
            ours("OurSpotRoleRecord", "ssm:", _arn(c, account, "ssm", f"parameter/{PROJECT}/{name}/*")),
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
    return {
        f"{c.ci_role}-network": network,
        f"{c.ci_role}-iam": iam,
        f"{c.ci_role}-services": services,
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
