"""Act 5: a spot interruption warning reaches Karpenter through its interruption queue; Karpenter cordons
the node within the two-minute notice, evicts the workload gracefully, and the workload runs again on a
replacement spot GPU node of our NodePool.

| clause | identity | ownership | time order | count | provenance | target |
|---|---|---|---|---|---|---|
| warning_was_delivered | the FIS experiment or the SQS put | - (aimed at the node's instance by the act) | - | - | FIS: final state completed; SQS: delivered; any other sender or state fails | same clause, different senders |
| karpenter_saw_the_interruption | events about this node (kind Node) or its NodeClaim (kind NodeClaim) | the event's kind agrees with the name | at/after the warning (whole seconds) | each reason >= 1 | Kubernetes events | same |
| interrupted_node_was_spot_and_up_at_the_warning | the node warned, not a namesake | capacity type spot | created before the warning, not deleted before it | one | node labels and timestamps | same |
| node_cordoned_within_the_notice | the interrupted node | - | warning - 1 s <= taint <= warning + notice | - | the act's own poll of the taint | same |
| nodeclaim_of_the_node_deleted | the node's own NodeClaim | the node's NodePool label = its NodeClaim's = ours (unobserved fails) | deleted at/after the warning | - | the act's poll | same |
| workload_evicted_through_the_eviction_api | pods on the interrupted node | the workload's Job | running at the warning (started before it, not stopped before it; a pod that never ran fails) | >= 1, each evicted | DisruptionTarget reason, container end | same |
| replacement_is_a_new_spot_node_of_ours | another name, another uid, another NodeClaim, another instance (where both are known) | node label NodePool = its NodeClaim's = ours (unobserved fails) | node and its NodeClaim created at/after the warning; the claim created before the node, Launched (unobserved fails) after created, the node Ready after created and after Launched (the checks act 1 holds its node to) | one | node and NodeClaim status | same |
| workload_ran_again_on_the_replacement | a pod not among the evicted ones, not crashed | the workload's Job | Running at/after the warning and the replacement's Ready, before its deletion | >= 1 | container status | same |
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from assertions.clauses import Miss, before, compose, require_aware, require_not_after, seconds, stamp
from assertions.cold_start import claim_launched_its_node
from assertions.observed import EventObs, NodeObs, PodObs
from assertions.verdict import Verdict
from gpu_finops.facts.kube_keys import TAINT_DISRUPTED

CLAIM = (
    "the spot interruption warning reached Karpenter through its queue: it cordoned the node within the "
    "notice, evicted the workload gracefully, and the workload ran again on a replacement spot GPU node"
)
TAINT = TAINT_DISRUPTED
EVICTION_API = "EvictionByEvictionAPI"  # DisruptionTarget reason of a pod evicted through the eviction API
NOTICE_SECONDS = 120.0  # EC2's spot interruption notice
EVENTS = ("SpotInterrupted", "TerminatingOnInterruption")
DELIVERED = {"fis": "completed", "sqs": "delivered"}  # each way of sending the warning: its success state
CLOCK_SKEW_SECONDS = (
    1.0  # the act's poll and the warning's clock: a taint a second "early" is the same moment
)


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
    observed_at: datetime | None = None  # the act's last look: no time recorded may postdate it

    def __post_init__(self) -> None:
        require_aware(self)
        require_not_after(self, self.observed_at)


def gpus(n: NodeObs) -> int:
    return max(n.allocatable_gpu, n.allocatable_shared)


def victims(o: InterruptionObs) -> list[PodObs]:
    """The workload's pods that were on the interrupted node."""
    return [p for p in o.pods if p.node == o.node.name]


