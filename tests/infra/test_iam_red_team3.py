"""Red-team findings of round 3 (issue 24, /work/redteam-safety/iam_leaks.py parts A-F), each as the attacker's
request decided with infra/iam_eval.py against the nightly role's policies or the permissions boundary, beside
the request the stacks make, which must stay allowed:
A the role could put any pattern on our rules and aim them at any target (another account's bus);
C the boundary let bounded roles read every SSM parameter and pull every private ECR image in the account;
D RunInstances could mount any snapshot and boot any image in the region."""

from __future__ import annotations

import pytest

from facts.config import Config
from infra.ci_boundary import boundary_policy
from infra.ci_policies_iam import deploy_policies
from infra.cluster_karpenter import INTERRUPTION_EVENTS
from infra.iam_eval import Request, decide

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
