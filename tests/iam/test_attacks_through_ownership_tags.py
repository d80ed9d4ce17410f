"""Ways our ownership tags could hand someone else's resources to the nightly role, each as the attacker's
requests decided with iam/iam_eval.py against the nightly role's policies or the permissions boundary; and
what we need still allowed beside each:
- tagging any KMS key as ours, then deleting or re-policying it;
- a sibling cluster `<cluster>-b` shares the project tag: its VPC, subnets, instances, groups, keys,
   templates were "ours"; the boundary let bounded roles terminate its instances and use its keys;
- FIS: starting any template, tagging a foreign one ours and then changing it;
- the tags the cloud integrations set (anyone allowed to tag can set them) unlocked EC2 deletes;
- the boundary allowed interfaces and instances in any subnet."""

from __future__ import annotations

import pytest

from gpu_finops.facts.config import Config
from gpu_finops.facts.names import TAG_CLUSTER, TAG_PROJECT
from iam.ci_boundary import boundary_policy
from iam.ci_policies import deploy_policies
from iam.iam_eval import Request, decide

ACCOUNT = "123456789012"
C = Config(allowed_accounts=(ACCOUNT,), github_repository="acme/gpu-finops")
ROLE = list(deploy_policies(C, ACCOUNT).values())
BOUNDARY = [boundary_policy(C, ACCOUNT)]
R = C.region
EC2 = f"arn:aws:ec2:{R}:{ACCOUNT}"
KEY = f"arn:aws:kms:{R}:{ACCOUNT}:key/k-1"
TEMPLATE = f"arn:aws:fis:{R}:{ACCOUNT}:experiment-template/EXT1"
SIBLING = f"{C.cluster_name}-b"
OURS = {f"aws:ResourceTag/{TAG_PROJECT}": C.project, f"aws:ResourceTag/{TAG_CLUSTER}": C.cluster_name}
SIBLINGS = {f"aws:ResourceTag/{TAG_PROJECT}": C.project, f"aws:ResourceTag/{TAG_CLUSTER}": SIBLING}
ASK_OURS = {f"aws:RequestTag/{TAG_PROJECT}": C.project, f"aws:RequestTag/{TAG_CLUSTER}": C.cluster_name}


def d(policies, action, resource="*", **context):
    return decide(list(policies), Request(action, resource, {"aws:RequestedRegion": R, **context}))


def allowed(policies, action, resource="*", **context) -> bool:
    return d(policies, action, resource, **context).allowed


# --- KMS take-over by tagging --------------------------------------------------------------------------
@pytest.mark.parametrize("existing", [{}, {"aws:ResourceTag/team": "payments"}, SIBLINGS])
def test_no_existing_key_that_is_not_ours_can_be_tagged_or_untagged(existing):
    claim = {**ASK_OURS, "aws:TagKeys": [TAG_PROJECT, TAG_CLUSTER]}
    assert not allowed(ROLE, "kms:TagResource", KEY, **existing, **claim), d(
        ROLE, "kms:TagResource", KEY, **claim
    )
    assert not allowed(ROLE, "kms:UntagResource", KEY, **existing, **{"aws:TagKeys": [TAG_CLUSTER]})
    for action in ("kms:ScheduleKeyDeletion", "kms:PutKeyPolicy"):
        assert not allowed(ROLE, action, KEY, **existing), action


def test_our_keys_are_created_tagged_and_still_managed():
    claim = {**ASK_OURS, "aws:TagKeys": [TAG_PROJECT, TAG_CLUSTER]}
    # CreateKey's tags: kms:TagResource in a statement not restricted to particular keys (the request names none)
    assert allowed(ROLE, "kms:CreateKey", "*", **ASK_OURS)
    assert allowed(ROLE, "kms:TagResource", "*", **claim)
    assert not allowed(ROLE, "kms:TagResource", "*", **{**claim, "aws:TagKeys": ["Owner"]})
    assert not allowed(ROLE, "kms:CreateKey", "*", **{f"aws:RequestTag/{TAG_PROJECT}": C.project})
    assert allowed(ROLE, "kms:TagResource", KEY, **OURS, **claim)  # retag ours (Terraform's tag update)
    for action in ("kms:ScheduleKeyDeletion", "kms:PutKeyPolicy", "kms:CreateGrant"):
        assert allowed(ROLE, action, KEY, **OURS), action