def ran_again(o: InterruptionObs) -> list[PodObs]:
    """The workload's pods, other than the evicted ones, Running on the replacement after the warning."""
    r = o.replacement
    if r is None:
        return []
    evicted = {p.name for p in victims(o)}
    return [
        p
        for p in o.pods
        if p.name not in evicted
        and p.node == r.name
        and p.healthy_run is not None
        and (r.deleted_at is None or before(p.running.start, r.deleted_at))
        and not before(p.running.start, o.warned_at)
        and (r.ready_at is None or not before(p.running.start, r.ready_at))
    ]


def warning_was_delivered(o: InterruptionObs) -> list[Miss]:
    if o.delivery in DELIVERED and o.delivery_state == DELIVERED[o.delivery]:
        return []
    return [
        Miss(
            f"the warning delivered ({', '.join(f'{k}: {v}' for k, v in DELIVERED.items())})",
            f"{ {'fis': 'the FIS experiment', 'sqs': 'the SQS put'}.get(o.delivery, repr(o.delivery)) } ended "
            f"{o.delivery_state!r}: {o.delivery_reason or 'no reason given'}",
        )
    ]


def interruption_events(o: InterruptionObs) -> list[EventObs]:
    """Events after the warning about the interrupted node (kind Node) or its NodeClaim (kind NodeClaim)."""
    n = o.node
    return [
        e
        for e in o.events
        if ((e.kind == "Node" and e.name == n.name) or (e.kind == "NodeClaim" and e.name == n.nodeclaim))
        and not before(e.at, o.warned_at)
    ]


def karpenter_saw_the_interruption(o: InterruptionObs) -> list[Miss]:
    n = o.node
    reasons = sorted({e.reason for e in interruption_events(o)})
    return [
        Miss(
            f"{needed} about node {n.name} or NodeClaim {n.nodeclaim} after the warning",
            f"no {needed} event on node {n.name} or NodeClaim {n.nodeclaim} after the warning (saw "
            f"{reasons or 'none'}): the warning did not come through Karpenter's interruption queue",
        )
        for needed in EVENTS
        if needed not in reasons
    ]


def node_cordoned_within_the_notice(o: InterruptionObs) -> list[Miss]:
    n = o.node
    want = f"{TAINT} on {n.name} within {o.notice_seconds:.0f}s of the warning"
    to_cordon = seconds(o.warned_at, o.taint_seen_at)
    if to_cordon is None:
        return [Miss(want, f"taint {TAINT} never observed on {n.name}: Karpenter did not cordon it")]
    if to_cordon < -CLOCK_SKEW_SECONDS:
        return [
            Miss(
                want,
                f"{n.name} carried {TAINT} {-to_cordon:.0f}s before the warning: not cordoned because of it",
            )
        ]
    if to_cordon > o.notice_seconds:
        return [
            Miss(
                want,
                f"{n.name} was cordoned {to_cordon:.0f}s after the warning, past the "
                f"{o.notice_seconds:.0f}s notice: the instance would have been reclaimed with the "
                "workload on it",
            )
        ]
    return []


def interrupted_node_was_spot_and_up_at_the_warning(o: InterruptionObs) -> list[Miss]:
    """The node the warning was about: a spot node (only spot capacity is interrupted), created before the
    warning and not gone before it (a namesake made later, or one already deleted, was not interrupted)."""
    n = o.node
    want = f"{n.name} a spot node, up at the warning {stamp(o.warned_at)}"
    misses = []
    if n.capacity_type != "spot":
        misses.append(Miss(want, f"{n.name} has karpenter.sh/capacity-type={n.capacity_type}: not spot"))
    if before(o.warned_at, n.created):
        misses.append(
            Miss(
                want,
                f"{n.name} was created {stamp(n.created)}, after the warning: a namesake, not the node warned",
            )
        )
    if n.deleted_at is not None and before(n.deleted_at, o.warned_at):
        misses.append(
            Miss(
                want,
                f"{n.name} was deleted {stamp(n.deleted_at)}, before the warning: nothing left to interrupt",
            )
        )
    return misses


