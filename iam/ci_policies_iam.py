"""The nightly role's IAM and services policies, and the set of managed policies it carries (the EC2 ones
and the shared action table are in iam/ci_policies.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpu_finops.facts.config import Config
from gpu_finops.facts.names import PROJECT, SPOT_SLR
from iam.ci_policies import (
    ATTACHABLE_MANAGED_POLICIES,
    AWS_MANAGED,
    UNSCOPED_LISTS,
    _stmt,
    boundary_arn,
    by_prefix,
    ec2_changes_policy,
    network_policy,
    our_tag_keys,
    ours,
)
from iam.ci_policies_events import EVENT_RULE_WRITES, INTERRUPTION_EVENTS, event_rule_writes
from iam.iam_policies import karpenter_profile_path

# IAM writes that could grant permissions: only under the boundary.
BOUNDED_IAM_WRITES = ("iam:CreateRole", "iam:PutRolePolicy", "iam:PutRolePermissionsBoundary")
_IAM_SEPARATE = {
    *BOUNDED_IAM_WRITES,
    "iam:AttachRolePolicy",
    "iam:PassRole",
    "iam:CreateServiceLinkedRole",
    "iam:DeleteServiceLinkedRole",
    "iam:GetServiceLinkedRoleDeletionStatus",
    "iam:ListRoles",
    "iam:ListInstanceProfiles",
    "iam:ListPolicies",
    "iam:GetPolicy",
    *("iam:ListRoleTags", "iam:ListPolicyTags", "iam:GetInstanceProfile"),
    *("iam:TagRole", "iam:UntagRole", "iam:TagInstanceProfile", "iam:UntagInstanceProfile"),
    *("iam:DeletePolicy", "iam:DeletePolicyVersion", "iam:ListPolicyVersions"),
}
# Tagging our roles and profiles: only with our keys, so a tag can never say more than the stacks set.
IAM_TAGGING = ("iam:TagRole", "iam:UntagRole", "iam:TagInstanceProfile", "iam:UntagInstanceProfile")
# The stacks create no managed policy; teardown deletes a leftover one only when it carries our tag (and the
# role can never tag a policy: no iam:TagPolicy), whatever its name.
POLICY_TEARDOWN = ("iam:DeletePolicy", "iam:DeletePolicyVersion", "iam:ListPolicyVersions")
# What teardown does to the instance profiles Karpenter made (under its path for our cluster).
KARPENTER_PROFILE_TEARDOWN = ("iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile")
# Teardown decides ownership by tags (teardown/types_iam.py), so it reads the tags of every role, policy and
# instance profile in the account, ours or not: read-only, and nothing else on what is not ours.
OWNERSHIP_TAG_READS = ("iam:ListRoleTags", "iam:ListPolicyTags", "iam:GetInstanceProfile")
# Never, whatever else a statement says: lift a boundary, or touch the boundary or the nightly's own role.
PROTECTED_IAM_WRITES = (
    "iam:CreatePolicyVersion",
    "iam:SetDefaultPolicyVersion",
    "iam:DeletePolicy",
    "iam:DeletePolicyVersion",
    "iam:AttachRolePolicy",
    "iam:DetachRolePolicy",
    "iam:PutRolePolicy",
    "iam:DeleteRolePolicy",
    "iam:UpdateAssumeRolePolicy",
    "iam:PutRolePermissionsBoundary",
    "iam:DeleteRole",
    "iam:TagRole",
    "iam:UntagRole",
)


def our_role_names(c: Config) -> list[str]:
    """Every role the stacks create, by its exact name: a prefix (`<cluster>-*`) would also match a sibling
    cluster's (`<cluster>-b-...`)."""
    return sorted({c.cluster_role, c.system_node_role, c.karpenter_node_role, c.karpenter_controller_role,
                   c.fis_role, c.collector_role})  # fmt: skip


def access_entry_principals(c: Config, account: str) -> list[str]:
    """The principals the stacks give an EKS access entry (infra/cluster.py, infra/cluster_karpenter.py)."""
    return [f"arn:aws:iam::{account}:role/{c.karpenter_node_role}", *c.admin_principal_arns]