# --- a sibling cluster shares the project tag ------------------------------------------------------------
@pytest.mark.parametrize(
    "action, resource",
    [
        ("ec2:DeleteVpc", f"{EC2}:vpc/vpc-b"),
        ("ec2:DeleteSubnet", f"{EC2}:subnet/subnet-b"),
        ("ec2:TerminateInstances", f"{EC2}:instance/i-b"),
        ("ec2:AuthorizeSecurityGroupIngress", f"{EC2}:security-group/sg-b"),
        ("ec2:DeleteSecurityGroup", f"{EC2}:security-group/sg-b"),
        ("kms:ScheduleKeyDeletion", KEY),
        ("kms:PutKeyPolicy", KEY),
        ("fis:DeleteExperimentTemplate", TEMPLATE),
        ("fis:UpdateExperimentTemplate", TEMPLATE),
        ("iam:DeletePolicy", f"arn:aws:iam::{ACCOUNT}:policy/{SIBLING}-x"),
    ],
)  # fmt: skip
def test_the_siblings_resources_are_not_ours(action, resource):
    assert not allowed(ROLE, action, resource, **SIBLINGS), d(ROLE, action, resource, **SIBLINGS).reason
    assert allowed(ROLE, action, resource, **OURS), action  # ours still


def test_the_role_puts_our_cluster_tag_only_on_what_it_creates():
    keys = {"aws:TagKeys": [TAG_PROJECT, TAG_CLUSTER]}
    creating = {"ec2:CreateAction": "CreateVpc", **ASK_OURS, **keys}
    assert allowed(ROLE, "ec2:CreateTags", f"{EC2}:vpc/vpc-new", **creating)
    assert allowed(ROLE, "ec2:CreateVpc", f"{EC2}:vpc/*", **ASK_OURS)
    # created without our cluster's value: refused (the project tag alone, or the sibling's value)
    only_project = {f"aws:RequestTag/{TAG_PROJECT}": C.project}
    assert not allowed(ROLE, "ec2:CreateVpc", f"{EC2}:vpc/*", **only_project)
    as_sibling = {**ASK_OURS, f"aws:RequestTag/{TAG_CLUSTER}": SIBLING}
    assert not allowed(ROLE, "ec2:CreateTags", f"{EC2}:vpc/vpc-new", **{**creating, **as_sibling})
    # the sibling's vpc, re-tagged with our cluster's value: refused (it is not ours to retag)
    assert not allowed(ROLE, "ec2:CreateTags", f"{EC2}:vpc/vpc-b", **SIBLINGS, **ASK_OURS, **keys)
    # nor can our cluster tag be taken off what is ours
    assert not allowed(ROLE, "ec2:DeleteTags", f"{EC2}:vpc/vpc-1", **OURS, **{"aws:TagKeys": [TAG_CLUSTER]})


@pytest.mark.parametrize(
    "action, resource",
    [
        ("ec2:TerminateInstances", f"{EC2}:instance/i-b"),
        ("ec2:SendSpotInstanceInterruptions", f"{EC2}:instance/i-b"),
        ("ec2:DeleteLaunchTemplate", f"{EC2}:launch-template/lt-b"),
        ("kms:Decrypt", KEY),
        ("kms:GenerateDataKey", KEY),
        ("kms:CreateGrant", KEY),
    ],
)  # fmt: skip
def test_bounded_roles_cannot_touch_the_siblings_instances_or_keys(action, resource):
    assert not allowed(BOUNDARY, action, resource, **SIBLINGS), d(
        BOUNDARY, action, resource, **SIBLINGS
    ).reason
    assert allowed(BOUNDARY, action, resource, **OURS), action


# --- FIS -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tags", [{}, {"aws:ResourceTag/team": "chaos"}, SIBLINGS])
def test_foreign_templates_cannot_be_started_tagged_or_changed(tags):
    for action in ("fis:StartExperiment", "fis:UpdateExperimentTemplate", "fis:DeleteExperimentTemplate",
                   "fis:UntagResource"):  # fmt: skip
        assert not allowed(ROLE, action, TEMPLATE, **tags), (action, d(ROLE, action, TEMPLATE, **tags).reason)
    claim = {**ASK_OURS, "aws:TagKeys": [TAG_PROJECT, TAG_CLUSTER]}
    assert not allowed(ROLE, "fis:TagResource", TEMPLATE, **tags, **claim)


def test_our_templates_are_created_tagged_and_started():
    assert allowed(
        ROLE, "fis:CreateExperimentTemplate", f"arn:aws:fis:{R}:{ACCOUNT}:experiment-template/*", **ASK_OURS
    )
    assert not allowed(
        ROLE, "fis:CreateExperimentTemplate", f"arn:aws:fis:{R}:{ACCOUNT}:experiment-template/*"
    )
    assert allowed(ROLE, "fis:StartExperiment", TEMPLATE, **OURS)
    assert allowed(ROLE, "fis:StartExperiment", f"arn:aws:fis:{R}:{ACCOUNT}:experiment/EXP1")
    assert allowed(ROLE, "fis:GetExperimentTemplate", TEMPLATE)


