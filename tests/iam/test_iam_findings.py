"""Three ways the nightly role could take over what is not ours, each as the attacker's requests decided
with iam/iam_eval.py against the nightly role's policies or the permissions boundary,
and as a rule of the escalation checker with its near miss:
1. tagging a foreign security group to adopt it, then changing or deleting it as ours;
2. name-prefix grants that also match a sibling cluster `<cluster>-b`; RunInstances into any subnet with any
   instance profile; TagRole making a foreign role "ours";
3. a boundary that allows ec2:*, autoscaling:*, elasticloadbalancing:* on every resource."""

from __future__ import annotations

import pytest

from gpu_finops.facts.config import Config
from gpu_finops.facts.names import TAG_CLUSTER, TAG_PROJECT
from iam.ci_boundary import boundary_policy
from iam.ci_policies import boundary_arn, deploy_policies
from iam.iam_escalation import boundary_findings, statement_findings
from iam.iam_eval import Request, decide

ACCOUNT = "123456789012"
C = Config(allowed_accounts=(ACCOUNT,), github_repository="acme/gpu-finops")
POLICIES = deploy_policies(C, ACCOUNT)
BOUNDARY = boundary_policy(C, ACCOUNT)
EC2 = f"arn:aws:ec2:{C.region}:{ACCOUNT}"
IAM = f"arn:aws:iam::{ACCOUNT}"
SIBLING = f"{C.cluster_name}-b"  # another team's cluster whose names start with ours


def d(policies, action, resource="*", **context):
    return decide(list(policies), Request(action, resource, {"aws:RequestedRegion": C.region, **context}))


# --- 3: adopting a foreign security group ---------------------------------------------------------------
ADOPT = {f"aws:RequestTag/{TAG_PROJECT}": C.project, "aws:TagKeys": [TAG_PROJECT, "Name"]}


def test_3_a_foreign_untagged_security_group_cannot_be_tagged_ours():
    foreign_sg = f"{EC2}:security-group/sg-0f0reign"
    decision = d(
        POLICIES.values(), "ec2:CreateTags", foreign_sg, **ADOPT, **{"ec2:Vpc": f"{EC2}:vpc/vpc-0ther"}
    )
    assert not decision.allowed, decision.reason
    # and so it never becomes changeable or deletable as ours: those need the project tag it cannot get
    for action in ("ec2:AuthorizeSecurityGroupIngress", "ec2:DeleteSecurityGroup"):
        assert not d(POLICIES.values(), action, foreign_sg).allowed, action


def test_3_no_statement_tags_a_security_group_it_did_not_create_unless_it_is_ours():
    """Tagging a group needs ec2:CreateAction (the call creates it) or our tag already on it."""
    for doc in POLICIES.values():
        for s in doc["Statement"]:
            if s["Effect"] == "Allow" and "ec2:CreateTags" in s["Action"]:
                cond = s.get("Condition", {})
                assert "ec2:CreateAction" in cond.get("StringEquals", {}) or any(
                    k.startswith("aws:ResourceTag/") for k in cond.get("StringEquals", {})
                ), s["Sid"]


