"""The nightly role's EventBridge rule writes: what a rule of ours may match and where it may send it (a module
of its own for the 400-line rule; iam/ci_policies_iam.py puts them in the role's policies)."""

from __future__ import annotations

from typing import Any

from gpu_finops.facts.config import Config
from iam.ci_policies import _stmt

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


def event_rule_writes(c: Config, account: str) -> list[dict[str, Any]]:
    """Each of our rules only with the pattern the stack gives it (its `events:source` and
    `events:detail-type`, from INTERRUPTION_EVENTS; a pattern without them, a catch-all, names neither
    key and is refused), and targets only our queue (`events:TargetArn`, every target of the call): a rule
    of ours can never forward the account's events to another bus or account (red-team round 3, A)."""
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
