"""The VPC CNI's tag `cluster.k8s.amazonaws.com/name=<cluster>` is no
proof of ownership. Anyone allowed to tag can put it on an interface (and any VPC CNI named `<cluster>`
sets it), so neither the nightly's role nor a role under the boundary may change or delete an interface
by it; the CNI's interfaces carry our tags instead, from the add-on's ADDITIONAL_ENI_TAGS, and go by
those. Each request decided with iam/iam_eval.py, with the precise reason (parliament lints the same
documents, synthesized, in test_iam_lint.py); teardown's side is in tests/teardown/test_cni_tag.py."""

from __future__ import annotations

import json

import pytest

from gpu_finops.facts.config import Config, load_config
from gpu_finops.facts.names import TAG_CLUSTER, TAG_PROJECT
from iam.ci_boundary import CNI_ENI_CHANGES, RETAG_KEYS, boundary_policy
from iam.ci_policies import deploy_policies
from iam.iam_escalation import boundary_findings, ownership_findings
from iam.iam_eval import Request, decide
from iam.vpc_cni import ADDITIONAL_ENI_TAGS, CNI_TAG_KEYS, additional_eni_tags, configuration_values
from infra.objects.karpenter import ec2nodeclass
from tests.infra.test_stacks import resources

ACCOUNT = "123456789012"
C = Config(allowed_accounts=(ACCOUNT,), github_repository="acme/gpu-finops")
R = C.region
ENI = f"arn:aws:ec2:{R}:{ACCOUNT}:network-interface/eni-0f0e"
SUBNET = f"arn:aws:ec2:{R}:{ACCOUNT}:subnet/subnet-1"
ROLE = list(deploy_policies(C, ACCOUNT).values())
BOUNDARY = [boundary_policy(C, ACCOUNT)]
CNI_TAG = "cluster.k8s.amazonaws.com/name"
# Someone else's interface, given only the CNI's tags for our cluster (as anyone allowed to tag can).
FOREIGN = {f"aws:ResourceTag/{CNI_TAG}": C.cluster_name, "aws:ResourceTag/eks:eni:owner": "amazon-vpc-cni",
           "aws:ResourceTag/node.k8s.amazonaws.com/instance_id": "i-0abc"}  # fmt: skip
# An interface as our CNI now creates it: its own tags and ours (ADDITIONAL_ENI_TAGS).
OURS = {**FOREIGN, **{f"aws:ResourceTag/{k}": v for k, v in additional_eni_tags(C).items()}}


def d(policies, action, resource, **context):
    return decide(policies, Request(action, resource, {"aws:RequestedRegion": R, **context}))


def test_the_cni_gives_its_interfaces_exactly_our_tags():
    assert additional_eni_tags(C) == {TAG_PROJECT: C.project, TAG_CLUSTER: C.cluster_name}
    env = json.loads(configuration_values(C))["env"]
    assert set(env) == {ADDITIONAL_ENI_TAGS}
    assert isinstance(env[ADDITIONAL_ENI_TAGS], str)  # the add-on schema's type: JSON text, not an object
    assert json.loads(env[ADDITIONAL_ENI_TAGS]) == C.tags


def test_a_tag_key_the_cni_would_drop_is_refused_not_silently_lost():
    bad = type("Cfg", (), {"tags": {"team.k8s.amazonaws.com/owner": "x"}})()  # only .tags is read
    with pytest.raises(ValueError, match=r"the VPC CNI drops tag keys containing 'k8s.amazonaws.com'"):
        additional_eni_tags(bad)


# --- the nightly's role ------------------------------------------------------------------------------------
def test_the_role_cannot_delete_a_foreign_interface_carrying_only_the_cnis_tag():
    decision = d(ROLE, "ec2:DeleteNetworkInterface", ENI, **FOREIGN)
    assert not decision.allowed
    assert decision.reason == (
        f"ec2:DeleteNetworkInterface on {ENI}: implicit deny (statements "
        "['ChangeOrDeleteOnlyWhatIsTaggedOurs'] name it but their resource or condition does not match)"
    )


def test_the_role_deletes_an_interface_as_our_cni_now_makes_it():
    decision = d(ROLE, "ec2:DeleteNetworkInterface", ENI, **OURS)
    assert decision.allowed and decision.reason == "allowed by ChangeOrDeleteOnlyWhatIsTaggedOurs"


