"""Act 5: an FIS spot interruption makes Karpenter cordon and drain through the interruption queue."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from assertions.decide import decide, seconds
from assertions.observed import EventObs, NodeObs, PodObs
from assertions.verdict import Verdict
from facts.kube_keys import TAINT_DISRUPTED

CLAIM = "Karpenter received the spot interruption, tainted and drained the node, pods moved, a replacement came up"
TAINT = TAINT_DISRUPTED


@dataclass(frozen=True)
class InterruptionObs:
    experiment_started: datetime
    node: NodeObs
    events: tuple[EventObs, ...]
    taint_seen_at: datetime | None
    pods: tuple[PodObs, ...]  # the workload's pods, before and after
    replacement: NodeObs | None


def check_interruption(o: InterruptionObs) -> Verdict:
    f: list[str] = []
    mine = [e for e in o.events if e.name in (o.node.name, o.node.nodeclaim) and e.at >= o.experiment_started]
    reasons = {e.reason for e in mine}
    for needed in ("SpotInterrupted", "TerminatingOnInterruption"):
        if needed not in reasons:
            f.append(
                f"no {needed} event on node {o.node.name} or NodeClaim {o.node.nodeclaim} after the "
                f"experiment started (saw {sorted(reasons) or 'none'}): the signal did not come through the "
                "interruption queue"
            )
    if o.taint_seen_at is None:
        f.append(f"taint {TAINT} never observed on {o.node.name}: not cordoned by Karpenter")
    victims = [p for p in o.pods if p.node == o.node.name]
    if not victims:
        f.append(f"no workload pod ran on {o.node.name}: nothing to drain, so draining is unproven")
    killed = [p.name for p in victims if not p.evicted]
    if killed:
        f.append(f"pods on the interrupted node ended without eviction (hard kill): {killed}")
    moved = [p for p in o.pods if p.node not in (None, o.node.name) and p.running is not None]
    if victims and not moved:
        f.append("no pod was rescheduled and Running on another node")
    if o.replacement is None or o.replacement.ready_at is None:
        f.append("no replacement node became Ready")
    elif o.replacement.created < o.experiment_started:
        f.append(f"'replacement' {o.replacement.name} existed before the experiment")
    to_taint = seconds(o.experiment_started, o.taint_seen_at)
    return decide(
        CLAIM,
        "SpotInterrupted and TerminatingOnInterruption events, the karpenter.sh/disrupted taint, "
        "pods evicted and Running elsewhere, a new Ready node",
        f,
        f"tainted {to_taint:.0f}s after the experiment started" if to_taint is not None else "tainted",
        node=o.node.name,
        events=sorted(reasons),
        seconds_to_taint=to_taint,
        replacement=o.replacement.name if o.replacement else None,
    )
