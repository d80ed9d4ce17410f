"""No policy the stacks or the nightly role carry opens a privilege-escalation path; each rule of the check
fires on the near miss it exists for, with its precise sentence; and the role's real decisions hold on the
requests that matter (with the boundary, without it; ours, foreign; creating, retagging)."""

from __future__ import annotations

import json

import pytest

from gpu_finops.facts.config import Config
from gpu_finops.facts.names import TAG_CLUSTER, TAG_PROJECT
from iam.ci_boundary import boundary_policy
from iam.ci_policies import ATTACHABLE_MANAGED_POLICIES, AWS_MANAGED, boundary_arn, deploy_policies
from iam.iam_escalation import boundary_findings, policy_findings, statement_findings
from iam.iam_eval import Request, decide

ACCOUNT = "123456789012"
C = Config(allowed_accounts=(ACCOUNT,), github_repository="acme/gpu-finops")
BOUNDARY = boundary_arn(C, ACCOUNT)
OURS = [f"arn:aws:iam::{ACCOUNT}:policy/{C.cluster_name}-*"]
POLICIES = deploy_policies(C, ACCOUNT)
ROLE = f"arn:aws:iam::{ACCOUNT}:role/{C.cluster_name}-karpenter-node"
EC2 = f"arn:aws:ec2:{C.region}:{ACCOUNT}"
# both our tags: the project's alone is shared by a sibling cluster
TAGGED = {f"aws:ResourceTag/{TAG_PROJECT}": C.project, f"aws:ResourceTag/{TAG_CLUSTER}": C.cluster_name}
ASKED = {f"aws:RequestTag/{TAG_PROJECT}": C.project, f"aws:RequestTag/{TAG_CLUSTER}": C.cluster_name}


def test_the_nightly_roles_policies_open_no_escalation_path():
    assert policy_findings(POLICIES.values(), boundary=BOUNDARY, our_policies=OURS) == []


def test_the_boundary_allows_no_iam_write_or_role_assumption():
    assert boundary_findings(boundary_policy(C, ACCOUNT)) == []


def test_the_stacks_inline_policies_open_no_escalation_path(synthesized):
    docs = [
        json.loads(p["policy"])
        for p in synthesized.stack("cluster")["resource"]["aws_iam_role_policy"].values()
    ]
    assert len(docs) >= 3  # Karpenter's controller, FIS, the collector
    # bounded roles: Karpenter's upstream statements go by its cluster tag; the boundary asks for ours
    assert policy_findings(docs, boundary=BOUNDARY, our_policies=OURS, bounded=True) == []


def allow(action, resource="*", condition=None, sid="S"):
    s = {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource}
    return {**s, "Condition": condition} if condition else s