# --- tags anyone can set -------------------------------------------------------------------------------
INTEGRATION_TAGS = [
    {f"aws:ResourceTag/kubernetes.io/cluster/{C.cluster_name}": "owned"},
    {"aws:ResourceTag/eks:eks-cluster-name": C.cluster_name},
    {"aws:ResourceTag/karpenter.k8s.aws/cluster": C.cluster_name},
    {"aws:ResourceTag/cluster.k8s.amazonaws.com/name": C.cluster_name},
]


@pytest.mark.parametrize("tag", INTEGRATION_TAGS)
@pytest.mark.parametrize(
    "action, resource",
    [
        ("ec2:TerminateInstances", f"{EC2}:instance/i-x"),
        ("ec2:DeleteVolume", f"{EC2}:volume/vol-x"),
        ("ec2:DeleteLaunchTemplate", f"{EC2}:launch-template/lt-x"),
        ("ec2:DetachNetworkInterface", f"{EC2}:network-interface/eni-x"),
    ],
)  # fmt: skip
def test_integration_tags_unlock_no_ec2_delete(tag, action, resource):
    assert not allowed(ROLE, action, resource, **tag), d(ROLE, action, resource, **tag).reason


def test_a_vpc_cni_interface_goes_by_our_tags_never_by_the_cnis():
    eni = f"{EC2}:network-interface/eni-x"
    cni = INTEGRATION_TAGS[3]
    assert not allowed(ROLE, "ec2:DeleteNetworkInterface", eni, **cni)  # the CNI tag alone is no ownership
    assert allowed(ROLE, "ec2:DeleteNetworkInterface", eni, **cni, **OURS)  # as our CNI now tags them
    assert not allowed(ROLE, "ec2:DeleteNetworkInterface", eni, **INTEGRATION_TAGS[0])
    assert not allowed(ROLE, "ec2:DeleteVolume", f"{EC2}:volume/vol-x", **cni)
    for action, res in (("ec2:TerminateInstances", "instance/i-1"), ("ec2:DeleteVolume", "volume/v-1"),
                        ("ec2:DeleteLaunchTemplate", "launch-template/lt-1")):  # fmt: skip
        assert allowed(ROLE, action, f"{EC2}:{res}", **OURS), action  # Karpenter's carry the nodeclass's tags


