"""Attacks on the nightly role's event rules, queue, parameter and image reads, each as the attacker's
request decided with iam/iam_eval.py against the nightly role's policies or the permissions boundary, beside
the request the stacks make, which must stay allowed:
A the role could put any pattern on our rules and aim them at any target (another account's bus);
C the boundary let bounded roles read every SSM parameter and pull every private ECR image in the account;
D RunInstances could mount any snapshot and boot any image in the region."""

from __future__ import annotations

import pytest

from gpu_finops.facts.config import Config
from iam.ci_boundary import boundary_policy
from iam.ci_policies import INTERRUPTION_EVENTS, deploy_policies
from iam.iam_eval import Request, decide

ACCOUNT = "123456789012"
C = Config(allowed_accounts=(ACCOUNT,), github_repository="acme/gpu-finops")
ROLE = list(deploy_policies(C, ACCOUNT).values())
BOUNDARY = [boundary_policy(C, ACCOUNT)]
R = C.region
RULE = f"arn:aws:events:{R}:{ACCOUNT}:rule/{C.cluster_name}"
QUEUE = f"arn:aws:sqs:{R}:{ACCOUNT}:{C.interruption_queue}"
FOREIGN_BUS = f"arn:aws:events:{R}:666666666666:event-bus/default"


def d(policies, action, resource="*", **context):
    return decide(list(policies), Request(action, resource, {"aws:RequestedRegion": R, **context}))


def pattern_keys(source, detail_type) -> dict:
    keys = {"events:source": source, "events:detail-type": detail_type}
    return {k: v for k, v in keys.items() if v is not None}


# --- A: our rules keep their patterns and their one target ----------------------------------------------------
@pytest.mark.parametrize("rule, pattern", INTERRUPTION_EVENTS.items())
def test_a_each_rule_is_put_with_the_pattern_the_stack_gives_it(rule, pattern):
    ctx = pattern_keys(pattern["source"][0], pattern["detail-type"][0])
    decision = d(ROLE, "events:PutRule", f"{RULE}-{rule}", **ctx)
    assert decision.allowed and "OnlyWithItsPattern" in decision.reason, decision.reason
    assert d(ROLE, "events:PutTargets", f"{RULE}-{rule}", **{"events:TargetArn": [QUEUE]}).allowed


@pytest.mark.parametrize(
    "source, detail_type",
    [
        (None, None),  # a catch-all rule: every event of the account
        ("aws.ec2", None),  # every EC2 event
        ("aws.iam", "AWS API Call via CloudTrail"),
        ("aws.health", "EC2 Spot Instance Interruption Warning"),  # another rule's type on the health rule
    ],
)
def test_a_a_rule_of_ours_cannot_match_more_than_its_pattern(source, detail_type):
    decision = d(ROLE, "events:PutRule", f"{RULE}-health", **pattern_keys(source, detail_type))
    assert not decision.allowed
    assert "implicit deny" in decision.reason and "PutRuleHealthOnlyWithItsPattern" in decision.reason


@pytest.mark.parametrize(
    "targets", [None, [FOREIGN_BUS], [QUEUE, FOREIGN_BUS], [f"arn:aws:sqs:{R}:{ACCOUNT}:other-queue"]]
)
def test_a_a_rule_of_ours_targets_only_our_queue(targets):
    ctx = {} if targets is None else {"events:TargetArn": targets}
    decision = d(ROLE, "events:PutTargets", f"{RULE}-health", **ctx)
    assert not decision.allowed
    assert "implicit deny" in decision.reason and "PutTargetsOnlyOurQueue" in decision.reason


def test_a_the_other_rule_calls_are_unconditioned_on_our_rules_only():
    assert d(ROLE, "events:DeleteRule", f"{RULE}-health").allowed
    assert not d(ROLE, "events:DeleteRule", f"arn:aws:events:{R}:{ACCOUNT}:rule/other").allowed


# --- C: bounded roles read only AWS's public parameters and ours, pull only ours and other accounts' ----------
SSM = f"arn:aws:ssm:{R}:{ACCOUNT}:parameter"
ECR = f"arn:aws:ecr:{R}:{ACCOUNT}:repository"
EKS_REGISTRY = f"arn:aws:ecr:{R}:602401143452:repository/eks/pause"


@pytest.mark.parametrize("action", ["ssm:GetParameter", "ssm:GetParameters"])
@pytest.mark.parametrize("parameter", [f"{SSM}/payments/prod/db-password", f"{SSM}/other-team/api-key"])
def test_c_bounded_roles_read_no_other_teams_parameter(action, parameter):
    decision = d(BOUNDARY, action, parameter)
    assert not decision.allowed
    assert "implicit deny" in decision.reason and "ReadOnlyAwsPublicAndOurParameters" in decision.reason


