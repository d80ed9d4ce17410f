"""Privilege-escalation paths in identity policies, named statement by statement.

Each rule reads one Allow statement (wildcards in its actions expanded as IAM matches them) and says what
it would let the holder do beyond its job, in a sentence that names the statement and the missing guard:

- create a role, put or attach a policy, or set a boundary without `iam:PermissionsBoundary` = ours;
- attach a policy without an `iam:PolicyARN` condition; pass a role on `*` or to any service;
- tag EC2 resources unconditioned (tag anything as ours, then delete it as ours), or guarded only by the
  resource lacking our tag (`Null`: adopt any untagged resource, then change or delete it as ours);
- tag IAM roles, profiles or policies on a wildcard without `aws:TagKeys` or a positive
  `aws:ResourceTag` (make a foreign role "ours");
- `iam:*` or `sts:AssumeRole` on `*`; change a trust policy; write a policy version that is not ours;
- delete, terminate, detach, revoke or modify (EC2, Auto Scaling, ELB, and the other services' deletes) on
  a wildcard resource (`*`, `...:*`, `instance/*`, `role/<cluster>-*`) without an `aws:ResourceTag`
  condition: a wildcard name also matches what is not ours (a sibling cluster `<cluster>-b`);
- and, for the policy set, no Deny of `iam:DeleteRolePermissionsBoundary`.

`boundary_findings` holds a permissions boundary to the same EC2, Auto Scaling and ELB rules: the nightly
writes the policies of the roles under it, so the boundary alone must keep them off what is not ours.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpu_finops.facts.names import TAG_CLUSTER, TAG_PROJECT
from iam.iam_eval import action_matches, as_list, resource_matches

BOUNDED_WRITES = (
    "iam:CreateRole",
    "iam:PutRolePolicy",
    "iam:AttachRolePolicy",
    "iam:PutRolePermissionsBoundary",
    "iam:CreateUser",
    "iam:PutUserPolicy",
    "iam:AttachUserPolicy",
    "iam:PutUserPermissionsBoundary",
)
POLICY_VERSION_WRITES = ("iam:CreatePolicyVersion", "iam:SetDefaultPolicyVersion")
DESTRUCTIVE = (
    "ec2:TerminateInstances",
    "ec2:DeleteVpc",
    "ec2:DeleteSecurityGroup",
    "ec2:DeleteVolume",
    "ec2:DeleteNetworkInterface",
    "ec2:DetachNetworkInterface",
    "ec2:DeleteLaunchTemplate",
    "ec2:DeleteSnapshot",
    "ec2:DeleteSubnet",
    "ec2:DeleteNatGateway",
    "ec2:DeleteRoute",
    "ec2:ReleaseAddress",
    "ec2:StopInstances",
    "ec2:ModifyInstanceAttribute",
    "ec2:ModifyNetworkInterfaceAttribute",
    "ec2:AuthorizeSecurityGroupIngress",
    "ec2:RevokeSecurityGroupIngress",
    "ec2:RevokeSecurityGroupEgress",
    "ec2:UnassignPrivateIpAddresses",
    "autoscaling:DeleteAutoScalingGroup",
    "autoscaling:UpdateAutoScalingGroup",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
    "elasticloadbalancing:DeleteLoadBalancer",
    "elasticloadbalancing:DeregisterTargets",
    "elasticloadbalancing:ModifyListener",
    "kms:ScheduleKeyDeletion",
    "kms:PutKeyPolicy",
    "eks:DeleteCluster",
    "sqs:DeleteQueue",
    "events:DeleteRule",
    "dynamodb:DeleteTable",
    "iam:DeleteRole",
    "iam:DetachRolePolicy",
    "iam:AddRoleToInstanceProfile",
    "iam:DeleteInstanceProfile",
    "fis:StartExperiment",
    "fis:UpdateExperimentTemplate",
    "fis:DeleteExperimentTemplate",
    "kms:TagResource",
    "fis:TagResource",
)
# The resource type a destructive action acts on, where a statement may also list other types of the same
# service (an `eks:` statement on the cluster and on `nodegroup/<cluster>/*`); the rest act on any pattern.
ACTS_ON = {
    "eks:DeleteCluster": "cluster/",
    "events:DeleteRule": "rule/",
    "dynamodb:DeleteTable": "table/",
    "iam:DeleteRole": "role/",
    "iam:DetachRolePolicy": "role/",
    "iam:DeleteInstanceProfile": "instance-profile/",
    "fis:StartExperiment": "experiment-template/",
    "kms:TagResource": "key/",
    "fis:TagResource": "experiment-template/",
}
# Tags the cloud integrations set and anyone allowed to tag can set too: never ownership for a
# destructive action (the VPC CNI's interfaces carry our tags, iam/vpc_cni.py: its own tag is no exception).
FORGEABLE_TAGS = (
    "aws:resourcetag/kubernetes.io/cluster/",
    "aws:resourcetag/eks:eks-cluster-name",
    "aws:resourcetag/karpenter.k8s.aws/cluster",
    "aws:resourcetag/karpenter.sh/managed-by",
    "aws:resourcetag/cluster.k8s.amazonaws.com/name",
)
# What a launch creates in a subnet: the subnet must be ours.
SUBNET_CREATES = ("ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateNetworkInterface")
# Tagging that decides ownership of IAM resources (teardown's, ours): only with our keys.
IAM_TAGGING = ("iam:TagRole", "iam:UntagRole", "iam:TagInstanceProfile", "iam:TagPolicy")


def _condition_value(stmt: Mapping[str, Any], operators: tuple[str, ...], key: str) -> list[str] | None:
    for op, block in (stmt.get("Condition") or {}).items():
        if op in operators:
            for k, v in block.items():
                if k.lower() == key.lower():
                    return [str(x) for x in as_list(v)]
    return None


def _has_key(stmt: Mapping[str, Any], prefix: str) -> bool:
    return any(
        k.lower().startswith(prefix.lower()) for b in (stmt.get("Condition") or {}).values() for k in b
    )


def _wildcard(resource: str) -> bool:
    """Whether a resource pattern names more than one thing: `*` anywhere in its resource part."""
    return "*" in resource.split(":", 5)[-1]


def tag_findings(stmt: Mapping[str, Any]) -> list[str]:
    """ec2:CreateTags that could make a resource ours: it needs ec2:CreateAction (tags land only on what
    the call creates) or a positive aws:ResourceTag (only on what is already ours), and, when not on
    create, aws:TagKeys. A `Null` aws:ResourceTag guard adopts any untagged resource, foreign ones too."""
    sid = stmt.get("Sid", "(no Sid)")
    if not action_matches(stmt.get("Action", []), "ec2:CreateTags"):
        return []
    out = []
    positive_tag = any(
        k.lower().startswith("aws:resourcetag/")
        for op, b in (stmt.get("Condition") or {}).items()
        if op != "Null"
        for k in b
    )
    if not (_has_key(stmt, "ec2:CreateAction") or positive_tag):
        if "Null" in (stmt.get("Condition") or {}):
            out.append(
                f"{sid}: ec2:CreateTags onto whatever lacks our tag (Null aws:ResourceTag): adopts any "
                "untagged resource, foreign ones too, which is then changed or deleted as ours"
            )
        else:
            out.append(f"{sid}: ec2:CreateTags unconditioned (tag anything as ours, then delete it as ours)")
    # On create (ec2:CreateAction) tags land only on what the call creates; anywhere else, only our keys.
    if not _has_key(stmt, "ec2:CreateAction") and not _has_key(stmt, "aws:TagKeys"):
        out.append(f"{sid}: ec2:CreateTags with any tag keys (no aws:TagKeys condition)")
    return out


def destructive_findings(stmt: Mapping[str, Any]) -> list[str]:
    """A delete, terminate, detach, revoke or modify on a wildcard resource with no aws:ResourceTag
    condition: the wildcard matches what is not ours."""
    sid = stmt.get("Sid", "(no Sid)")
    resources = as_list(stmt.get("Resource", []))
    if _has_key(stmt, "aws:ResourceTag/"):
        return []

    def broad(action: str, resource: str) -> bool:
        if action.endswith(":TagResource") and resource == "*" and _has_key(stmt, "aws:RequestTag/"):
            return (
                False  # tags given to a create (KMS authorizes CreateKey's tags on "*"); see ci_policies.py
            )
        part = resource.split(":", 5)[-1]
        return _wildcard(resource) and (part.startswith(ACTS_ON.get(action, "")) or part.startswith("*"))

    return [
        f"{sid}: {a} on {resources} without an aws:ResourceTag condition"
        for a in DESTRUCTIVE
        if action_matches(stmt.get("Action", []), a) and any(broad(a, r) for r in resources)
    ]


def ownership_findings(stmt: Mapping[str, Any]) -> list[str]:
    """A destructive Allow whose aws:ResourceTag condition is not both our tags (the project tag alone matches a
    sibling cluster) or is a tag anyone can set."""
    if stmt.get("Effect") != "Allow":
        return []
    sid = stmt.get("Sid", "(no Sid)")
    acts = [a for a in DESTRUCTIVE if action_matches(stmt.get("Action", []), a)]
    keys = [k.lower() for op, b in (stmt.get("Condition") or {}).items() if op != "Null" for k in b]
    tags = [k for k in keys if k.startswith("aws:resourcetag/")]
    if not acts or not tags:
        return []
    ours = {f"aws:resourcetag/{TAG_PROJECT}", f"aws:resourcetag/{TAG_CLUSTER}"}
    forged = [k for k in tags if k.startswith(FORGEABLE_TAGS)]
    forged = forged if any(a.startswith("ec2:") for a in acts) else []  # EC2's tags are anyone's to set
    if forged:
        return [f"{sid}: {acts[0]} by {forged[0].split('/', 1)[1]}, a tag anyone allowed to tag can set"]
    if not forged and f"aws:resourcetag/{TAG_PROJECT}" in tags and not ours <= set(tags):
        return [f"{sid}: {acts[0]} by the project tag alone, which a sibling cluster's resources carry too"]
    return []


def subnet_findings(stmt: Mapping[str, Any]) -> list[str]:
    """A create into any subnet: the subnet must carry our tags. For the boundary: a bounded
    role's own policy (Karpenter's upstream one) may be broad, the boundary is the ceiling."""
    if stmt.get("Effect") != "Allow" or _has_key(stmt, "aws:ResourceTag/"):
        return []
    sid = stmt.get("Sid", "(no Sid)")
    into_any = [
        r for r in as_list(stmt.get("Resource", []))
        if r == "*" or resource_matches(r.split(":", 5)[-1], "subnet/subnet-0")
    ]  # fmt: skip
    acts = [a for a in SUBNET_CREATES if action_matches(stmt.get("Action", []), a)]
    return [f"{sid}: {acts[0]} into any subnet ({into_any[0]})"] if acts and into_any else []


def statement_findings(
    stmt: Mapping[str, Any], *, boundary: str, our_policies: Iterable[str] = ()
) -> list[str]:
    """What one Allow statement would let its holder do beyond its job ([] when nothing)."""
    if stmt.get("Effect") != "Allow":
        return []
    sid = stmt.get("Sid", "(no Sid)")
    if "NotAction" in stmt:
        return [f"{sid}: NotAction allows every action it does not name; list the actions"]
    actions, resources = stmt.get("Action", []), as_list(stmt.get("Resource", []))

    def grants(*names: str) -> list[str]:
        return [n for n in names if action_matches(actions, n)]

    on_star = "*" in resources
    out = []
    if on_star and action_matches(actions, "iam:AnyActionAtAll"):  # only `iam:*` or `*` match this
        out.append(f"{sid}: iam:* on '*' (every IAM action on every resource)")
    if on_star and grants("sts:AssumeRole"):
        out.append(f"{sid}: sts:AssumeRole on '*' (assume any role that trusts this account)")
    for action in grants(*BOUNDED_WRITES):
        if _condition_value(stmt, ("StringEquals", "ArnEquals"), "iam:PermissionsBoundary") != [boundary]:
            out.append(
                f"{sid}: {action} without the permissions boundary condition (iam:PermissionsBoundary = {boundary})"
            )
    if grants("iam:AttachRolePolicy", "iam:AttachUserPolicy") and not _condition_value(
        stmt, ("ArnEquals", "ArnLike", "StringEquals", "StringLike"), "iam:PolicyARN"
    ):
        out.append(f"{sid}: attaches any policy (no iam:PolicyARN condition)")
    if grants("iam:PassRole"):
        if any(r == "*" or r.endswith(":role/*") or r.endswith(":*") for r in resources):
            out.append(f"{sid}: iam:PassRole on {resources} (any role, not only ours)")
        if not _condition_value(stmt, ("StringEquals", "StringLike"), "iam:PassedToService"):
            out.append(f"{sid}: iam:PassRole to any service (no iam:PassedToService condition)")
    if grants("iam:UpdateAssumeRolePolicy"):
        out.append(f"{sid}: iam:UpdateAssumeRolePolicy (open a role to another principal)")
    if grants("iam:DeleteRolePermissionsBoundary"):
        out.append(f"{sid}: iam:DeleteRolePermissionsBoundary (lift a role's boundary)")
    for action in grants(*POLICY_VERSION_WRITES):
        foreign = [r for r in resources if not any(resource_matches(p, r) for p in our_policies)]
        if foreign:
            out.append(f"{sid}: {action} on {foreign}, not only our policies")
    out += tag_findings(stmt)
    for action in grants(*IAM_TAGGING):
        if any(_wildcard(r) for r in resources) and not (
            _has_key(stmt, "aws:TagKeys") or _has_key(stmt, "aws:ResourceTag/")
        ):
            out.append(f"{sid}: {action} on {resources} with any tag keys (no aws:TagKeys condition)")
    out += destructive_findings(stmt)
    return out


def policy_findings(
    policies: Iterable[Mapping[str, Any]],
    *,
    boundary: str,
    our_policies: Iterable[str] = (),
    bounded: bool = False,
) -> list[str]:
    """Every statement's findings, and the set's own: a set that can write IAM must deny lifting a
    boundary. An unbounded set (the nightly's) must also decide ownership by both our tags, never by a tag
    anyone can set; a bounded role's (`bounded`) may follow upstream's tags, its boundary asks for ours."""
    docs = list(policies)
    stmts = [s for p in docs for s in as_list(p["Statement"])]
    out = [f for s in stmts for f in statement_findings(s, boundary=boundary, our_policies=our_policies)]
    if not bounded:
        out += [f for s in stmts for f in ownership_findings(s)]
    writes_iam = any(s.get("Effect") == "Allow" and action_matches(s.get("Action", []), a)
                     for s in stmts for a in BOUNDED_WRITES)  # fmt: skip
    denies_lift = any(s.get("Effect") == "Deny" and action_matches(s.get("Action", []),
                      "iam:DeleteRolePermissionsBoundary") and "*" in as_list(s.get("Resource", []))
                      for s in stmts)  # fmt: skip
    if writes_iam and not denies_lift:
        out.append("policy set: writes IAM but does not deny iam:DeleteRolePermissionsBoundary on '*'")
    return out


# What a role under the boundary may do in IAM: Karpenter's instance profiles, pass our node role to EC2,
# ELB's service-linked role. Anything else that writes IAM or assumes a role is an escalation path.
SENSITIVE = (
    "iam:CreateRole",
    "iam:PutRolePolicy",
    "iam:AttachRolePolicy",
    "iam:UpdateAssumeRolePolicy",
    "iam:DeleteRolePermissionsBoundary",
    "iam:PutRolePermissionsBoundary",
    "iam:CreatePolicy",
    "iam:CreatePolicyVersion",
    "iam:SetDefaultPolicyVersion",
    "iam:CreateUser",
    "iam:CreateAccessKey",
    "iam:CreateLoginProfile",
    "iam:AddUserToGroup",
    "iam:TagRole",
    "sts:AssumeRole",
    "sts:AssumeRoleWithWebIdentity",
)


def boundary_findings(boundary: Mapping[str, Any]) -> list[str]:
    """A boundary caps every role under it: it must not allow IAM writes or role assumption."""
    out = []
    for s in as_list(boundary["Statement"]):
        if s.get("Effect") != "Allow":
            continue
        sid = s.get("Sid", "(no Sid)")
        if "NotAction" in s:
            out.append(f"{sid}: NotAction in a boundary allows every action it does not name")
            continue
        out += [
            f"{sid}: the boundary allows {a}" for a in SENSITIVE if action_matches(s.get("Action", []), a)
        ]
        if action_matches(s.get("Action", []), "iam:PassRole"):
            out += statement_findings({**s, "Action": "iam:PassRole"}, boundary="")
        out += tag_findings(s) + destructive_findings(s) + ownership_findings(s) + subnet_findings(s)
    return out
