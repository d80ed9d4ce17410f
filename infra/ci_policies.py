"""The nightly role's policy documents, as data, and the permissions boundary every role it creates carries.

Least privilege in three layers (the IAM and services policies are in infra/ci_policies_iam.py):
- **The boundary** (`boundary_policy`, a managed policy the ci-role stack creates, named
  `nightly-<cluster>-boundary`, outside the names the role may touch): every IAM role the stacks create
  carries it, so whatever a role is given, it can never do more than the cluster, its nodes, Karpenter,
  FIS and the collector need, and never write IAM beyond Karpenter's instance profiles.
- **IAM writes only under the boundary**: the role may create a role, put or attach a policy, or set a
  boundary only when `iam:PermissionsBoundary` is that policy; it may attach only the AWS managed policies
  the stacks use (`iam:PolicyARN`); it may never delete a boundary, change a trust policy, or touch the
  boundary or its own policies.
- **Destruction only of what is ours**: EC2, KMS and FIS changes and deletions need our tag on the
  resource (`aws:ResourceTag/...`); EKS, SQS, EventBridge, DynamoDB, Logs, ECR and SSM are scoped to the
  names the stacks create. `ec2:CreateTags` works only while creating (`ec2:CreateAction`), only with our
  tag keys (`aws:TagKeys`) and always with the project tag, or on what already carries the project tag.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from facts.config import Config
from facts.kube_keys import LABEL_DISCOVERY, cluster_tag
from facts.names import TAG_CLUSTER, TAG_PROJECT

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
# What Karpenter, EKS and the VPC CNI launch for our cluster carries their tag, not ours: teardown deletes
# those by these tags (teardown/model.py), so the role may delete them by the same tags.
CLUSTER_LAUNCHED = (
    "ec2:TerminateInstances",
    "ec2:DeleteVolume",
    "ec2:DeleteLaunchTemplate",
    "ec2:DeleteNetworkInterface",
    "ec2:DetachNetworkInterface",
)


def ownership_tags(c: Config) -> list[tuple[str, str]]:
    """(key, value) pairs that make an EC2 resource ours besides the project tag (same as teardown's)."""
    name = c.cluster_name
    return [
        (cluster_tag(name), "owned"),
        ("eks:eks-cluster-name", name),
        ("karpenter.k8s.aws/cluster", name),
        ("cluster.k8s.amazonaws.com/name", name),
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
    r, project = c.region, c.project
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
                {"StringEquals": {f"aws:RequestTag/{TAG_PROJECT}": project}},
            ),
            _stmt(
                "TagOnlyWhileCreatingWithOurKeys",
                "ec2:CreateTags",
                mine,
                {
                    "StringEquals": {
                        "ec2:CreateAction": list(EC2_CREATES),
                        f"aws:RequestTag/{TAG_PROJECT}": project,
                    },
                    "ForAllValues:StringEquals": {"aws:TagKeys": keys},
                },
            ),
            _stmt(
                "RetagOnlyWhatIsOursWithOurKeys",
                ["ec2:CreateTags", "ec2:DeleteTags"],
                mine,
                {
                    "StringEquals": {f"aws:ResourceTag/{TAG_PROJECT}": project},
                    "StringEqualsIfExists": {f"aws:RequestTag/{TAG_PROJECT}": project},
                    "ForAllValues:StringEquals": {"aws:TagKeys": keys},
                },
            ),
            _stmt(
                "NeverUntagTheProject",
                "ec2:DeleteTags",
                mine,
                {"ForAnyValue:StringEquals": {"aws:TagKeys": [TAG_PROJECT]}},
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
                {"StringEquals": {f"aws:ResourceTag/{TAG_PROJECT}": project}},
            ),
            _stmt(
                "LaunchWithWhatTheLaunchCreatesAndPublicImages",
                "ec2:RunInstances",
                [
                    f"arn:aws:ec2:{r}:{account}:{kind}/*"
                    for kind in ("security-group", "network-interface", "volume")
                ]
                + [f"arn:aws:ec2:{r}::image/*", f"arn:aws:ec2:{r}::snapshot/*"],
            ),
            _stmt("SpotPricesForTheCostGuard", "ec2:DescribeSpotPriceHistory", "*", in_region),
        ],
    }


def ec2_changes_policy(c: Config, account: str) -> dict[str, Any]:
    """EC2 changes and deletions: only of what carries the project tag, or (for what Karpenter, EKS and the
    VPC CNI launch) our cluster's tag; never on `*` by region alone."""
    mine = f"arn:aws:ec2:{c.region}:{account}:*"
    tagged_ours = {"StringEquals": {f"aws:ResourceTag/{TAG_PROJECT}": c.project}}
    return {
        "Version": "2012-10-17",
        "Statement": [
            _stmt("ChangeOrDeleteOnlyWhatIsTaggedOurs", ec2_classes()["change"], mine, tagged_ours),
            *(
                _stmt(
                    f"DeleteWhatOurClusterLaunched{i}",
                    list(CLUSTER_LAUNCHED),
                    mine,
                    {"StringEquals": {f"aws:ResourceTag/{key}": value}},
                )
                for i, (key, value) in enumerate(ownership_tags(c), 1)
            ),
        ],
    }