def iam_policy(c: Config, account: str) -> dict[str, Any]:
    """Our roles and profiles by exact name; new permissions only under the boundary; PassRole only to
    their services; the spot role only when ours."""
    name, iam = c.cluster_name, f"arn:aws:iam::{account}"
    boundary = {"StringEquals": {"iam:PermissionsBoundary": boundary_arn(c, account)}}
    our_roles = [f"{iam}:role/{n}" for n in our_role_names(c)]
    karpenter_profiles = f"{iam}:instance-profile{karpenter_profile_path(name, c.region)}*"
    return {
        "Version": "2012-10-17",
        "Statement": [
            _stmt(
                "OurRolesProfilesAndPolicies",
                by_prefix("iam:", exclude=_IAM_SEPARATE),
                [
                    *our_roles,
                    f"{iam}:instance-profile/{c.karpenter_node_role}",
                    f"{iam}:role/aws-service-role/spot.amazonaws.com/{SPOT_SLR}",
                ],
            ),
            _stmt(
                "TagOurRolesAndProfilesOnlyWithOurKeys",
                list(IAM_TAGGING),
                [*our_roles, f"{iam}:instance-profile/{c.karpenter_node_role}"],
                {"ForAllValues:StringEquals": {"aws:TagKeys": sorted(c.tags)}},
            ),
            _stmt(
                "TeardownDeletesOnlyPoliciesTaggedOurs",
                list(POLICY_TEARDOWN),
                f"{iam}:policy/*",
                {"StringEquals": ours(c)},
            ),
            # Karpenter's per-EC2NodeClass profiles live under its path for our cluster, tagged by it.
            _stmt(
                "TeardownKarpentersProfiles",
                list(KARPENTER_PROFILE_TEARDOWN),
                karpenter_profiles,
                {"StringEquals": {f"aws:ResourceTag/kubernetes.io/cluster/{name}": "owned"}},
            ),
            _stmt("NewPermissionsOnlyUnderTheBoundary", list(BOUNDED_IAM_WRITES), our_roles, boundary),
            _stmt(
                "AttachOnlyTheManagedPoliciesWeUseUnderTheBoundary",
                "iam:AttachRolePolicy",
                our_roles,
                {
                    **boundary,
                    "ArnEquals": {"iam:PolicyARN": [AWS_MANAGED + p for p in ATTACHABLE_MANAGED_POLICIES]},
                },
            ),
            _stmt("NeverLiftABoundary", "iam:DeleteRolePermissionsBoundary", "*", effect="Deny"),
            _stmt(
                "NeverTouchTheBoundaryOrTheNightlysOwnRoleAndPolicies",
                list(PROTECTED_IAM_WRITES),
                [boundary_arn(c, account), f"{iam}:policy/{c.ci_role}-*", f"{iam}:role/{c.ci_role}"],
                effect="Deny",
            ),
            _stmt(
                "PassOurRolesToTheirServicesOnly",
                "iam:PassRole",
                our_roles,
                {
                    "StringEquals": {
                        "iam:PassedToService": [
                            "eks.amazonaws.com",
                            "ec2.amazonaws.com",
                            "fis.amazonaws.com",
                            "pods.eks.amazonaws.com",
                        ]
                    }
                },
            ),
            _stmt(
                "ServiceLinkedRolesEksAndSpotNeed",
                "iam:CreateServiceLinkedRole",
                f"{iam}:role/aws-service-role/*",
                {
                    "StringEquals": {
                        "iam:AWSServiceName": [
                            "eks.amazonaws.com",
                            "eks-nodegroup.amazonaws.com",
                            "spot.amazonaws.com",
                        ]
                    }
                },
            ),
            _stmt(
                "DeleteOnlyTheSpotRoleWeCreated",
                ["iam:DeleteServiceLinkedRole", "iam:GetServiceLinkedRoleDeletionStatus"],
                f"{iam}:role/aws-service-role/spot.amazonaws.com/*",
            ),
            _stmt("PreflightReadsTheBoundary", "iam:GetPolicy", boundary_arn(c, account)),
            _stmt(
                "TeardownInventoryLists",
                ["iam:ListRoles", "iam:ListInstanceProfiles", "iam:ListPolicies"],
                "*",
            ),
            _stmt(
                "TeardownReadsEveryTagToDecideOwnership",
                list(OWNERSHIP_TAG_READS),
                [f"{iam}:role/*", f"{iam}:policy/*", f"{iam}:instance-profile/*"],
            ),
        ],
    }


