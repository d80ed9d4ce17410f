"""The nightly role's policy documents, as data, and the permissions boundary every role it creates carries.

Least privilege in three layers (the IAM and services policies are in iam/ci_policies_iam.py):
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
  which anyone allowed to tag can set, unlock nothing (red-team F6): the VPC CNI's interfaces carry both our
  tags from their creation (iam/vpc_cni.py), so they are changed and deleted as everything else of ours.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import LABEL_DISCOVERY, cluster_tag
from gpu_finops.facts.names import TAG_CLUSTER, TAG_PROJECT

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
# "amazon"), and the snapshots behind them; never another team's image or snapshot (red-team round 3, D).
AMAZON_OWNED = {"StringEquals": {"ec2:Owner": "amazon"}}


def amazon_images(region: str) -> list[str]:
    """The image and snapshot resources of a launch, allowed only with AMAZON_OWNED."""
    return [f"arn:aws:ec2:{region}::image/*", f"arn:aws:ec2:{region}::snapshot/*"]


def ours(c: Config, kind: str = "aws:ResourceTag") -> dict[str, str]:
    """Both our tags, as `StringEquals` keys (`aws:ResourceTag/...` or `aws:RequestTag/...`): the project
    tag alone is shared by every cluster of the project (red-team F3)."""
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
            # the stack adds Karpenter's discovery tag to it, that key only (issue 30). No adoption: it never
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