def test_3_the_checker_names_an_adoption_by_missing_tag():
    old = {"Sid": "Adopt", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": f"{EC2}:security-group/*",
           "Condition": {"Null": {f"aws:ResourceTag/{TAG_PROJECT}": "true"},
                         "StringEquals": {f"aws:RequestTag/{TAG_PROJECT}": C.project},
                         "ForAllValues:StringEquals": {"aws:TagKeys": [TAG_PROJECT]}}}  # fmt: skip
    assert statement_findings(old, boundary=boundary_arn(C, ACCOUNT)) == [
        "Adopt: ec2:CreateTags onto whatever lacks our tag (Null aws:ResourceTag): adopts any untagged "
        "resource, foreign ones too, which is then changed or deleted as ours"
    ]


# --- 4: a sibling cluster's names ---------------------------------------------------------------------------
SIBLING_ROLE = f"{IAM}:role/{SIBLING}-karpenter-node"


@pytest.mark.parametrize(
    "action, resource, context",
    [
        ("iam:DeleteRole", SIBLING_ROLE, {}),
        ("iam:DetachRolePolicy", SIBLING_ROLE, {}),
        ("iam:DeleteRolePolicy", SIBLING_ROLE, {}),
        ("iam:TagRole", SIBLING_ROLE, {f"aws:RequestTag/{TAG_PROJECT}": C.project, "aws:TagKeys": [TAG_PROJECT]}),
        ("iam:PassRole", SIBLING_ROLE, {"iam:PassedToService": "ec2.amazonaws.com"}),
        ("iam:AddRoleToInstanceProfile", f"{IAM}:instance-profile/{SIBLING}-karpenter-node", {}),
        ("iam:DeleteInstanceProfile", f"{IAM}:instance-profile/{SIBLING}-karpenter-node", {}),
        ("sqs:DeleteQueue", f"arn:aws:sqs:{C.region}:{ACCOUNT}:{SIBLING}-interruption", {}),
        ("events:DeleteRule", f"arn:aws:events:{C.region}:{ACCOUNT}:rule/{SIBLING}-spot-interruption", {}),
        ("events:PutTargets", f"arn:aws:events:{C.region}:{ACCOUNT}:rule/{SIBLING}-rebalance", {}),
    ],
)  # fmt: skip
def test_4_nothing_of_a_sibling_cluster_is_ours(action, resource, context):
    decision = d(POLICIES.values(), action, resource, **context)
    assert not decision.allowed, f"{action} on {resource}: {decision.reason}"


def test_4_our_own_exact_names_still_work():
    ours = f"{IAM}:role/{C.karpenter_node_role}"
    assert d(POLICIES.values(), "iam:DeleteRole", ours).allowed
    assert d(POLICIES.values(), "iam:PassRole", ours, **{"iam:PassedToService": "ec2.amazonaws.com"}).allowed
    assert d(
        POLICIES.values(), "sqs:DeleteQueue", f"arn:aws:sqs:{C.region}:{ACCOUNT}:{C.interruption_queue}"
    ).allowed
    rule = f"arn:aws:events:{C.region}:{ACCOUNT}:rule/{C.cluster_name}-spot-interruption"
    assert d(POLICIES.values(), "events:DeleteRule", rule).allowed


def test_4_our_roles_are_tagged_only_with_our_keys():
    ours = f"{IAM}:role/{C.karpenter_node_role}"
    assert d(POLICIES.values(), "iam:TagRole", ours, **{"aws:TagKeys": [TAG_PROJECT]}).allowed
    assert not d(POLICIES.values(), "iam:TagRole", ours, **{"aws:TagKeys": ["Owner"]}).allowed


INSTANCE = {"ec2:InstanceType": C.gpu_instance_types[0]}


def test_4_instances_launch_only_into_our_subnets():
    ours = {f"aws:ResourceTag/{TAG_PROJECT}": C.project, f"aws:ResourceTag/{TAG_CLUSTER}": C.cluster_name}
    assert d(POLICIES.values(), "ec2:RunInstances", f"{EC2}:subnet/subnet-1", **ours).allowed
    assert not d(POLICIES.values(), "ec2:RunInstances", f"{EC2}:subnet/subnet-foreign").allowed
    assert not d(POLICIES.values(), "ec2:RunInstances", f"{EC2}:launch-template/lt-foreign").allowed


def test_4_instances_launch_only_with_our_instance_profiles():
    instance = f"{EC2}:instance/*"
    assert d(POLICIES.values(), "ec2:RunInstances", instance, **INSTANCE).allowed  # no profile: no role
    ours = {"ec2:InstanceProfile": f"{IAM}:instance-profile/{C.karpenter_node_role}"}
    assert d(POLICIES.values(), "ec2:RunInstances", instance, **INSTANCE, **ours).allowed
    foreign = {"ec2:InstanceProfile": f"{IAM}:instance-profile/{SIBLING}-karpenter-node"}
    assert not d(POLICIES.values(), "ec2:RunInstances", instance, **INSTANCE, **foreign).allowed


def test_4_the_checker_names_a_prefix_grant_that_deletes_a_siblings_role():
    prefix = {"Sid": "P", "Effect": "Allow", "Action": ["iam:DeleteRole", "iam:TagRole"],
              "Resource": f"{IAM}:role/{C.cluster_name}-*"}  # fmt: skip
    assert statement_findings(prefix, boundary=boundary_arn(C, ACCOUNT)) == [
        f"P: iam:TagRole on ['{IAM}:role/{C.cluster_name}-*'] with any tag keys (no aws:TagKeys condition)",
        f"P: iam:DeleteRole on ['{IAM}:role/{C.cluster_name}-*'] without an aws:ResourceTag condition",
    ]
    queue = {"Sid": "Q", "Effect": "Allow", "Action": "sqs:DeleteQueue",
             "Resource": f"arn:aws:sqs:{C.region}:{ACCOUNT}:{C.cluster_name}-*"}  # fmt: skip
    assert statement_findings(queue, boundary="")[0].startswith("Q: sqs:DeleteQueue on")
    exact = {**prefix, "Resource": f"{IAM}:role/{C.karpenter_node_role}"}
    assert statement_findings(exact, boundary="") == []


# --- 5: the boundary is scoped ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "action, resource",
    [
        ("ec2:TerminateInstances", f"{EC2}:instance/i-foreign"),
        ("ec2:DeleteVpc", f"{EC2}:vpc/vpc-foreign"),
        ("ec2:DeleteSecurityGroup", f"{EC2}:security-group/sg-foreign"),
        ("ec2:AuthorizeSecurityGroupIngress", f"{EC2}:security-group/sg-foreign"),
        ("ec2:DeleteNetworkInterface", f"{EC2}:network-interface/eni-foreign"),
        ("ec2:DeleteVolume", f"{EC2}:volume/vol-foreign"),
        ("ec2:DeleteLaunchTemplate", f"{EC2}:launch-template/lt-foreign"),
        ("autoscaling:DeleteAutoScalingGroup", f"arn:aws:autoscaling:{C.region}:{ACCOUNT}:autoScalingGroup:*"),
        ("autoscaling:UpdateAutoScalingGroup", f"arn:aws:autoscaling:{C.region}:{ACCOUNT}:autoScalingGroup:*"),
        ("elasticloadbalancing:DeleteLoadBalancer",
         f"arn:aws:elasticloadbalancing:{C.region}:{ACCOUNT}:loadbalancer/app/foreign/1"),
        ("sqs:DeleteMessage", f"arn:aws:sqs:{C.region}:{ACCOUNT}:someone-elses-queue"),
        ("dynamodb:PutItem", f"arn:aws:dynamodb:{C.region}:{ACCOUNT}:table/someone-elses-table"),
        ("kms:Decrypt", f"arn:aws:kms:{C.region}:{ACCOUNT}:key/foreign"),
    ],
)  # fmt: skip
def test_5_a_role_under_the_boundary_cannot_touch_what_is_not_ours(action, resource):
    """Whatever inline policy the nightly puts on a bounded role, the boundary refuses these."""
    decision = d([BOUNDARY], action, resource)
    assert not decision.allowed, f"{action} on {resource}: {decision.reason}"


def test_5_the_boundary_still_lets_our_roles_act_on_what_is_ours():
    # what Karpenter launches and the system nodes carry both our tags (EC2NodeClass tags, system-lt)
    ours = {f"aws:ResourceTag/{TAG_PROJECT}": C.project, f"aws:ResourceTag/{TAG_CLUSTER}": C.cluster_name}
    assert d([BOUNDARY], "ec2:TerminateInstances", f"{EC2}:instance/i-1", **ours).allowed
    # the VPC CNI's interfaces carry ours too (iam/vpc_cni.py); its own tag alone is not enough
    cni = {"aws:ResourceTag/cluster.k8s.amazonaws.com/name": C.cluster_name}
    assert d(
        [BOUNDARY], "ec2:DeleteNetworkInterface", f"{EC2}:network-interface/eni-1", **cni, **ours
    ).allowed
    assert not d([BOUNDARY], "ec2:DeleteNetworkInterface", f"{EC2}:network-interface/eni-1", **cni).allowed
    assert d([BOUNDARY], "ec2:SendSpotInstanceInterruptions", f"{EC2}:instance/i-1", **ours).allowed
    assert d([BOUNDARY], "ec2:DescribeInstances").allowed
    # a sibling cluster's tag is not ours, nor is a tag anyone can set
    sibling = {f"aws:ResourceTag/kubernetes.io/cluster/{SIBLING}": "owned"}
    assert not d([BOUNDARY], "ec2:TerminateInstances", f"{EC2}:instance/i-1", **sibling).allowed
    cluster_tag = {f"aws:ResourceTag/kubernetes.io/cluster/{C.cluster_name}": "owned"}
    assert not d([BOUNDARY], "ec2:TerminateInstances", f"{EC2}:instance/i-1", **cluster_tag).allowed
    # tagging what exists: only with keys that never make it ours, only on what is already ours
    retag = {**ours, "aws:TagKeys": ["Name"]}
    assert d([BOUNDARY], "ec2:CreateTags", f"{EC2}:instance/i-1", **retag).allowed
    claim = {"aws:TagKeys": [f"kubernetes.io/cluster/{C.cluster_name}"]}
    assert not d([BOUNDARY], "ec2:CreateTags", f"{EC2}:instance/i-foreign", **claim).allowed


def test_5_the_boundary_has_no_finding():
    assert boundary_findings(BOUNDARY) == []


@pytest.mark.parametrize(
    "stmt, why",
    [
        ({"Sid": "S", "Effect": "Allow", "Action": "ec2:*", "Resource": "*"},
         "S: ec2:TerminateInstances on ['*'] without an aws:ResourceTag condition"),
        ({"Sid": "S", "Effect": "Allow", "Action": "autoscaling:*", "Resource": "*"},
         "S: autoscaling:DeleteAutoScalingGroup on ['*'] without an aws:ResourceTag condition"),
        ({"Sid": "S", "Effect": "Allow", "Action": "elasticloadbalancing:*", "Resource": "*"},
         "S: elasticloadbalancing:DeleteLoadBalancer on ['*'] without an aws:ResourceTag condition"),
        ({"Sid": "S", "Effect": "Allow", "Action": "ec2:Delete*", "Resource": f"{EC2}:network-interface/*"},
         f"S: ec2:DeleteNetworkInterface on ['{EC2}:network-interface/*'] without an aws:ResourceTag condition"),
        ({"Sid": "S", "Effect": "Allow", "Action": "ec2:RevokeSecurityGroupIngress", "Resource": f"{EC2}:*",
          "Condition": {"StringEquals": {"aws:RequestedRegion": C.region}}},
         f"S: ec2:RevokeSecurityGroupIngress on ['{EC2}:*'] without an aws:ResourceTag condition"),
        ({"Sid": "S", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": f"{EC2}:*"},
         "S: ec2:CreateTags unconditioned (tag anything as ours, then delete it as ours)"),
    ],
)  # fmt: skip
def test_5_the_checker_catches_a_boundary_open_on_ec2_autoscaling_or_elb(stmt, why):
    assert why in boundary_findings({"Statement": [stmt]})
    scoped = {**stmt, "Condition": {"StringEquals": {f"aws:ResourceTag/{TAG_PROJECT}": C.project,
                                                     f"aws:ResourceTag/{TAG_CLUSTER}": C.cluster_name},
                                    "ForAllValues:StringEquals": {"aws:TagKeys": ["Name"]}}}  # fmt: skip
    assert boundary_findings({"Statement": [scoped]}) == []