def services_policy(c: Config, account: str) -> dict[str, Any]:
    """EKS, SQS, EventBridge, DynamoDB, Logs, ECR and SSM scoped to our exact names (KMS: `keys_policy`;
    FIS: `fis_statements`)."""
    name, r = c.cluster_name, c.region
    in_region = {"StringEquals": {"aws:RequestedRegion": r}}

    def arn(service: str, resource: str, acct: str = account) -> str:
        return f"arn:aws:{service}:{r}:{acct}:{resource}"

    def scoped(
        sid: str, prefix: str, resource: str | list[str], exclude: Iterable[str] = ()
    ) -> dict[str, Any]:
        return _stmt(sid, by_prefix(prefix, exclude=exclude), resource)

    eks = [
        arn("eks", x)
        for x in (
            f"cluster/{name}",
            f"nodegroup/{name}/*",
            f"addon/{name}/*",
            f"access-entry/{name}/*",
            f"podidentityassociation/{name}/*",
        )
    ]
    rules = [arn("events", f"rule/{name}-{r}") for r in INTERRUPTION_EVENTS]
    return {
        "Version": "2012-10-17",
        "Statement": [
            scoped(
                "OurCluster",
                "eks:",
                [*eks, "arn:aws:eks::aws:cluster-access-policy/*"],
                exclude=["eks:CreateAccessEntry"],
            ),
            # an access entry only for the principals the stack enters: Karpenter's node role and the
            # configured admins, never an outside principal (eks:principalArn)
            _stmt(
                "AccessEntriesOnlyForOurNodesAndAdmins",
                "eks:CreateAccessEntry",
                eks[0],
                {"ArnEquals": {"eks:principalArn": access_entry_principals(c, account)}},
            ),
            # no SetQueueAttributes: the queue's policy is set at creation (infra/cluster_karpenter.py), and
            # SetQueueAttributes could rewrite it to let anyone in (red-team round 3, B)
            scoped("OurQueue", "sqs:", arn("sqs", c.interruption_queue), exclude=["sqs:SetQueueAttributes"]),
            # PutRule and PutTargets: conditioned, in the keys policy (event_rule_writes; size limit)
            scoped("OurEventRules", "events:", rules, exclude=EVENT_RULE_WRITES),
            scoped("OurCostTable", "dynamodb:", arn("dynamodb", f"table/{c.cost_table}")),
            scoped("OurLogGroup", "logs:", arn("logs", f"log-group:/aws/eks/{name}/*")),
            scoped("OurCollectorRepository", "ecr:", arn("ecr", f"repository/{name}/*")),
            scoped("OurSpotRoleRecord", "ssm:", arn("ssm", f"parameter/{PROJECT}/{name}/*")),
            scoped(
                "OurExportBucket",
                "s3:",
                [f"arn:aws:s3:::{c.export_bucket(account)}", f"arn:aws:s3:::{c.export_bucket(account)}/*"],
            ),
            # teardown reads the tags of every cluster, node group, queue, rule and key to decide ownership
            _stmt(
                "TeardownReadsEveryRegionalTagToDecideOwnership",
                [
                    "eks:DescribeCluster",
                    "eks:ListNodegroups",
                    "eks:DescribeNodegroup",
                    "sqs:ListQueueTags",
                    "events:ListTagsForResource",
                    "kms:DescribeKey",
                    "kms:ListResourceTags",
                ],
                [
                    f"arn:aws:{service}:{r}:{account}:{resource}"
                    for service, resource in (
                        ("eks", "cluster/*"),
                        ("eks", "nodegroup/*/*/*"),
                        ("sqs", "*"),
                        ("events", "rule/*"),
                        ("kms", "key/*"),
                    )
                ],
            ),
            _stmt("ListsThatTakeNoResource", list(UNSCOPED_LISTS), "*", in_region),
            _stmt(
                "PricesAndQuotasForPreflightAndTheCostGuard",
                ["pricing:GetProducts", "servicequotas:GetServiceQuota"],
                "*",
            ),
        ],
    }


