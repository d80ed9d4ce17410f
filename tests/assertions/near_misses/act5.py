"""Act 5 (spot interruption): holding worlds and their near-misses."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import strategies as st

from assertions.interruption import InterruptionObs
from assertions.observed import EventObs, Interval, NodeObs, PodObs
from tests.assertions.near_misses import LOOK_AFTER_S, Break
from tests.assertions.tables import T0

SPOT = {"karpenter.sh/capacity-type": "spot", "karpenter.sh/nodepool": "gpu-spot"}


def at(s: float):
    return T0 + timedelta(seconds=s)


@st.composite
def holding(draw: st.DrawFn) -> InterruptionObs:
    warned = at(draw(st.integers(0, 10)) + draw(st.integers(0, 999_999)) / 1e6)
    w = (warned - T0).total_seconds()
    cordon = w + draw(st.integers(0, 100))
    deleted = w + draw(st.integers(0, 30))
    created = w + draw(st.integers(0, 60))
    ready = created + draw(st.integers(0, 60))
    again = ready + draw(st.integers(0, 60))
    old = NodeObs("gpu-int", at(-300), SPOT, allocatable_gpu=1, capacity_gpu=1, ready_at=at(-250),
                  nodeclaim="gpu-spot-int", nodeclaim_nodepool="gpu-spot", uid="uid-int")  # fmt: skip
    new = NodeObs(draw(st.sampled_from(["gpu-new", "ip-10-0-2-9.ec2.internal"])), at(created), SPOT,
                  allocatable_gpu=1, capacity_gpu=1, ready_at=at(ready), nodeclaim="gpu-spot-new",
                  nodeclaim_nodepool="gpu-spot", nodeclaim_created=at(created), nodeclaim_launched_at=at(created),
                  uid="uid-new")  # fmt: skip
    victim = PodObs("w-1", "gpu-int", "Failed", Interval(at(-200), at(cordon + 1)), evicted=True,
                    disruption="EvictionByEvictionAPI")  # fmt: skip
    events = (EventObs("SpotInterrupted", "NodeClaim", "gpu-spot-int", warned.replace(microsecond=0)),
              EventObs("TerminatingOnInterruption", "Node", "gpu-int", at(w + 1)))  # fmt: skip
    fis = draw(st.booleans())
    return InterruptionObs(warned, "fis" if fis else "sqs", "completed" if fis else "delivered", old, "gpu-spot",
                           events, at(cordon), at(deleted), (victim, PodObs("w-2", new.name, "Running",
                           Interval(at(again)))), new, observed_at=at(max(again, cordon + 1) + LOOK_AFTER_S))  # fmt: skip


def replacement(o: InterruptionObs, **changes) -> InterruptionObs:
    return replace(o, replacement=replace(o.replacement, **changes))


def the_old_node_again(o: InterruptionObs) -> InterruptionObs:
    """A look-alike replacement: the 'replacement' is the interrupted node under its old name, and the only
    pod seen is the evicted one."""
    return replace(o, replacement=replace(o.node, created=o.warned_at + timedelta(seconds=5),
                                          ready_at=o.warned_at + timedelta(seconds=6)), pods=o.pods[:1])  # fmt: skip


def seconds(s: float) -> timedelta:
    return timedelta(seconds=s)


BREAKS = (
    Break("interrupted_node_was_spot_and_up_at_the_warning", "state", "an on-demand node",
          lambda o: replace(o, node=replace(o.node, labels={**o.node.labels, "karpenter.sh/capacity-type": "on-demand"}))),
    Break("interrupted_node_was_spot_and_up_at_the_warning", "identity", "a namesake created after the warning",
          lambda o: replace(o, node=replace(o.node, created=o.warned_at + seconds(5)))),
    Break("interrupted_node_was_spot_and_up_at_the_warning", "time", "a node deleted before the warning",
          lambda o: replace(o, node=replace(o.node, deleted_at=o.warned_at - seconds(5)))),
    Break("warning_was_delivered", "state", "the FIS experiment failed",
          lambda o: replace(o, delivery="fis", delivery_state="failed", delivery_reason="no targets")),
    Break("karpenter_saw_the_interruption", "state", "no interruption events", lambda o: replace(o, events=())),
    Break("karpenter_saw_the_interruption", "time", "the events predate the warning",
          lambda o: replace(o, events=tuple(replace(e, at=o.warned_at - seconds(60)) for e in o.events))),
    Break("karpenter_saw_the_interruption", "ownership", "the events are about another node",
          lambda o: replace(o, events=tuple(replace(e, name=e.name + "-x") for e in o.events))),
    Break("karpenter_saw_the_interruption", "ownership", "the event kind does not match the name",
          lambda o: replace(o, events=tuple(replace(e, kind="Pod") for e in o.events))),
    Break("node_cordoned_within_the_notice", "provenance", "never cordoned", lambda o: replace(o, taint_seen_at=None)),
    Break("node_cordoned_within_the_notice", "time", "cordoned before the warning",
          lambda o: replace(o, taint_seen_at=o.warned_at - seconds(30))),
    Break("node_cordoned_within_the_notice", "time", "cordoned past the notice",
          lambda o: replace(o, taint_seen_at=o.warned_at + seconds(o.notice_seconds + 5))),
    Break("nodeclaim_of_the_node_deleted", "ownership", "not a Karpenter node",
          lambda o: replace(o, node=replace(o.node, nodeclaim=None, nodeclaim_nodepool=None))),
    Break("nodeclaim_of_the_node_deleted", "ownership", "the interrupted node is of another NodePool",
          lambda o: replace(o, node=replace(o.node, labels={**SPOT, "karpenter.sh/nodepool": "system"},
                                            nodeclaim_nodepool="system"))),
    Break("nodeclaim_of_the_node_deleted", "state", "the NodeClaim never deleted",
          lambda o: replace(o, nodeclaim_deleted_at=None)),
    Break("nodeclaim_of_the_node_deleted", "time", "deleted before the warning",
          lambda o: replace(o, nodeclaim_deleted_at=o.warned_at - seconds(10))),
    Break("workload_evicted_through_the_eviction_api", "count", "no pod on the node", lambda o: replace(o, pods=o.pods[1:])),
    Break("workload_evicted_through_the_eviction_api", "state", "deleted by PodGC",
          lambda o: replace(o, pods=(replace(o.pods[0], disruption="DeletionByPodGC"), *o.pods[1:]))),
    Break("workload_evicted_through_the_eviction_api", "provenance", "no DisruptionTarget",
          lambda o: replace(o, pods=(replace(o.pods[0], disruption=None, evicted=False), *o.pods[1:]))),
    Break("workload_evicted_through_the_eviction_api", "state", "taint manager, not the eviction API",
          lambda o: replace(o, pods=(replace(o.pods[0], disruption="DeletionByTaintManager"), *o.pods[1:]))),
    Break("replacement_is_a_new_spot_node_of_ours", "identity", "the interrupted node under its old name",
          the_old_node_again),
    Break("workload_ran_again_on_the_replacement", "identity", "only the evicted pod seen", the_old_node_again),
    Break("replacement_is_a_new_spot_node_of_ours", "identity", "the same node re-registered under a new name",
          lambda o: replacement(o, uid=o.node.uid, nodeclaim=o.node.nodeclaim)),
    Break("replacement_is_a_new_spot_node_of_ours", "provenance", "the replacement's uid not observed",
          lambda o: replacement(o, uid=None)),
    Break("replacement_is_a_new_spot_node_of_ours", "provenance", "no replacement", lambda o: replace(o, replacement=None)),
    Break("replacement_is_a_new_spot_node_of_ours", "time", "it existed before the warning",
          lambda o: replacement(o, created=o.warned_at - seconds(100))),
    Break("replacement_is_a_new_spot_node_of_ours", "ownership", "of another NodePool",
          lambda o: replacement(o, labels={**SPOT, "karpenter.sh/nodepool": "system"}, nodeclaim_nodepool="system")),
    Break("replacement_is_a_new_spot_node_of_ours", "ownership", "its NodeClaim of another NodePool, no pool label",
          lambda o: replacement(o, labels={"karpenter.sh/capacity-type": "spot"}, nodeclaim_nodepool="system")),
    Break("replacement_is_a_new_spot_node_of_ours", "ownership", "on-demand",
          lambda o: replacement(o, labels={**SPOT, "karpenter.sh/capacity-type": "on-demand"})),
    Break("replacement_is_a_new_spot_node_of_ours", "count", "no GPU", lambda o: replacement(o, allocatable_gpu=0)),
    Break("replacement_is_a_new_spot_node_of_ours", "state", "never Ready", lambda o: replacement(o, ready_at=None)),
    Break("replacement_is_a_new_spot_node_of_ours", "time", "Ready before created",
          lambda o: replacement(o, ready_at=o.replacement.created - seconds(5))),
    Break("workload_ran_again_on_the_replacement", "state", "nothing ran on the replacement",
          lambda o: replace(o, pods=o.pods[:1])),
    Break("workload_ran_again_on_the_replacement", "time", "Running before the replacement was Ready",
          lambda o: replace(o, pods=(o.pods[0], replace(o.pods[1], running=Interval(o.replacement.ready_at - seconds(2)))))),
)  # fmt: skip
