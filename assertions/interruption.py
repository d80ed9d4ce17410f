"""Act 5: a spot interruption warning reaches Karpenter through its interruption queue; Karpenter cordons
the node within the two-minute notice, evicts the workload gracefully, and the workload runs again on a
replacement spot GPU node of our NodePool."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from assertions.decide import decide, seconds
from assertions.observed import EventObs, NodeObs, PodObs
from assertions.verdict import Verdict
from facts.kube_keys import TAINT_DISRUPTED

CLAIM = (
    "the spot interruption warning reached Karpenter through its queue: it cordoned the node within the "
    "notice, evicted the workload gracefully, and the workload ran again on a replacement spot GPU node"
)
TAINT = TAINT_DISRUPTED
EVICTION_API = "EvictionByEvictionAPI"  # DisruptionTarget reason of a pod evicted through the eviction API
NOTICE_SECONDS = 120.0  # EC2's spot interruption notice
EVENTS = ("SpotInterrupted", "TerminatingOnInterruption")


@dataclass(frozen=True)
class InterruptionObs:
    warned_at: datetime  # the warning was put on the queue (local) or the FIS experiment started (AWS)
    delivery: str  # "sqs" or "fis"
    delivery_state: str  # FIS: the experiment's final status; SQS: "delivered"
    node: NodeObs  # the interrupted node, as last seen
    nodepool: str
    events: tuple[EventObs, ...]
    taint_seen_at: datetime | None
    nodeclaim_deleted_at: datetime | None
    pods: tuple[PodObs, ...]  # every pod of the workload seen while watching, evicted ones included
    replacement: NodeObs | None
    delivery_reason: str = ""
    notice_seconds: float = NOTICE_SECONDS


def _gpus(n: NodeObs) -> int:
    return max(n.allocatable_gpu, n.allocatable_shared)


def check_interruption(o: InterruptionObs) -> Verdict:
    f: list[str] = []
    n = o.node
    if o.delivery == "fis" and o.delivery_state != "completed":
        f.append(f"the FIS experiment ended {o.delivery_state!r}: {o.delivery_reason or 'no reason given'}")
    since = o.warned_at.replace(microsecond=0)  # event times have whole seconds
    mine = [e for e in o.events if e.name in (n.name, n.nodeclaim) and e.at >= since]
    reasons = sorted({e.reason for e in mine})
    for needed in EVENTS:
        if needed not in reasons:
            f.append(
                f"no {needed} event on node {n.name} or NodeClaim {n.nodeclaim} after the warning (saw "
                f"{reasons or 'none'}): the warning did not come through Karpenter's interruption queue"
            )
    to_cordon = seconds(o.warned_at, o.taint_seen_at)
    if o.taint_seen_at is None:
        f.append(f"taint {TAINT} never observed on {n.name}: Karpenter did not cordon it")
    elif to_cordon is not None and to_cordon < -1:
        f.append(f"{n.name} carried {TAINT} {-to_cordon:.0f}s before the warning: not cordoned because of it")
    elif to_cordon is not None and to_cordon > o.notice_seconds:
        f.append(
            f"{n.name} was cordoned {to_cordon:.0f}s after the warning, past the {o.notice_seconds:.0f}s notice: "
            "the instance would have been reclaimed with the workload on it"
        )
    if n.nodeclaim is None:
        f.append(f"node {n.name} had no NodeClaim: not a Karpenter node")
    elif o.nodeclaim_deleted_at is None:
        f.append(f"NodeClaim {n.nodeclaim} was never deleted: Karpenter did not act on the interruption")
    victims = [p for p in o.pods if p.node == n.name]
    if not victims:
        f.append(f"no workload pod was seen on {n.name}: nothing to drain, so draining is unproven")
    for p in victims:
        if p.disruption == EVICTION_API:
            continue
        if p.disruption == "DeletionByPodGC":
            f.append(
                f"pod {p.name} was deleted by PodGC after its node vanished, not evicted: no graceful drain"
            )
        elif p.disruption is None:
            f.append(
                f"pod {p.name} on the interrupted node ended {p.phase} without a DisruptionTarget condition: "
                "killed, not evicted"
            )
        else:
            f.append(f"pod {p.name} was disrupted by {p.disruption}, not evicted through the eviction API")
    r = o.replacement
    again = [p for p in o.pods if r is not None and p.node == r.name and p.running is not None]
    if r is None:
        f.append("no replacement GPU node was observed")
    else:
        if r.created < since:
            f.append(f"'replacement' {r.name} existed before the warning ({r.created.isoformat()})")
        if r.nodepool != o.nodepool:
            f.append(f"replacement {r.name} is of NodePool {r.nodepool}, not {o.nodepool}")
        if r.capacity_type != "spot":
            f.append(f"replacement {r.name} has karpenter.sh/capacity-type={r.capacity_type}, not spot")
        if _gpus(r) < 1:
            f.append(f"replacement {r.name} advertises no GPU")
        if r.ready_at is None:
            f.append(f"replacement {r.name} never became Ready")
        if not again:
            f.append(f"the workload never ran again on the replacement {r.name}")
    timings = {
        "warning_to_cordon_s": to_cordon,
        "warning_to_nodeclaim_deleted_s": seconds(o.warned_at, o.nodeclaim_deleted_at),
        "warning_to_replacement_ready_s": seconds(o.warned_at, r.ready_at) if r else None,
        "warning_to_workload_running_s": (
            seconds(o.warned_at, min(p.running.start for p in again if p.running)) if again else None
        ),
    }
    return decide(
        CLAIM,
        f"{' and '.join(EVENTS)} events; {TAINT} within {o.notice_seconds:.0f}s of the warning; the NodeClaim "
        f"deleted; the workload's pods evicted ({EVICTION_API}); a new Ready spot GPU node of NodePool "
        f"{o.nodepool} running the workload again",
        f,
        f"{n.name} cordoned {to_cordon:.0f}s after the warning, pods evicted, workload running on "
        f"{r.name if r else '?'}"
        if to_cordon is not None
        else "not cordoned",
        node=n.name,
        nodeclaim=n.nodeclaim,
        delivery=f"{o.delivery}: {o.delivery_state}",
        events=reasons,
        victims={p.name: p.disruption for p in victims},
        replacement=r.name if r else None,
        timings=timings,
    )