def test_no_statement_of_the_role_or_the_boundary_goes_by_the_cnis_tag():
    by_it = [
        stmt["Sid"]
        for policy in [*ROLE, *BOUNDARY]
        for stmt in policy["Statement"]
        for block in (stmt.get("Condition") or {}).values()
        for key in block
        if key.lower() == f"aws:resourcetag/{CNI_TAG}"
    ]
    assert by_it == []


# --- the boundary ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("action", CNI_ENI_CHANGES)
def test_within_the_boundary_no_cni_change_of_a_foreign_interface_by_the_cnis_tag(action):
    decision = d(BOUNDARY, action, ENI, **FOREIGN)
    assert not decision.allowed
    assert decision.reason == (
        f"{action} on {ENI}: implicit deny (statements ['Ec2ChangeOnlyWhatIsOurs'] name it but their "
        "resource or condition does not match)"
    )


@pytest.mark.parametrize("action", CNI_ENI_CHANGES)
def test_within_the_boundary_the_cni_changes_its_own_interfaces(action):
    decision = d(BOUNDARY, action, ENI, **OURS)
    assert decision.allowed and decision.reason == "allowed by Ec2ChangeOnlyWhatIsOurs"


def test_within_the_boundary_the_cni_creates_its_interfaces_with_our_tags_in_our_subnet():
    ask = {f"aws:RequestTag/{k}": v for k, v in additional_eni_tags(C).items()}
    subnet = {f"aws:ResourceTag/{k}": v for k, v in C.tags.items()}
    assert d(BOUNDARY, "ec2:CreateNetworkInterface", SUBNET, **subnet).allowed
    assert d(BOUNDARY, "ec2:CreateNetworkInterface", ENI, **ask).allowed
    keys = {"aws:TagKeys": [*C.tags, *CNI_TAG_KEYS], "ec2:CreateAction": "CreateNetworkInterface"}
    assert d(BOUNDARY, "ec2:CreateTags", ENI, **ask, **keys).allowed


def test_within_the_boundary_the_cni_tags_only_interfaces_that_are_ours():
    """TagENI adds the CNI's keys to every attached interface: allowed on ours (our primary interfaces
    carry our tags), refused on a foreign one carrying the CNI's tag."""
    keys = {"aws:TagKeys": list(CNI_TAG_KEYS)}
    assert set(CNI_TAG_KEYS) <= set(RETAG_KEYS)
    assert d(BOUNDARY, "ec2:CreateTags", ENI, **OURS, **keys).reason == "allowed by Ec2RetagWhatIsOurs"
    foreign = d(BOUNDARY, "ec2:CreateTags", ENI, **FOREIGN, **keys)
    assert not foreign.allowed and foreign.reason == (
        f"ec2:CreateTags on {ENI}: implicit deny (statements ['Ec2TagWhileCreating', 'Ec2RetagWhatIsOurs'] "
        "name it but their resource or condition does not match)"
    )


def test_the_checker_refuses_a_statement_that_goes_by_the_cnis_tag():
    """Were a CNI exception written again, the escalation checker names it (it exempted interfaces)."""
    stmt = {"Sid": "S", "Effect": "Allow", "Action": "ec2:DeleteNetworkInterface",
            "Resource": f"arn:aws:ec2:{R}:{ACCOUNT}:network-interface/*",
            "Condition": {"StringEquals": {f"aws:ResourceTag/{CNI_TAG}": C.cluster_name}}}  # fmt: skip
    assert ownership_findings(stmt) == [
        f"S: ec2:DeleteNetworkInterface by {CNI_TAG}, a tag anyone allowed to tag can set"
    ]
    assert boundary_findings(BOUNDARY[0]) == []


# --- the synthesized stacks ------------------------------------------------------------------------------
def test_the_synthesized_add_on_tags_as_the_launches_do(synthesized):
    """The vpc-cni add-on carries the configuration; our tags there are exactly those on the primary
    interfaces (system-lt, the EC2NodeClass), so the CNI's TagENI never adds one of ours to them."""
    c = load_config()
    stack = synthesized.stack("cluster")
    addons = resources(stack, "aws_eks_addon")
    configured = {a["addon_name"]: a.get("configuration_values") for a in addons.values()}
    assert {k for k, v in configured.items() if v} == {"vpc-cni"}, configured
    tags = json.loads(json.loads(configured["vpc-cni"])["env"][ADDITIONAL_ENI_TAGS])
    lt = resources(stack, "aws_launch_template")["system-lt"]
    primary = {s["resource_type"]: s["tags"] for s in lt["tag_specifications"]}["network-interface"]
    assert tags == primary == ec2nodeclass(c, "role")["spec"]["tags"] == c.tags