def nodeclaim_of_the_node_deleted(o: InterruptionObs) -> list[Miss]:
    n = o.node
    want = f"the NodeClaim of {n.name}, of NodePool {o.nodepool}, deleted after the warning"
    if n.nodeclaim is None:
        return [Miss(want, f"node {n.name} had no NodeClaim: not a Karpenter node")]
    if n.nodepool != o.nodepool or n.nodeclaim_nodepool != o.nodepool:
        return [
            Miss(
                want,
                f"node {n.name} is of NodePool {n.nodepool} (its NodeClaim's: {n.nodeclaim_nodepool}), "
                f"not {o.nodepool}",
            )
        ]
    if o.nodeclaim_deleted_at is None:
        return [
            Miss(
                want, f"NodeClaim {n.nodeclaim} was never deleted: Karpenter did not act on the interruption"
            )
        ]
    if before(o.nodeclaim_deleted_at, o.warned_at):
        return [
            Miss(
                want,
                f"NodeClaim {n.nodeclaim} was deleted {stamp(o.nodeclaim_deleted_at)}, before the "
                f"warning {stamp(o.warned_at)}: not because of it",
            )
        ]
    return []


def workload_evicted_through_the_eviction_api(o: InterruptionObs) -> list[Miss]:
    n = o.node
    on_node = victims(o)
    want = f"the workload's pods on {n.name} evicted ({EVICTION_API})"
    if not on_node:
        return [
            Miss(want, f"no workload pod was seen on {n.name}: nothing to drain, so draining is unproven")
        ]
    misses = []
    for p in on_node:
        if p.running is None:
            misses.append(
                Miss(want, f"pod {p.name} never ran on {n.name}: there was no running workload to evict")
            )
            continue
        if before(o.warned_at, p.running.start):
            misses.append(
                Miss(
                    want + " after the warning",
                    f"pod {p.name} started {stamp(p.running.start)}, after the warning {stamp(o.warned_at)}: "
                    "it was not running when the node was warned",
                )
            )
            continue
        if p.running.end is not None and before(p.running.end, o.warned_at):
            misses.append(
                Miss(
                    want + " after the warning",
                    f"pod {p.name} stopped {stamp(p.running.end)}, before the warning {stamp(o.warned_at)}: "
                    "not evicted because of it",
                )
            )
            continue
        if p.disruption == EVICTION_API:
            continue
        if p.disruption == "DeletionByPodGC":
            why = f"pod {p.name} was deleted by PodGC after its node vanished, not evicted: no graceful drain"
        elif p.disruption is None:
            why = (
                f"pod {p.name} on the interrupted node ended {p.phase} without a DisruptionTarget "
                "condition: killed, not evicted"
            )
        else:
            why = f"pod {p.name} was disrupted by {p.disruption}, not evicted through the eviction API"
        misses.append(Miss(want, why))
    return misses


