"""The nightly role's policy documents, as data, under the permissions boundary (iam/ci_boundary.py) every role it creates carries.

Least privilege in three layers:
- **The boundary** (`boundary_policy`, a managed policy the ci-role stack creates, named
  `nightly-<cluster>-boundary`, outside the names the role may touch): every IAM role the stacks create
  carries it, so whatever a role is given, it can never do more than the cluster, its nodes, Karpenter,
  FIS and the collector need, and never write IAM beyond Karpenter's instance profiles.
- **IAM writes only under the boundary**: the role may create a role, put or attach a policy, or set a
  boundary only when `iam:PermissionsBoundary` is that policy; it may attach only the AWS managed policies
  the stacks use (`iam:PolicyARN`); it may never delete a boundary, change a trust policy, or touch the
  boundary or its own policies.
- **Destruction only of what is ours**: EC2, KMS and FIS changes and deletions need both our tags on the
  resource (`ours(c)`: the project tag *and* our cluster's `gpu-finops.io/cluster`, since a sibling
  cluster `<cluster>-b` shares the project tag); EKS, SQS, EventBridge, DynamoDB, Logs, ECR and SSM are
  scoped to the names the stacks create. `ec2:CreateTags` works only while creating (`ec2:CreateAction`),
  only with our tag keys (`aws:TagKeys`) and always with both our tags, or on what already carries both:
  so the role can put our cluster tag only on what it creates, and a sibling's role (whose requests must
  carry its own cluster's value) never on anything. The tags the cloud integrations set (`eks:...`,
  `karpenter.k8s.aws/cluster`, `kubernetes.io/cluster/<c>`, the VPC CNI's `cluster.k8s.amazonaws.com/name`),
  which anyone allowed to tag can set, unlock nothing: the VPC CNI's interfaces carry both our
  tags from their creation (iam/vpc_cni.py), so they are changed and deleted as everything else of ours.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import LABEL_DISCOVERY, cluster_tag
from gpu_finops.facts.names import (
    PROJECT,
    RUN_RECORD_OBJECT,
    SPOT_SLR,
    TAG_CLUSTER,
    TAG_PROJECT,
    state_prefix,
)
from iam.iam_policies import karpenter_profile_path

_ACTIONS = yaml.safe_load(Path(__file__).with_name("ci_actions.yaml").read_text())
TERRAFORM_ACTIONS: dict[str, tuple[str, ...]] = {
    rtype: tuple(actions or ()) for rtype, actions in _ACTIONS["terraform_actions"].items()
}
HARNESS_ACTIONS: tuple[str, ...] = tuple(_ACTIONS["harness_actions"])
UNSCOPED_LISTS: tuple[str, ...] = tuple(_ACTIONS["unscoped_lists"])
ALL_ACTIONS = sorted({a for acts in TERRAFORM_ACTIONS.values() for a in acts} | set(HARNESS_ACTIONS))

# AWS managed policies the cluster stack attaches (a test compares this with the synthesized stack).
AWS_MANAGED = "arn:aws:iam::aws:policy/"
ATTACHABLE_MANAGED_POLICIES = (
    "AmazonEKSClusterPolicy",
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",
)
# EC2 create calls the stacks make: the only ones whose tagging `ec2:CreateTags` allows (ec2:CreateAction).
EC2_CREATES = (
    "CreateVpc",
    "CreateSubnet",
    "CreateInternetGateway",
    "AllocateAddress",
    "CreateNatGateway",
    "CreateRouteTable",
    "CreateSecurityGroup",
    "CreateLaunchTemplate",
)
# Reads that take a resource ARN (the rest of EC2's Describe calls take none).
EC2_SCOPED_READS = ("ec2:DescribeVpcAttribute",)
# Calls that change or delete what exists: allowed only on resources tagged as ours.
_EC2_SPECIAL = {"ec2:CreateTags", "ec2:DeleteTags", "ec2:RunInstances", "ec2:DescribeSpotPriceHistory"}
# What Karpenter launches carries our EC2NodeClass's tags (infra/objects/karpenter.py: both of ours, on
# instances, volumes, launch templates and primary interfaces), the system nodes carry system-lt's, and
# the VPC CNI's interfaces the add-on's ADDITIONAL_ENI_TAGS (iam/vpc_cni.py): nothing needs another tag.
# The tag EKS puts on the cluster security group it creates; the `aws:` prefix is AWS's alone to set.
EKS_CLUSTER_TAG = "aws:eks:cluster-name"
# The images the nodes boot: the EKS-optimized AL2023 AMIs (Karpenter's EC2NodeClass selects them by alias,
# c.versions.node_ami_alias; the system node group's AMI type is EKS's too), owned by Amazon (`ec2:Owner`
# "amazon"), and the snapshots behind them; never another team's image or snapshot.
AMAZON_OWNED = {"StringEquals": {"ec2:Owner": "amazon"}}


def amazon_images(region: str) -> list[str]:
    """The image and snapshot resources of a launch, allowed only with AMAZON_OWNED."""
    return [f"arn:aws:ec2:{region}::image/*", f"arn:aws:ec2:{region}::snapshot/*"]


def ours(c: Config, kind: str = "aws:ResourceTag") -> dict[str, str]:
    """Both our tags, as `StringEquals` keys (`aws:ResourceTag/...` or `aws:RequestTag/...`): the project
    tag alone is shared by every cluster of the project."""
    return {f"{kind}/{TAG_PROJECT}": c.project, f"{kind}/{TAG_CLUSTER}": c.cluster_name}


def ownership_tags(c: Config) -> list[tuple[str, str]]:
    """(key, value) pairs that make an EC2 resource ours besides the project tag (same as teardown's)."""
    name = c.cluster_name
    return [
        (cluster_tag(name), "owned"),
        ("eks:eks-cluster-name", name),
        ("karpenter.k8s.aws/cluster", name),
    ]


def our_tag_keys(c: Config) -> list[str]:
    """Every tag key the stacks set on EC2 resources (a test checks the synthesized stacks against it)."""
    name = c.cluster_name
    return sorted(
        {TAG_PROJECT, TAG_CLUSTER, "Name", LABEL_DISCOVERY, cluster_tag(name)}
        | {"kubernetes.io/role/elb", "kubernetes.io/role/internal-elb"}
    )


def node_profiles(c: Config, account: str) -> list[str]:
    """Instance profiles an instance the role launches may carry: the stack's Karpenter node profile and
    the ones EKS creates for a managed node group (`eks-<uuid>`, holding the role we passed to EKS)."""
    iam = f"arn:aws:iam::{account}"
    return [f"{iam}:instance-profile/{c.karpenter_node_role}", f"{iam}:instance-profile/eks-*"]


def boundary_policy_name(c: Config) -> str:
    """Outside `<cluster>-*`, the policy names the role may manage: it can never rewrite its own ceiling."""
    return f"{c.ci_role}-boundary"


def boundary_arn(c: Config, account: str) -> str:
    return f"arn:aws:iam::{account}:policy/{boundary_policy_name(c)}"


def by_prefix(prefix: str, *, exclude: Iterable[str] = ()) -> list[str]:
    """Every mapped or called action of one service (`ec2:`), less `exclude` and the unscoped lists."""
    skip = set(exclude) | set(UNSCOPED_LISTS)
    return [a for a in ALL_ACTIONS if a.startswith(prefix) and a not in skip]


def _is_read(action: str) -> bool:
    return action.split(":", 1)[1].startswith(("Describe", "Get", "List"))


def ec2_classes() -> dict[str, list[str]]:
    """The mapped EC2 actions in three classes: reads, creates, and changes to what exists."""
    ec2 = [a for a in by_prefix("ec2:") if a not in _EC2_SPECIAL]
    creates = [f"ec2:{a}" for a in EC2_CREATES]
    return {
        "read": [a for a in ec2 if _is_read(a)],
        "create": [a for a in ec2 if a in creates],
        "change": [a for a in ec2 if not _is_read(a) and a not in creates],
    }


def _stmt(sid: str, actions: str | list[str], resource: str | list[str], condition=None, effect="Allow"):
    s: dict[str, Any] = {"Sid": sid, "Effect": effect, "Action": actions, "Resource": resource}
    if condition:
        s["Condition"] = condition
    return s


def network_policy(c: Config, account: str) -> dict[str, Any]:
    """EC2: read in our region; create only tagged as ours; change or delete only what is tagged ours;
    launch only the configured instance types."""
    r = c.region
    in_region = {"StringEquals": {"aws:RequestedRegion": r}}
    mine = f"arn:aws:ec2:{r}:{account}:*"
    keys = our_tag_keys(c)
    cls = ec2_classes()
    return {
        "Version": "2012-10-17",
        "Statement": [
            _stmt(
                "Ec2ReadsInOurRegion", [a for a in cls["read"] if a not in EC2_SCOPED_READS], "*", in_region
            ),
            _stmt("Ec2ReadsThatTakeOurResource", list(EC2_SCOPED_READS), mine),
            _stmt(
                "CreateOnlyTaggedAsOurs",
                cls["create"],
                mine,
                {"StringEquals": ours(c, "aws:RequestTag")},
            ),
            _stmt(
                "TagOnlyWhileCreatingWithOurKeys",
                "ec2:CreateTags",
                mine,
                {
                    "StringEquals": {
                        "ec2:CreateAction": list(EC2_CREATES),
                        **ours(c, "aws:RequestTag"),
                    },
                    "ForAllValues:StringEquals": {"aws:TagKeys": keys},
                },
            ),
            _stmt(
                "RetagOnlyWhatIsOursWithOurKeys",
                ["ec2:CreateTags", "ec2:DeleteTags"],
                mine,
                {
                    "StringEquals": ours(c),
                    "StringEqualsIfExists": ours(c, "aws:RequestTag"),
                    "ForAllValues:StringEquals": {"aws:TagKeys": keys},
                },
            ),
            # The group EKS creates for the cluster carries none of our tags (EKS propagates none), only
            # EKS's own `aws:eks:cluster-name`, which no caller can set (the `aws:` prefix is reserved):
            # the stack adds Karpenter's discovery tag to it, that key only. No adoption: it never
            # gets our tags, so nothing else here changes or deletes it.
            _stmt(
                "TagOnlyTheDiscoveryKeyOnTheGroupEksMadeForOurCluster",
                ["ec2:CreateTags", "ec2:DeleteTags"],
                f"arn:aws:ec2:{r}:{account}:security-group/*",
                {
                    "StringEquals": {f"aws:ResourceTag/{EKS_CLUSTER_TAG}": c.cluster_name},
                    "StringEqualsIfExists": {f"aws:RequestTag/{LABEL_DISCOVERY}": c.cluster_name},
                    "ForAllValues:StringEquals": {"aws:TagKeys": [LABEL_DISCOVERY]},
                },
            ),
            _stmt(
                "NeverUntagTheProjectOrTheCluster",
                "ec2:DeleteTags",
                mine,
                {"ForAnyValue:StringEquals": {"aws:TagKeys": [TAG_PROJECT, TAG_CLUSTER]}},
                effect="Deny",
            ),
            _stmt(
                "LaunchOnlyTheConfiguredInstanceTypes",
                "ec2:RunInstances",
                f"arn:aws:ec2:{r}:{account}:instance/*",
                {
                    "StringEquals": {
                        "ec2:InstanceType": sorted({*c.gpu_instance_types, c.system_instance_type})
                    },
                    "ArnLikeIfExists": {"ec2:InstanceProfile": node_profiles(c, account)},
                },
            ),
            # (the EKS node group's launch with our template is checked against the caller.) Only into our
            # subnets, only from our templates; the instance only of the configured types and with no
            # instance profile but ours or EKS's node group ones: never an instance holding someone else's
            # role (PassRole, on our exact roles only, guards that too).
            _stmt(
                "LaunchOnlyIntoOurSubnetsFromOurTemplates",
                "ec2:RunInstances",
                [f"arn:aws:ec2:{r}:{account}:{kind}/*" for kind in ("subnet", "launch-template")],
                {"StringEquals": ours(c)},
            ),
            _stmt(
                "LaunchWithWhatTheLaunchCreates",
                "ec2:RunInstances",
                [
                    f"arn:aws:ec2:{r}:{account}:{kind}/*"
                    for kind in ("security-group", "network-interface", "volume")
                ],
            ),
            _stmt("LaunchOnlyAmazonsImages", "ec2:RunInstances", amazon_images(r), AMAZON_OWNED),
            _stmt("SpotPricesForTheCostGuard", "ec2:DescribeSpotPriceHistory", "*", in_region),
        ],
    }


def ec2_changes_policy(c: Config, account: str) -> dict[str, Any]:
    """EC2 changes and deletions: only of what carries both our tags (the VPC CNI's interfaces too); never
    on `*` by region alone, never by a tag the cloud integrations set."""
    mine = f"arn:aws:ec2:{c.region}:{account}:*"
    return {
        "Version": "2012-10-17",
        "Statement": [
            _stmt(
                "ChangeOrDeleteOnlyWhatIsTaggedOurs", ec2_classes()["change"], mine, {"StringEquals": ours(c)}
            ),
        ],
    }


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
# EventBridge writes that decide what a rule matches and where it sends it: conditioned (event_rule_writes).
EVENT_RULE_WRITES = ("events:PutRule", "events:PutTargets")

# The events Karpenter's interruption queue receives, one EventBridge rule each: the cluster stack makes
# the rules (infra/cluster_karpenter.py), the deploy policy allows writing exactly these.
INTERRUPTION_EVENTS = {
    "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
    "health": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
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
            # SetQueueAttributes could rewrite it to let anyone in
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


def event_rule_writes(c: Config, account: str) -> list[dict[str, Any]]:
    """Each of our rules only with the pattern the stack gives it (its `events:source` and
    `events:detail-type`, from INTERRUPTION_EVENTS; a pattern without them, a catch-all, names neither
    key and is refused), and targets only our queue (`events:TargetArn`, every target of the call): a rule
    of ours can never forward the account's events to another bus or account."""
    r = c.region
    rule = f"arn:aws:events:{r}:{account}:rule/{c.cluster_name}"
    queue = f"arn:aws:sqs:{r}:{account}:{c.interruption_queue}"
    put_rules = [
        _stmt(
            f"PutRule{''.join(w.title() for w in rname.split('-'))}OnlyWithItsPattern",
            "events:PutRule",
            f"{rule}-{rname}",
            {
                # events:source is multivalued (a pattern may list several sources): every one must be
                # the rule's, and at least one given
                "ForAllValues:StringEquals": {"events:source": pattern["source"]},
                "Null": {"events:source": "false"},
                "StringEquals": {"events:detail-type": pattern["detail-type"]},
            },
        )
        for rname, pattern in INTERRUPTION_EVENTS.items()
    ]
    return [
        *put_rules,
        _stmt(
            "PutTargetsOnlyOurQueue",
            "events:PutTargets",
            [f"{rule}-{rname}" for rname in INTERRUPTION_EVENTS],
            {"ForAllValues:ArnEquals": {"events:TargetArn": [queue]}, "Null": {"events:TargetArn": "false"}},
        ),
    ]


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
            # is tagged only when it already carries both our tags (else a foreign key tagged ours could then be
            # deleted or re-policied); the Deny holds for every key ARN, whatever else allows.
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
    size limit: FIS's one action is an EC2 spot interruption); otherwise any template could be started, or
    a foreign one tagged ours and then changed."""
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


def state_statements(c: Config, account: str) -> list[dict[str, Any]]:
    """The state bucket (`state_backend: s3`, infra/state.py): list it, read and write under this region's
    cluster prefix, and delete only what is meant to go: Terraform's lock files and the run record a
    verified-empty teardown ends. Never a state or journal object, nor any object version: what proves a
    resource ours cannot be erased by the role (versioning keeps every overwritten state)."""
    bucket = f"arn:aws:s3:::{c.state_bucket(account)}"
    prefix = f"{bucket}/{state_prefix(c.region, c.cluster_name)}"
    return [
        _stmt("ListOurStateBucketAndSeeItVersioned", ["s3:ListBucket", "s3:GetBucketVersioning"], bucket),
        _stmt("ReadAndWriteOurStateAndEvidence", ["s3:GetObject", "s3:PutObject"], f"{prefix}*"),
        _stmt(
            "DeleteOnlyStateLocksAndTheEndedRunRecord",
            "s3:DeleteObject",
            [f"{prefix}*.tflock", f"{prefix}{RUN_RECORD_OBJECT}"],
        ),
    ]


def deploy_policies(c: Config, account: str) -> dict[str, dict[str, Any]]:
    """The role's managed policies, by name, each under IAM's size limit."""
    changes = ec2_changes_policy(c, account)
    changes["Statement"] += fis_statements(c, account)
    keys = keys_policy(c, account)
    keys["Statement"] += event_rule_writes(c, account)  # the services policy is near IAM's size limit
    keys["Statement"] += state_statements(c, account)
    return {
        f"{c.ci_role}-network": network_policy(c, account),
        f"{c.ci_role}-ec2-changes": changes,
        f"{c.ci_role}-iam": iam_policy(c, account),
        f"{c.ci_role}-services": services_policy(c, account),
        f"{c.ci_role}-keys": keys,
    }