# --- the boundary's creates only in our subnets -----------------------------------------------------------
@pytest.mark.parametrize("action", ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateNetworkInterface"])
def test_bounded_roles_create_only_in_our_subnets(action):
    theirs = f"{EC2}:subnet/subnet-theirs"
    for tags in ({}, SIBLINGS, {f"aws:ResourceTag/{TAG_PROJECT}": C.project}):
        assert not allowed(BOUNDARY, action, theirs, **tags), (action, tags)
    assert allowed(BOUNDARY, action, f"{EC2}:subnet/subnet-1", **OURS)
    assert allowed(BOUNDARY, action, f"{EC2}:network-interface/*")  # what the call creates


def test_adding_addresses_is_a_change_of_an_interface_that_exists():
    eni = f"{EC2}:network-interface/eni-theirs"
    assert not allowed(BOUNDARY, "ec2:AssignPrivateIpAddresses", eni)
    assert not allowed(BOUNDARY, "ec2:AssignPrivateIpAddresses", eni, **SIBLINGS)
    assert allowed(BOUNDARY, "ec2:AssignPrivateIpAddresses", eni, **OURS)  # a node's primary interface
    # the CNI's own tag is no longer enough: its interfaces carry ours (iam/vpc_cni.py)
    assert not allowed(BOUNDARY, "ec2:AssignPrivateIpAddresses", eni, **INTEGRATION_TAGS[3])
    assert allowed(BOUNDARY, "ec2:AssignPrivateIpAddresses", eni, **INTEGRATION_TAGS[3], **OURS)
    assert allowed(BOUNDARY, "ec2:UnassignPrivateIpAddresses", eni, **OURS)


# --- the security group EKS creates for our cluster -------------------------------------------------------
def test_the_role_adds_only_the_discovery_tag_to_the_group_eks_made_for_our_cluster():
    """EKS's group carries `aws:eks:cluster-name` (no caller can set an `aws:` tag) and none of ours: the stack's
    Ec2Tag adds `karpenter.sh/discovery` to it on the first run and removes it on destroy."""
    sg = f"{EC2}:security-group/sg-eks"
    eks_made = {
        "aws:ResourceTag/aws:eks:cluster-name": C.cluster_name,
        f"aws:ResourceTag/kubernetes.io/cluster/{C.cluster_name}": "owned",
    }
    discovery = {
        "aws:RequestTag/karpenter.sh/discovery": C.cluster_name,
        "aws:TagKeys": ["karpenter.sh/discovery"],
    }
    assert allowed(ROLE, "ec2:CreateTags", sg, **eks_made, **discovery), d(
        ROLE, "ec2:CreateTags", sg, **eks_made, **discovery
    )
    assert allowed(ROLE, "ec2:DeleteTags", sg, **eks_made, **{"aws:TagKeys": ["karpenter.sh/discovery"]})
    # no adoption: our tags stay out of reach, the group stays unchangeable, a sibling's EKS group untouched
    claim = {**ASK_OURS, "aws:TagKeys": [TAG_PROJECT, TAG_CLUSTER]}
    assert not allowed(ROLE, "ec2:CreateTags", sg, **eks_made, **claim)
    for action in ("ec2:AuthorizeSecurityGroupIngress", "ec2:DeleteSecurityGroup"):
        assert not allowed(ROLE, action, sg, **eks_made), action
    siblings = {"aws:ResourceTag/aws:eks:cluster-name": SIBLING}
    assert not allowed(ROLE, "ec2:CreateTags", sg, **siblings, **discovery)
    assert not allowed(
        ROLE,
        "ec2:CreateTags",
        sg,
        **{**eks_made, **discovery, "aws:RequestTag/karpenter.sh/discovery": SIBLING},
    )
    # any group the integrations' forgeable tags name is not it
    forged = {f"aws:ResourceTag/kubernetes.io/cluster/{C.cluster_name}": "owned"}
    assert not allowed(ROLE, "ec2:CreateTags", sg, **forged, **discovery)


# --- the escalation checker knows each class (a near miss passes) ------------------------------------------
P_TAG, C_TAG = f"aws:ResourceTag/{TAG_PROJECT}", f"aws:ResourceTag/{TAG_CLUSTER}"


@pytest.mark.parametrize(
    "stmt, why",
    [
        ({"Sid": "S", "Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": f"{EC2}:*",
          "Condition": {"StringEquals": {P_TAG: C.project}}},
         "S: ec2:TerminateInstances by the project tag alone, which a sibling cluster's resources carry too"),
        ({"Sid": "S", "Effect": "Allow", "Action": "ec2:DeleteVolume", "Resource": f"{EC2}:*",
          "Condition": {"StringEquals": {f"aws:ResourceTag/kubernetes.io/cluster/{C.cluster_name}": "owned"}}},
         f"S: ec2:DeleteVolume by kubernetes.io/cluster/{C.cluster_name}, a tag anyone allowed to tag can set"),
        ({"Sid": "S", "Effect": "Allow", "Action": "kms:TagResource", "Resource": KEY.replace("k-1", "*"),
          "Condition": {"StringEquals": {f"aws:RequestTag/{TAG_PROJECT}": C.project}}},
         f"S: kms:TagResource on ['{KEY.replace('k-1', '*')}'] without an aws:ResourceTag condition"),
        ({"Sid": "S", "Effect": "Allow", "Action": "fis:StartExperiment", "Resource": TEMPLATE.replace("EXT1", "*")},
         f"S: fis:StartExperiment on ['{TEMPLATE.replace('EXT1', '*')}'] without an aws:ResourceTag condition"),
        ({"Sid": "S", "Effect": "Allow", "Action": "ec2:CreateNetworkInterface", "Resource": f"{EC2}:*"},
         f"S: ec2:CreateNetworkInterface into any subnet ({EC2}:*)"),
    ],
)  # fmt: skip
def test_the_checker_names_each_attack_class_and_passes_its_fix(stmt, why):
    from iam.iam_escalation import boundary_findings

    assert why in boundary_findings({"Statement": [stmt]})
    fixed = {**stmt, "Condition": {"StringEquals": {P_TAG: C.project, C_TAG: C.cluster_name}}}
    assert boundary_findings({"Statement": [fixed]}) == []


def test_our_policies_and_boundary_have_none_of_these_findings():
    from iam.ci_policies import boundary_arn
    from iam.iam_escalation import boundary_findings, policy_findings

    assert boundary_findings(BOUNDARY[0]) == []
    assert policy_findings(ROLE, boundary=boundary_arn(C, ACCOUNT), our_policies=[]) == []