def keys_policy(c: Config, account: str) -> dict[str, Any]:
    """KMS: keys created only tagged as ours, and used, changed, tagged or deleted only when they carry both
    our tags (a policy of its own, for IAM's size limit)."""
    r = c.region
    key = f"arn:aws:kms:{r}:{account}:key/*"
    tagged_ours = {"StringEquals": ours(c)}
    return {
        "Version": "2012-10-17",
        "Statement": [
            _stmt(
                "CreateKeysOnlyTaggedAsOurs",
                "kms:CreateKey",
                "*",
                {"StringEquals": {"aws:RequestedRegion": r, **ours(c, "aws:RequestTag")}},
            ),
            # CreateKey with tags needs kms:TagResource in a statement "not restricted to particular KMS keys"
            # (KMS developer guide, "Controlling access to tags"): the request names no key. An existing key
            # is tagged only when it already carries both our tags (red-team F2: tagging a foreign key ours
            # and then deleting or re-policying it); the Deny holds for every key ARN, whatever else allows.
            _stmt(
                "TagNewKeysOnlyAsOursWithOurKeys",
                "kms:TagResource",
                "*",
                {
                    "StringEquals": {"aws:RequestedRegion": r, **ours(c, "aws:RequestTag")},
                    "ForAllValues:StringEquals": {"aws:TagKeys": our_tag_keys(c)},
                },
            ),
            # one statement per tag: the keys of one condition block are ANDed, and a sibling's key has our
            # project tag (a negated operator is true where the tag is missing: an untagged key is denied)
            *(
                _stmt(
                    f"NeverTagAKeyThatIsNotOurs{i}",
                    ["kms:TagResource", "kms:UntagResource"],
                    key,
                    {"StringNotEquals": {k: v}},
                    effect="Deny",
                )
                for i, (k, v) in enumerate(ours(c).items(), 1)
            ),
            _stmt(
                "UseChangeAndRetireOnlyKeysTaggedOurs",
                by_prefix("kms:", exclude=("kms:CreateKey", "kms:TagResource")),
                key,
                tagged_ours,
            ),
        ],
    }


def fis_statements(c: Config, account: str) -> list[dict[str, Any]]:
    """FIS templates and experiments in our region; templates created only tagged as ours, and started,
    tagged, changed or deleted only when they carry both our tags (in the EC2 changes policy, for IAM's
    size limit: FIS's one action is an EC2 spot interruption). Red-team F4: starting any template, or
    tagging a foreign one ours to change it."""
    tagged_ours = {"StringEquals": ours(c)}
    fis_changes = [
        "fis:UpdateExperimentTemplate",
        "fis:DeleteExperimentTemplate",
        "fis:StartExperiment",
        "fis:TagResource",
        "fis:UntagResource",
    ]

    def arn(resource: str, acct: str = account) -> str:
        return f"arn:aws:fis:{c.region}:{acct}:{resource}"

    return [
        _stmt(
            "FisTemplatesAndExperimentsInOurRegion",
            by_prefix("fis:", exclude=[*fis_changes, "fis:CreateExperimentTemplate"]),
            [arn("experiment-template/*"), arn("experiment/*"), arn("action/*", "*")],
        ),
        # Tags given on creation are CreateExperimentTemplate's own aws:RequestTag (FIS has no tag-on-create
        # TagResource), so fis:TagResource is needed only on templates already ours.
        _stmt(
            "CreateFisTemplatesOnlyTaggedAsOurs",
            "fis:CreateExperimentTemplate",
            [arn("experiment-template/*"), arn("action/*", "*")],
            {"StringEquals": ours(c, "aws:RequestTag")},
        ),
        _stmt(
            "ChangeStartOrTagOnlyFisTemplatesTaggedOurs",
            fis_changes,
            arn("experiment-template/*"),
            tagged_ours,
        ),
        _stmt("StartedExperimentsTaggedAsOurs", "fis:StartExperiment", arn("experiment/*")),
    ]


def deploy_policies(c: Config, account: str) -> dict[str, dict[str, Any]]:
    """The role's managed policies, by name, each under IAM's size limit."""
    changes = ec2_changes_policy(c, account)
    changes["Statement"] += fis_statements(c, account)
    keys = keys_policy(c, account)
    keys["Statement"] += event_rule_writes(c, account)  # the services policy is near IAM's size limit
    return {
        f"{c.ci_role}-network": network_policy(c, account),
        f"{c.ci_role}-ec2-changes": changes,
        f"{c.ci_role}-iam": iam_policy(c, account),
        f"{c.ci_role}-services": services_policy(c, account),
        f"{c.ci_role}-keys": keys,
    }
