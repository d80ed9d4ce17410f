"""Act 1 (cold start): holding worlds and their near-misses."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import strategies as st

from assertions.cold_start import ColdStartObs
from assertions.observed import Interval, NodeObs, PodObs
from tests.assertions.near_misses import LOOK_AFTER_S, Break
from tests.assertions.tables import T0

MARKER = "Test PASSED"
CARD = "GPU-5f0c6b2e-1c9e-4a8e-9d1e-3f1a2b3c4d5e"


@st.composite
def holding(draw: st.DrawFn) -> ColdStartObs:
    """From zero GPU nodes: a NodeClaim, its node launched, Ready, the pod on it succeeding; the act's clock
    has sub-second precision, Kubernetes' has whole seconds."""
    start = T0 + timedelta(microseconds=draw(st.integers(0, 999_999)))
    whole = start.replace(microsecond=0)
    claimed = whole + timedelta(seconds=draw(st.integers(0, 30)))
    launched = claimed + timedelta(seconds=draw(st.integers(0, 30)))
    created = launched + timedelta(seconds=draw(st.integers(0, 60)))
    ready = created + timedelta(seconds=draw(st.integers(0, 120)))
    began = ready + timedelta(seconds=draw(st.integers(0, 60)))
    ended = began + timedelta(seconds=draw(st.integers(1, 300)))
    pool = draw(st.sampled_from(["gpu-spot", "gpu-whole"]))
    node = NodeObs(
        draw(st.sampled_from(["gpu-a", "ip-10-0-1-7.ec2.internal"])),
        created,
        {"karpenter.sh/capacity-type": "spot", "karpenter.sh/nodepool": pool},
        allocatable_gpu=draw(st.integers(1, 8)),
        capacity_gpu=8,
        ready_at=ready,
        nodeclaim=f"{pool}-{draw(st.sampled_from(['x1', 'k2q']))}",
        nodeclaim_nodepool=pool,
        nodeclaim_launched_at=launched,
        nodeclaim_created=claimed,
        uid="uid-node",
    )
    marker = draw(st.sampled_from([MARKER, None]))
    pod = PodObs("cold-1", node.name, "Succeeded", Interval(began, ended), exit_code=0,
                 output=f"[Vector addition]\n{MARKER}\nDone" if marker else None, devices=(CARD,))  # fmt: skip
    return ColdStartObs(
        start, (), pool, node, pod, marker, observed_at=ended + timedelta(seconds=LOOK_AFTER_S)
    )


def node(o: ColdStartObs, **changes) -> ColdStartObs:
    return replace(o, node=replace(o.node, **changes))


def pod(o: ColdStartObs, **changes) -> ColdStartObs:
    return replace(o, pod=replace(o.pod, **changes))


def seconds(s: float) -> timedelta:
    return timedelta(seconds=s)


BREAKS = (
    Break("no_gpu_node_before_the_act", "count", "a GPU node existed at the start",
          lambda o: replace(o, gpu_nodes_at_start=("gpu-old",))),
    Break("node_is_new_and_launched_by_our_nodeclaim", "identity", "the node is one that existed at the start",
          lambda o: replace(o, gpu_nodes_at_start=(o.node.name,))),
    Break("node_is_new_and_launched_by_our_nodeclaim", "time", "the node was created a second before the act",
          lambda o: node(o, created=o.act_started.replace(microsecond=0) - seconds(1))),
    Break("node_is_new_and_launched_by_our_nodeclaim", "ownership", "the node and its NodeClaim of another NodePool",
          lambda o: node(o, nodeclaim_nodepool="system", labels={**o.node.labels, "karpenter.sh/nodepool": "system"})),
    Break("node_is_new_and_launched_by_our_nodeclaim", "ownership", "its NodeClaim of another NodePool, no pool label",
          lambda o: node(o, nodeclaim_nodepool="system",
                         labels={k: v for k, v in o.node.labels.items() if k != "karpenter.sh/nodepool"})),
    Break("node_is_new_and_launched_by_our_nodeclaim", "ownership", "no NodeClaim owns the node",
          lambda o: node(o, nodeclaim=None, nodeclaim_nodepool=None, nodeclaim_created=None, nodeclaim_launched_at=None)),
    Break("node_is_new_and_launched_by_our_nodeclaim", "time", "the NodeClaim predates the act",
          lambda o: node(o, nodeclaim_created=o.act_started - seconds(3600))),
    Break("node_is_new_and_launched_by_our_nodeclaim", "provenance", "the NodeClaim never reported Launched",
          lambda o: node(o, nodeclaim_launched_at=None)),
    Break("node_is_new_and_launched_by_our_nodeclaim", "time", "Ready before its NodeClaim launched",
          lambda o: node(o, nodeclaim_launched_at=o.node.ready_at + seconds(5))),
    Break("node_is_spot_with_a_gpu", "ownership", "on-demand capacity",
          lambda o: node(o, labels={**o.node.labels, "karpenter.sh/capacity-type": "on-demand"})),
    Break("node_is_spot_with_a_gpu", "count", "no allocatable GPU",
          lambda o: node(o, allocatable_gpu=0)),
    Break("node_became_ready", "provenance", "never Ready", lambda o: node(o, ready_at=None)),
    Break("node_became_ready", "time", "Ready before it was created",
          lambda o: node(o, ready_at=o.node.created - seconds(2))),
    Break("pod_ran_on_that_node_after_it_was_ready", "identity", "the pod ran on another node",
          lambda o: pod(o, node="gpu-other")),
    Break("pod_ran_on_that_node_after_it_was_ready", "provenance", "the pod was never observed",
          lambda o: replace(o, pod=None)),
    Break("pod_ran_on_that_node_after_it_was_ready", "time", "Running before its node was Ready",
          lambda o: pod(o, running=Interval(o.node.ready_at - seconds(1), o.pod.running.end))),
    Break("pod_ran_on_that_node_after_it_was_ready", "time", "ran on after its node was deleted",
          lambda o: replace(o, node=replace(o.node, deleted_at=o.pod.running.end - seconds(2)))),
    Break("pod_ran_on_that_node_after_it_was_ready", "provenance", "never seen Running",
          lambda o: pod(o, running=None)),
    Break("pod_succeeded_doing_gpu_work", "state", "the pod failed", lambda o: pod(o, phase="Failed", exit_code=1)),
    Break("pod_succeeded_doing_gpu_work", "state", "a CUDA/driver mismatch", lambda o: pod(o, exit_code=253)),
    Break("pod_succeeded_doing_gpu_work", "state", "Succeeded, exit 0, with a DisruptionTarget condition",
          lambda o: pod(o, disruption="DeletionByTaintManager")),
    Break("pod_succeeded_doing_gpu_work", "provenance", "succeeded without the marker",
          lambda o: replace(o, success_marker=MARKER, pod=replace(o.pod, output="Done"))),
    Break("pod_succeeded_doing_gpu_work", "count", "no device recorded for it", lambda o: pod(o, devices=())),
    Break("pod_succeeded_doing_gpu_work", "count", "two cards", lambda o: pod(o, devices=(CARD, CARD[:-1] + "f"))),
    Break("pod_succeeded_doing_gpu_work", "identity", "a time-sliced replica of a card, not the whole card",
          lambda o: pod(o, devices=(f"{CARD}::0",))),
    Break("pod_succeeded_doing_gpu_work", "identity", "a MIG slice, not a whole card",
          lambda o: pod(o, devices=("MIG-0b5e7c1a-2d3f-4e5a-8b9c-1d2e3f4a5b6c",))),
)  # fmt: skip
