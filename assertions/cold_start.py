"""Act 1: Karpenter brings a spot GPU node from zero and the GPU workload runs to success on it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from assertions.decide import decide, seconds
from assertions.observed import NodeObs, PodObs
from assertions.verdict import Verdict
from facts.kube_keys import LABEL_CAPACITY_TYPE

CLAIM = "from zero GPU nodes, Karpenter launched a new spot GPU node and the GPU job ran to success on it"


@dataclass(frozen=True)
class ColdStartObs:
    act_started: datetime
    gpu_nodes_at_start: tuple[str, ...]
    nodepool: str
    node: NodeObs | None
    pod: PodObs | None
    success_marker: str | None  # what the workload prints only after real GPU work; None: the target
    # cannot show output (kwok-simulated pods have no logs), which the verdict's evidence says


def check_cold_start(o: ColdStartObs) -> Verdict:
    f: list[str] = []
    n, p = o.node, o.pod
    if o.gpu_nodes_at_start:
        f.append(
            f"precondition: {len(o.gpu_nodes_at_start)} GPU node(s) existed at the start: "
            f"{list(o.gpu_nodes_at_start)}"
        )
    if n is None:
        f.append("no GPU node was observed for the job")
    else:
        # Kubernetes timestamps have whole seconds: a node created in the act's first second reads as
        # created up to a second "before" it; one created in an earlier second really is older.
        if n.created < o.act_started.replace(microsecond=0):
            f.append(
                f"node {n.name} was created {n.created.isoformat()}, before the act began "
                f"{o.act_started.isoformat()}: not launched for this job"
            )
        if not n.nodeclaim or n.nodeclaim_nodepool != o.nodepool:
            f.append(
                f"node {n.name} is not owned by a NodeClaim of NodePool {o.nodepool} "
                f"(NodeClaim {n.nodeclaim}, NodePool {n.nodeclaim_nodepool})"
            )
        elif n.nodeclaim_created is None or n.nodeclaim_created < o.act_started.replace(microsecond=0):
            f.append(
                f"NodeClaim {n.nodeclaim} was created {n.nodeclaim_created and n.nodeclaim_created.isoformat()}, "
                f"before the act began {o.act_started.isoformat()}: Karpenter did not launch it for this job"
            )
        elif n.nodeclaim_launched_at is None:
            f.append(f"NodeClaim {n.nodeclaim} never reported Launched")
        capacity_type = n.labels.get(LABEL_CAPACITY_TYPE)
        if capacity_type != "spot":
            f.append(f"node {n.name} has karpenter.sh/capacity-type={capacity_type}, not spot")
        if n.allocatable_gpu < 1:
            f.append(f"node {n.name} has no allocatable nvidia.com/gpu ({n.allocatable_gpu})")
        if n.ready_at is None:
            f.append(f"node {n.name} never became Ready")
    if p is None:
        f.append("the job's pod was never observed")
    else:
        if n is not None and p.node != n.name:
            f.append(f"pod {p.name} ran on {p.node}, not on the new node {n.name}")
        # Kubernetes stores whole seconds: a start in the same second as Ready is consistent.
        if (
            n is not None
            and n.ready_at is not None
            and p.running is not None
            and p.running.start.replace(microsecond=0) < n.ready_at.replace(microsecond=0)
        ):
            f.append(
                f"pod {p.name} was Running at {p.running.start.isoformat()}, before its node {n.name} was "
                f"Ready at {n.ready_at.isoformat()}: the timestamps contradict each other"
            )
        if p.phase != "Succeeded" or p.exit_code not in (0, None):
            f.append(
                f"pod {p.name} ended {p.phase} (exit {p.exit_code}, reason {p.reason})"
                + (
                    ": a CUDA build that does not match the driver exits 253 without doing work"
                    if p.exit_code == 253
                    else ""
                )
            )
        if o.success_marker and p.phase == "Succeeded" and (not p.output or o.success_marker not in p.output):
            f.append(
                f"pod {p.name} succeeded but its output lacks {o.success_marker!r}: no proof of GPU work"
            )
    timings = {}
    if n is not None:
        timings = {
            "nodeclaim_launched_s": seconds(o.act_started, n.nodeclaim_launched_at),
            "node_ready_s": seconds(o.act_started, n.ready_at),
        }
    if p is not None and p.running is not None:
        timings.update(
            pod_running_s=seconds(o.act_started, p.running.start),
            pod_succeeded_s=seconds(o.act_started, p.running.end),
        )
    return decide(
        CLAIM,
        f"a new node of NodePool {o.nodepool}, capacity-type spot, with a GPU; the pod on it "
        f"Succeeded printing {o.success_marker!r}",
        f,
        f"node {n.name if n else '?'} (spot, {n.allocatable_gpu if n else 0} GPU) launched; pod "
        f"{p.name if p else '?'} Succeeded on it",
        node=n.name if n else None,
        pod=p.name if p else None,
        timings=timings,
    )