def test_c_karpenter_still_resolves_the_ami_alias_from_aws_public_parameters():
    public = f"arn:aws:ssm:{R}::parameter/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/nvidia"
    assert d(BOUNDARY, "ssm:GetParameter", public).allowed


@pytest.mark.parametrize("action", ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"])
def test_c_bounded_roles_pull_no_other_repository_of_our_account(action):
    decision = d(BOUNDARY, action, f"{ECR}/other-team/private-app")
    assert not decision.allowed
    assert "PullOnlyOurRepositories" in decision.reason and "PullFromOtherAccounts" in decision.reason
    assert d(BOUNDARY, action, f"{ECR}/{C.collector_repository}").allowed  # the collector image
    assert d(BOUNDARY, action, EKS_REGISTRY).allowed  # EKS's add-ons and pause, from AWS's account
    assert not d(BOUNDARY, action, EKS_REGISTRY, **{"aws:RequestedRegion": "eu-west-1"}).allowed


def test_c_the_role_enters_only_our_node_role_and_the_admins_in_the_cluster():
    cluster = f"arn:aws:eks:{R}:{ACCOUNT}:cluster/{C.cluster_name}"
    node_role = f"arn:aws:iam::{ACCOUNT}:role/{C.karpenter_node_role}"
    assert d(ROLE, "eks:CreateAccessEntry", cluster, **{"eks:principalArn": node_role}).allowed
    for outsider in ("arn:aws:iam::666666666666:role/attacker", f"arn:aws:iam::{ACCOUNT}:role/other-team"):
        decision = d(ROLE, "eks:CreateAccessEntry", cluster, **{"eks:principalArn": outsider})
        assert not decision.allowed and "AccessEntriesOnlyForOurNodesAndAdmins" in decision.reason
    admin = "arn:aws:iam::123456789012:role/platform-admin"
    with_admin = list(deploy_policies(Config(allowed_accounts=(ACCOUNT,), admin_principal_arns=(admin,)),
                                      ACCOUNT).values())  # fmt: skip
    assert d(with_admin, "eks:CreateAccessEntry", cluster, **{"eks:principalArn": admin}).allowed


# --- D: launches boot Amazon's images only, and mount no one else's snapshot ----------------------------------
IMAGE = f"arn:aws:ec2:{R}::image/ami-0eks0al2023"
SNAPSHOT = f"arn:aws:ec2:{R}::snapshot/snap-0other0team0db0"


@pytest.mark.parametrize("who, policies, sid", [("role", ROLE, "LaunchOnlyAmazonsImages"),
                                                ("boundary", BOUNDARY, "Ec2CreatesOnlyFromAmazonsImages")])  # fmt: skip
@pytest.mark.parametrize("resource", [IMAGE, SNAPSHOT])
@pytest.mark.parametrize("owner", [None, ACCOUNT, "666666666666", "aws-marketplace"])
def test_d_no_image_or_snapshot_but_amazons(who, policies, sid, resource, owner):
    ctx = {} if owner is None else {"ec2:Owner": owner}
    decision = d(policies, "ec2:RunInstances", resource, **ctx)
    assert not decision.allowed, who
    assert "implicit deny" in decision.reason and sid in decision.reason


@pytest.mark.parametrize("policies", [ROLE, BOUNDARY])
@pytest.mark.parametrize("resource", [IMAGE, f"arn:aws:ec2:{R}::snapshot/snap-0eks0root"])
def test_d_the_eks_optimized_image_and_its_snapshot_still_launch(policies, resource):
    assert d(policies, "ec2:RunInstances", resource, **{"ec2:Owner": "amazon"}).allowed


# --- B: the queue's policy is set at creation; the role cannot rewrite it ------------------------------------
def test_b_the_role_cannot_rewrite_our_queues_policy():
    decision = d(ROLE, "sqs:SetQueueAttributes", QUEUE)
    assert not decision.allowed and "no statement allows it" in decision.reason
    assert d(ROLE, "sqs:CreateQueue", QUEUE).allowed and d(ROLE, "sqs:GetQueueAttributes", QUEUE).allowed


def test_b_the_stack_sets_the_queue_policy_in_create_queue(synthesized):
    cluster = synthesized.stack("cluster")["resource"]
    assert "aws_sqs_queue_policy" not in cluster, "a separate queue policy needs sqs:SetQueueAttributes"
    (queue,) = cluster["aws_sqs_queue"].values()
    assert "EventBridgeDelivers" in queue["policy"] and C.interruption_queue in queue["policy"]