def replacement_is_a_new_spot_node_of_ours(o: InterruptionObs) -> list[Miss]:
    n, r = o.node, o.replacement
    want = f"a new Ready spot GPU node of NodePool {o.nodepool}, not {n.name}"
    if r is None:
        return [Miss(want, "no replacement GPU node was observed")]
    misses = []
    if r.name == n.name or r.uid is None or r.uid == n.uid or r.nodeclaim in (None, n.nodeclaim):
        misses.append(
            Miss(
                want,
                f"'replacement' {r.name} (uid {r.uid}, NodeClaim {r.nodeclaim}) is not another "
                f"node than the interrupted {n.name} (uid {n.uid}, NodeClaim {n.nodeclaim})",
            )
        )
    if r.instance_id is not None and r.instance_id == n.instance_id:
        misses.append(
            Miss(
                want,
                f"'replacement' {r.name} is the interrupted node's instance {r.instance_id} under a new name: "
                "the same machine, not a new one",
            )
        )
    if before(r.created, o.warned_at):
        misses.append(Miss(want, f"'replacement' {r.name} existed before the warning ({stamp(r.created)})"))
    if r.nodeclaim_created is None or before(r.nodeclaim_created, o.warned_at):
        misses.append(
            Miss(
                want,
                f"'replacement' {r.name}'s NodeClaim {r.nodeclaim} was created {stamp(r.nodeclaim_created)}, "
                f"not after the warning {stamp(o.warned_at)}: not launched to replace the interrupted node",
            )
        )
    misses += claim_launched_its_node(r, want)
    if r.nodepool != o.nodepool or r.nodeclaim_nodepool != o.nodepool:
        misses.append(
            Miss(
                want,
                f"replacement {r.name} is of NodePool {r.nodepool}, not {o.nodepool} (its NodeClaim's: "
                f"{r.nodeclaim_nodepool})",
            )
        )
    if r.capacity_type != "spot":
        misses.append(
            Miss(want, f"replacement {r.name} has karpenter.sh/capacity-type={r.capacity_type}, not spot")
        )
    if gpus(r) < 1:
        misses.append(Miss(want, f"replacement {r.name} advertises no GPU"))
    if r.ready_at is None:
        misses.append(Miss(want, f"replacement {r.name} never became Ready"))
    elif before(r.ready_at, r.created):
        misses.append(
            Miss(
                want,
                f"replacement {r.name} was Ready {stamp(r.ready_at)} before it was created "
                f"{stamp(r.created)}",
            )
        )
    return misses


def workload_ran_again_on_the_replacement(o: InterruptionObs) -> list[Miss]:
    r = o.replacement
    if r is None or ran_again(o):
        return []  # no replacement: replacement_is_a_new_spot_node_of_ours says so
    seen = [(p.name, p.node, stamp(p.running.start) if p.running else None) for p in o.pods]
    return [
        Miss(
            f"a pod other than the evicted ones Running on {r.name} after the warning and its Ready",
            f"the workload never ran again on the replacement {r.name} (pods seen: {seen})",
        )
    ]


CLAUSES = (
    warning_was_delivered,
    karpenter_saw_the_interruption,
    interrupted_node_was_spot_and_up_at_the_warning,
    node_cordoned_within_the_notice,
    nodeclaim_of_the_node_deleted,
    workload_evicted_through_the_eviction_api,
    replacement_is_a_new_spot_node_of_ours,
    workload_ran_again_on_the_replacement,
)


def timings(o: InterruptionObs) -> dict[str, float | None]:
    again = ran_again(o)
    r = o.replacement
    return {
        "warning_to_cordon_s": seconds(o.warned_at, o.taint_seen_at),
        "warning_to_nodeclaim_deleted_s": seconds(o.warned_at, o.nodeclaim_deleted_at),
        "warning_to_replacement_ready_s": seconds(o.warned_at, r.ready_at) if r else None,
        "warning_to_workload_running_s": (
            seconds(o.warned_at, min(p.running.start for p in again if p.running)) if again else None
        ),
    }


def check_interruption(o: InterruptionObs) -> Verdict:
    """Act 5's claim: every clause of `CLAUSES` over what the act watched after the warning."""
    n, r = o.node, o.replacement
    times = timings(o)
    return compose(
        CLAIM,
        f"{' and '.join(EVENTS)} events; {TAINT} within {o.notice_seconds:.0f}s of the warning; the NodeClaim "
        f"deleted; the workload's pods evicted ({EVICTION_API}); a new Ready spot GPU node of NodePool "
        f"{o.nodepool} running the workload again",
        CLAUSES,
        o,
        lambda: (
            f"{n.name} cordoned {times['warning_to_cordon_s']:.0f}s after the warning, pods evicted, workload "
            f"running on {r.name if r else '?'}"
        ),
        node=n.name,
        nodeclaim=n.nodeclaim,
        delivery=f"{o.delivery}: {o.delivery_state}",
        events=sorted({e.reason for e in interruption_events(o)}),
        victims={p.name: p.disruption for p in victims(o)},
        replacement=r.name if r else None,
        timings=times,
    )