BOUND = {"StringEquals": {"iam:PermissionsBoundary": BOUNDARY}}
NEAR_MISSES = {
    "create role without boundary": (
        allow("iam:CreateRole", f"arn:aws:iam::{ACCOUNT}:role/gpu-finops-*"),
        f"S: iam:CreateRole without the permissions boundary condition (iam:PermissionsBoundary = {BOUNDARY})",
    ),
    "put policy under another boundary": (
        allow("iam:PutRolePolicy", "*", {"StringEquals": {"iam:PermissionsBoundary": "arn:aws:iam::1:policy/x"}}),
        "S: iam:PutRolePolicy without the permissions boundary condition",
    ),
    "wildcard that hides CreateRole": (allow("iam:Create*", ROLE), "S: iam:CreateRole without the permissions"),
    "attach without policy arn": (allow("iam:AttachRolePolicy", ROLE, BOUND), "S: attaches any policy (no iam:PolicyARN condition)"),
    "pass any role": (
        allow("iam:PassRole", "*", {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}),
        "S: iam:PassRole on ['*'] (any role, not only ours)",
    ),
    "pass to any service": (allow("iam:PassRole", ROLE), "S: iam:PassRole to any service (no iam:PassedToService condition)"),
    "create tags unconditioned": (
        allow("ec2:CreateTags", f"{EC2}:*", {"ForAllValues:StringEquals": {"aws:TagKeys": [TAG_PROJECT]}}),
        "S: ec2:CreateTags unconditioned (tag anything as ours, then delete it as ours)",
    ),
    "create tags any keys": (
        allow("ec2:CreateTags", f"{EC2}:*", {"StringEquals": {f"aws:ResourceTag/{TAG_PROJECT}": "gpu-finops"}}),
        "S: ec2:CreateTags with any tag keys (no aws:TagKeys condition)",
    ),
    "iam star": (allow("iam:*"), "S: iam:* on '*' (every IAM action on every resource)"),
    "everything": (allow("*"), "S: iam:* on '*' (every IAM action on every resource)"),
    "assume any role": (allow("sts:AssumeRole"), "S: sts:AssumeRole on '*' (assume any role that trusts this account)"),
    "trust change": (allow("iam:UpdateAssumeRolePolicy", ROLE), "S: iam:UpdateAssumeRolePolicy (open a role to another principal)"),
    "lift boundary": (allow("iam:DeleteRolePermissionsBoundary", ROLE), "S: iam:DeleteRolePermissionsBoundary (lift a role's boundary)"),
    "policy version not ours": (
        allow("iam:CreatePolicyVersion", f"arn:aws:iam::{ACCOUNT}:policy/*"),
        f"S: iam:CreatePolicyVersion on ['arn:aws:iam::{ACCOUNT}:policy/*'], not only our policies",
    ),
    "terminate by region only": (
        allow("ec2:TerminateInstances", "*", {"StringEquals": {"aws:RequestedRegion": "us-east-1"}}),
        "S: ec2:TerminateInstances on ['*'] without an aws:ResourceTag condition",
    ),
    "schedule key deletion by region only": (
        allow("kms:ScheduleKeyDeletion", "*", {"StringEquals": {"aws:RequestedRegion": "us-east-1"}}),
        "S: kms:ScheduleKeyDeletion on ['*'] without an aws:ResourceTag condition",
    ),
    "not action": ({"Sid": "S", "Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}, "S: NotAction allows every action"),
}  # fmt: skip


@pytest.mark.parametrize("case", NEAR_MISSES)
def test_each_rule_fires_on_its_near_miss(case):
    stmt, why = NEAR_MISSES[case]
    found = statement_findings(stmt, boundary=BOUNDARY, our_policies=OURS)
    assert any(f.startswith(why) for f in found), f"{case}: expected {why!r} in {found}"


@pytest.mark.parametrize(
    "stmt",
    [
        allow("iam:CreateRole", ROLE, BOUND),
        allow("iam:AttachRolePolicy", ROLE, {**BOUND, "ArnEquals": {"iam:PolicyARN": [AWS_MANAGED + "X"]}}),
        allow("iam:PassRole", ROLE, {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}),
        allow("ec2:CreateTags", f"{EC2}:*", {"StringEquals": {"ec2:CreateAction": "CreateVpc"}}),
        allow(
            "ec2:TerminateInstances",
            f"{EC2}:*",
            {"StringEquals": {f"aws:ResourceTag/{TAG_PROJECT}": "x", f"aws:ResourceTag/{TAG_CLUSTER}": "x"}},
        ),
        allow("iam:CreatePolicyVersion", OURS[0]),
        allow("ec2:DescribeInstances"),
    ],
)
def test_the_guarded_forms_pass(stmt):
    assert statement_findings(stmt, boundary=BOUNDARY, our_policies=OURS) == []


def test_a_set_that_writes_iam_must_deny_lifting_the_boundary():
    docs = [{"Statement": [allow("iam:CreateRole", ROLE, BOUND)]}]
    assert policy_findings(docs, boundary=BOUNDARY) == [
        "policy set: writes IAM but does not deny iam:DeleteRolePermissionsBoundary on '*'"
    ]
    deny = {"Sid": "D", "Effect": "Deny", "Action": "iam:DeleteRolePermissionsBoundary", "Resource": "*"}
    assert policy_findings([*docs, {"Statement": [deny]}], boundary=BOUNDARY) == []


@pytest.mark.parametrize(
    "stmt, why",
    [
        (allow("iam:*"), "S: the boundary allows iam:CreateRole"),
        (allow(["ec2:*", "sts:AssumeRole"]), "S: the boundary allows sts:AssumeRole"),
        (allow("iam:PassRole", "*"), "S: iam:PassRole on ['*'] (any role, not only ours)"),
    ],
)
def test_a_boundary_that_allows_escalation_is_caught(stmt, why):
    assert why in boundary_findings({"Statement": [stmt]})


# --- the role's real decisions ------------------------------------------------------------------------------
def d(action, resource="*", **context):
    return decide(POLICIES.values(), Request(action, resource, {"aws:RequestedRegion": C.region, **context}))


def test_roles_are_created_only_under_the_boundary():
    assert d("iam:CreateRole", ROLE, **{"iam:PermissionsBoundary": BOUNDARY}).allowed
    refused = d("iam:CreateRole", ROLE)
    assert not refused.allowed and "NewPermissionsOnlyUnderTheBoundary" in refused.reason
    assert not d(
        "iam:CreateRole", ROLE, **{"iam:PermissionsBoundary": AWS_MANAGED + "AdministratorAccess"}
    ).allowed
    assert not d(
        "iam:CreateRole", f"arn:aws:iam::{ACCOUNT}:role/someone-else", **{"iam:PermissionsBoundary": BOUNDARY}
    ).allowed


def test_teardown_may_read_foreign_tags_and_do_nothing_else_to_them():
    """Teardown reads every role's, policy's and profile's tags to decide what is ours (a name alone never
    decides): in a real account the others are foreign, and reading their tags must not be refused."""
    iam = f"arn:aws:iam::{ACCOUNT}"
    foreign_role, foreign_policy = f"{iam}:role/someone-elses-app", f"{iam}:policy/someone-elses-policy"
    assert d("iam:ListRoleTags", foreign_role).allowed
    assert d("iam:ListPolicyTags", foreign_policy).allowed
    assert d("iam:GetInstanceProfile", f"{iam}:instance-profile/someone-elses-profile").allowed
    foreign_cluster = f"arn:aws:eks:{C.region}:{ACCOUNT}:cluster/someone-elses"
    assert d("eks:DescribeCluster", foreign_cluster).allowed
    assert d("eks:ListNodegroups", foreign_cluster).allowed
    assert d(
        "eks:DescribeNodegroup", f"arn:aws:eks:{C.region}:{ACCOUNT}:nodegroup/someone-elses/ng/1"
    ).allowed
    regional = f"{C.region}:{ACCOUNT}"
    assert d("sqs:ListQueueTags", f"arn:aws:sqs:{regional}:someone-elses-queue").allowed
    assert d("events:ListTagsForResource", f"arn:aws:events:{regional}:rule/someone-elses-rule").allowed
    assert d("kms:ListResourceTags", f"arn:aws:kms:{regional}:key/1234abcd").allowed
    assert d("kms:DescribeKey", f"arn:aws:kms:{regional}:key/1234abcd").allowed
    for action, resource in [
        ("sqs:DeleteQueue", f"arn:aws:sqs:{regional}:someone-elses-queue"),
        ("events:DeleteRule", f"arn:aws:events:{regional}:rule/someone-elses-rule"),
        ("kms:ScheduleKeyDeletion", f"arn:aws:kms:{regional}:key/1234abcd"),
        ("eks:DeleteCluster", foreign_cluster),
        ("eks:DeleteNodegroup", f"arn:aws:eks:{C.region}:{ACCOUNT}:nodegroup/someone-elses/ng/1"),
        ("iam:DeleteRole", foreign_role),
        ("iam:TagRole", foreign_role),
        ("iam:DeletePolicy", foreign_policy),
        ("iam:ListRoleTags", "arn:aws:iam::999999999999:role/another-account"),
    ]:
        assert not d(action, resource).allowed, (action, resource)


def test_only_the_managed_policies_we_use_can_be_attached():
    ctx = {"iam:PermissionsBoundary": BOUNDARY}
    for p in ATTACHABLE_MANAGED_POLICIES:
        assert d("iam:AttachRolePolicy", ROLE, **ctx, **{"iam:PolicyARN": AWS_MANAGED + p}).allowed, p
    admin = d("iam:AttachRolePolicy", ROLE, **ctx, **{"iam:PolicyARN": AWS_MANAGED + "AdministratorAccess"})
    assert not admin.allowed
    assert not d(
        "iam:AttachRolePolicy", ROLE, **{"iam:PolicyARN": AWS_MANAGED + ATTACHABLE_MANAGED_POLICIES[0]}
    ).allowed


def test_the_boundary_can_never_be_lifted_or_rewritten():
    assert d("iam:DeleteRolePermissionsBoundary", ROLE).reason == "denied by NeverLiftABoundary"
    for action in ("iam:CreatePolicyVersion", "iam:DeletePolicy", "iam:SetDefaultPolicyVersion"):
        assert not d(action, BOUNDARY).allowed, action
    assert not d(
        "iam:AttachRolePolicy",
        f"arn:aws:iam::{ACCOUNT}:role/{C.ci_role}",
        **{
            "iam:PermissionsBoundary": BOUNDARY,
            "iam:PolicyARN": AWS_MANAGED + ATTACHABLE_MANAGED_POLICIES[0],
        },
    ).allowed


def test_ec2_deletes_need_our_tag_on_the_target():
    vpc = f"{EC2}:vpc/vpc-1"
    assert d("ec2:DeleteVpc", vpc, **TAGGED).allowed
    assert not d("ec2:DeleteVpc", vpc, **{f"aws:ResourceTag/{TAG_PROJECT}": "someone-else"}).allowed
    assert not d("ec2:DeleteVpc", vpc, **{f"aws:ResourceTag/{TAG_PROJECT}": C.project}).allowed  # F3
    assert not d("ec2:DeleteVpc", vpc).allowed
    instance = f"{EC2}:instance/i-1"
    assert d("ec2:TerminateInstances", instance, **TAGGED).allowed  # Karpenter's carry the nodeclass tags
    # a cluster tag anyone can set deletes nothing, the network least of all
    for tag in ({f"aws:ResourceTag/kubernetes.io/cluster/{C.cluster_name}": "owned"},
                {"aws:ResourceTag/kubernetes.io/cluster/other": "owned"}):  # fmt: skip
        assert not d("ec2:TerminateInstances", instance, **tag).allowed
        assert not d("ec2:DeleteVpc", vpc, **tag).allowed
    assert not d("ec2:DeleteVpc", f"arn:aws:ec2:eu-west-1:{ACCOUNT}:vpc/vpc-1", **TAGGED).allowed


def test_create_tags_only_on_create_with_our_keys_or_on_what_is_ours():
    sg = f"{EC2}:security-group/sg-1"
    creating = {"ec2:CreateAction": "CreateSecurityGroup", "aws:TagKeys": [TAG_PROJECT, TAG_CLUSTER, "Name"]}
    assert d("ec2:CreateTags", sg, **ASKED, **creating).allowed
    foreign_instance = f"{EC2}:instance/i-1"
    tag_it_ours = {**ASKED, "aws:TagKeys": [TAG_PROJECT, TAG_CLUSTER], "aws:ResourceTag/team": "payments"}
    assert not d("ec2:CreateTags", foreign_instance, **tag_it_ours).allowed  # the attack: claim, then delete
    assert not d("ec2:CreateTags", sg, **ASKED, **{**creating, "aws:TagKeys": ["Owner"]}).allowed
    peering = f"{EC2}:vpc-peering-connection/pcx-1"
    assert not d(
        "ec2:CreateTags",
        peering,
        **ASKED,
        **{"ec2:CreateAction": "CreateVpcPeeringConnection", "aws:TagKeys": [TAG_PROJECT]},
    ).allowed
    retag = {**TAGGED, "aws:TagKeys": ["Name"]}
    assert d("ec2:CreateTags", foreign_instance, **retag).allowed
    for key in (TAG_PROJECT, TAG_CLUSTER):
        assert not d("ec2:DeleteTags", foreign_instance, **{**retag, "aws:TagKeys": [key]}).allowed


def test_kms_keys_are_scheduled_for_deletion_only_when_ours():
    key = f"arn:aws:kms:{C.region}:{ACCOUNT}:key/k-1"
    for action in ("kms:ScheduleKeyDeletion", "kms:PutKeyPolicy"):
        assert d(action, key, **TAGGED).allowed, action
        assert not d(action, key).allowed, action
        assert not d(action, key, **{f"aws:ResourceTag/{TAG_PROJECT}": "someone-else"}).allowed, action
        assert not d(action, key, **{f"aws:ResourceTag/{TAG_PROJECT}": C.project}).allowed, action  # F3
    assert d("kms:CreateKey", **ASKED).allowed
    assert not d("kms:CreateKey").allowed  # an untagged key would be invisible to teardown


def test_pass_role_only_ours_only_to_their_services():
    assert d("iam:PassRole", ROLE, **{"iam:PassedToService": "ec2.amazonaws.com"}).allowed
    assert not d("iam:PassRole", ROLE, **{"iam:PassedToService": "lambda.amazonaws.com"}).allowed
    assert not d(
        "iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/admin", **{"iam:PassedToService": "ec2.amazonaws.com"}
    ).allowed


# No adoption remains: a foreign security group can never be tagged ours (tests/iam/test_iam_findings.py, 3).
