"""Act 1: Karpenter brings a spot GPU node from zero and the GPU workload runs to success on it.

| clause | identity | ownership | time order | count | provenance | target |
|---|---|---|---|---|---|---|
| no_gpu_node_before_the_act | - (a count of none) | any GPU node counts, ours or not | at the act's start | exactly zero | observed list | same |
| node_is_new_and_launched_by_our_nodeclaim | node not among those at start; its NodeClaim names it | NodeClaim's NodePool = the act's = the node's label | NodeClaim created >= act start, Launched >= created, node created >= claim created, launched <= node Ready; an EC2 instance's node (instance id) registered no earlier than Launched (the kwok provider creates its node inside Create, before Launched) | one node | NodeClaim status, observed | same |
| node_is_spot_with_a_gpu | the node above | capacity-type label | - (labels do not change) | >= 1 allocatable GPU, allocatable <= capacity | node status | same (kwok: simulated GPUs) |
| node_became_ready | the node above | - | created <= Ready | - | Ready's lastTransitionTime | same |
| pod_ran_on_that_node_after_it_was_ready | pod bound to the node's name, while that node existed (not deleted before the pod started or ended) | - | Ready <= Running start <= end <= the node's deletion | one pod | container status | same |
| pod_succeeded_doing_gpu_work | the pod above; the one whole card it was given | - | - | exactly one device, a whole card (not a replica or a MIG slice) | phase, exit code 0 and finish time observed (unobserved fails), not disrupted (no DisruptionTarget, eviction or platform reason); the device the kubelet gave it (local: the simulated kubelet's pod-resources; AWS: the UUID it printed); the marker in its log | AWS: marker required; local: no logs, marker None, said in evidence |

Identity of the node is by name plus "created after the act began, by a NodeClaim created after it": a
node re-created under an old name is new by those timestamps, which is the claim. Job pods carry
generated names, never reused, so a pod's name is its identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from assertions.clauses import Miss, before, compose, require_aware, require_not_after, seconds, stamp
from assertions.observed import NodeObs, PodObs
from assertions.verdict import Verdict
from gpu_finops.model import holding, nodeclaim

CLAIM = "from zero GPU nodes, Karpenter launched a new spot GPU node and the GPU job ran to success on it"
CUDA_MISMATCH_EXIT = 253  # a CUDA build that does not match the driver exits with it without doing work


@dataclass(frozen=True)
class ColdStartObs:
    act_started: datetime
    gpu_nodes_at_start: tuple[str, ...]
    nodepool: str
    node: NodeObs | None
    pod: PodObs | None
    success_marker: str | None  # what the workload prints only after real GPU work; None: the target
    # cannot show output (kwok-simulated pods have no logs), which the verdict's evidence says
    observed_at: datetime | None = None  # the act's last look: no time recorded may postdate it

    def __post_init__(self) -> None:
        require_aware(self)
        require_not_after(self, self.observed_at)
        if not isinstance(self.gpu_nodes_at_start, tuple):
            raise ValueError(
                f"ColdStartObs.gpu_nodes_at_start {self.gpu_nodes_at_start!r}: the GPU nodes listed when the act "
                "began, a tuple (empty when there were none); a list never read cannot show zero"
            )
        if self.success_marker is not None and not self.success_marker.strip():
            raise ValueError(
                f"ColdStartObs.success_marker {self.success_marker!r}: an empty marker is in every output, so it "
                "proves no GPU work; None says the target shows no output"
            )


def no_gpu_node_before_the_act(o: ColdStartObs) -> list[Miss]:
    if not o.gpu_nodes_at_start:
        return []
    return [
        Miss(
            "zero GPU nodes when the act began",
            f"precondition: {len(o.gpu_nodes_at_start)} GPU node(s) existed at the start: "
            f"{list(o.gpu_nodes_at_start)}",
        )
    ]


def node_is_new_and_launched_by_our_nodeclaim(o: ColdStartObs) -> list[Miss]:
    n = o.node
    want = f"a node created after {stamp(o.act_started)} by a new NodeClaim of NodePool {o.nodepool}"
    if n is None:
        return [Miss(want, "no GPU node was observed for the job")]
    misses = []
    if n.name in o.gpu_nodes_at_start or before(n.created, o.act_started):
        misses.append(
            Miss(
                want,
                f"node {n.name} was created {stamp(n.created)}, before the act began "
                f"{stamp(o.act_started)}: not launched for this job",
            )
        )
    if not n.nodeclaim or n.nodeclaim_nodepool != o.nodepool or n.nodepool != o.nodepool:
        misses.append(
            Miss(
                want,
                f"node {n.name} is not owned by a NodeClaim of NodePool {o.nodepool} (NodeClaim "
                f"{n.nodeclaim}, NodePool {n.nodeclaim_nodepool}, node label {n.nodepool})",
            )
        )
        return misses
    if n.nodeclaim_created is None or before(n.nodeclaim_created, o.act_started):
        misses.append(
            Miss(
                want,
                f"NodeClaim {n.nodeclaim} was created {stamp(n.nodeclaim_created)}, before the act "
                f"began {stamp(o.act_started)}: Karpenter did not launch it for this job",
            )
        )
    misses += claim_launched_its_node(n, want)
    return misses


def claim_launched_its_node(n: NodeObs, want: str) -> list[Miss]:
    """The node's NodeClaim made it: the claim existed before it Launched and before the node, it reported
    Launched, and the node was Ready only after that. Acts 1 and 5 (the replacement) both hold a node to it."""
    misses = claim_came_before_its_node(n, want)
    if n.nodeclaim_launched_at is None:
        misses.append(Miss(want, f"NodeClaim {n.nodeclaim} never reported Launched"))
    elif n.ready_at is not None and before(n.ready_at, n.nodeclaim_launched_at):
        misses.append(
            Miss(
                want,
                f"node {n.name} was Ready {stamp(n.ready_at)} before its NodeClaim {n.nodeclaim} "
                f"Launched {stamp(n.nodeclaim_launched_at)}: not the node that claim launched",
            )
        )
    elif n.instance_id is not None and before(n.created, n.nodeclaim_launched_at):
        # an EC2 instance's kubelet registers the node after the launch Karpenter recorded; the kwok provider
        # (no instance id) creates the node inside its Create, before Launched is written, so only EC2's is held
        misses.append(
            Miss(
                want,
                f"node {n.name} (instance {n.instance_id}) registered {stamp(n.created)}, before its NodeClaim "
                f"{n.nodeclaim} Launched {stamp(n.nodeclaim_launched_at)}: not the instance that claim launched",
            )
        )
    return misses


def claim_came_before_its_node(n: NodeObs, want: str) -> list[Miss]:
    """A NodeClaim exists before it Launches, and before the node it launched registers."""
    misses = []
    made = n.nodeclaim_created
    for v in nodeclaim.in_lifecycle_order(
        n.nodeclaim or "?", made, {nodeclaim.LAUNCHED: n.nodeclaim_launched_at}
    ):
        misses.append(
            Miss(
                want,
                f"NodeClaim {n.nodeclaim} Launched {stamp(v.at)} before it was created {stamp(made)}: "
                "the timestamps contradict each other",
            )
        )
    if made is not None and before(n.created, made):
        misses.append(
            Miss(
                want,
                f"node {n.name} was created {stamp(n.created)}, before its NodeClaim {n.nodeclaim} "
                f"{stamp(made)}: adopted, not launched by that claim",
            )
        )
    return misses


def node_is_spot_with_a_gpu(o: ColdStartObs) -> list[Miss]:
    n = o.node
    if n is None:
        return []  # no node: node_is_new_and_launched_by_our_nodeclaim says so
    misses = []
    if n.capacity_type != "spot":
        misses.append(
            Miss(
                "capacity-type spot",
                f"node {n.name} has karpenter.sh/capacity-type={n.capacity_type}, not spot",
            )
        )
    if n.allocatable_gpu > n.capacity_gpu:
        misses.append(
            Miss(
                "allocatable nvidia.com/gpu <= capacity",
                f"node {n.name} has {n.allocatable_gpu} allocatable nvidia.com/gpu but a capacity of "
                f"{n.capacity_gpu}: the GPU count contradicts itself",
            )
        )
    if n.allocatable_gpu < 1:
        misses.append(
            Miss(
                ">= 1 allocatable nvidia.com/gpu",
                f"node {n.name} has no allocatable nvidia.com/gpu ({n.allocatable_gpu})",
            )
        )
    return misses


def node_became_ready(o: ColdStartObs) -> list[Miss]:
    n = o.node
    if n is None:
        return []
    if n.ready_at is None:
        return [Miss("the node Ready", f"node {n.name} never became Ready")]
    if before(n.ready_at, n.created):
        return [
            Miss(
                "Ready after the node was created",
                f"node {n.name} was Ready {stamp(n.ready_at)} before it was created {stamp(n.created)}: "
                "the timestamps contradict each other",
            )
        ]
    return []


def pod_ran_on_that_node_after_it_was_ready(o: ColdStartObs) -> list[Miss]:
    n, p = o.node, o.pod
    if p is None:
        return [Miss("the job's pod observed", "the job's pod was never observed")]
    if n is None:
        return []
    want = f"the pod Running on {n.name} once it was Ready"
    if p.node != n.name:
        return [Miss(want, f"pod {p.name} ran on {p.node}, not on the new node {n.name}")]
    if p.running is None:
        return [Miss(want, f"pod {p.name} was never seen Running")]
    if n.deleted_at is not None and not before(p.running.start, n.deleted_at):
        return [
            Miss(
                want,
                f"node {n.name} was deleted {stamp(n.deleted_at)}, before pod {p.name} started "
                f"{stamp(p.running.start)}: the pod ran on another node of that name",
            )
        ]
    if n.ready_at is not None and before(p.running.start, n.ready_at):
        return [
            Miss(
                want,
                f"pod {p.name} was Running at {stamp(p.running.start)}, before its node {n.name} "
                f"was Ready at {stamp(n.ready_at)}: the timestamps contradict each other",
            )
        ]
    if n.deleted_at is not None and p.running.end is not None and before(n.deleted_at, p.running.end):
        return [
            Miss(
                want,
                f"pod {p.name} ran until {stamp(p.running.end)}, after its node {n.name} was deleted "
                f"{stamp(n.deleted_at)}: no pod runs on a node that is gone",
            )
        ]
    if p.running.end is not None and before(p.running.end, p.running.start):
        return [
            Miss(
                want, f"pod {p.name} ended {stamp(p.running.end)} before it started {stamp(p.running.start)}"
            )
        ]
    return []


def _proof(o: ColdStartObs) -> str:
    """What shows the GPU work: the marker the workload prints, or (a target that shows no output) the card."""
    if o.success_marker is None:
        return "the card the kubelet gave it (the target shows no workload output)"
    return f"printing {o.success_marker!r}"


def pod_succeeded_doing_gpu_work(o: ColdStartObs) -> list[Miss]:
    p = o.pod
    if p is None:
        return []
    want = f"Succeeded, exit 0, on one whole card, {_proof(o)}"
    if p.phase == "Succeeded" and (p.exit_code is None or p.running is None or p.running.end is None):
        return [
            Miss(
                want,
                f"pod {p.name} is Succeeded but its container's exit code ({p.exit_code}) or finish time "
                "was not observed: success is unproven",
            )
        ]
    if p.phase == "Succeeded" and p.exit_code == 0 and p.not_its_own_end:
        return [
            Miss(want, f"pod {p.name} is Succeeded, exit 0, but {p.not_its_own_end}: not a run to its end")
        ]
    if p.phase != "Succeeded" or p.exit_code != 0:
        why = ": a CUDA build that does not match the driver exits 253 without doing work"
        return [
            Miss(
                want,
                f"pod {p.name} ended {p.phase} (exit {p.exit_code}, reason {p.reason})"
                + (why if p.exit_code == CUDA_MISMATCH_EXIT else ""),
            )
        ]
    kinds = [holding.device(d).kind for d in p.devices]
    if kinds != [holding.Kind.WHOLE]:
        return [
            Miss(
                want,
                f"pod {p.name} was given devices {list(p.devices)} ({', '.join(kinds) or 'none recorded'}): it "
                "asked for one whole card, so its GPU work is unproven without exactly one",
            )
        ]
    if o.success_marker and (not p.output or o.success_marker not in p.output):
        return [
            Miss(
                want,
                f"pod {p.name} succeeded but its output lacks {o.success_marker!r}: no proof of GPU work",
            )
        ]
    return []


CLAUSES = (
    no_gpu_node_before_the_act,
    node_is_new_and_launched_by_our_nodeclaim,
    node_is_spot_with_a_gpu,
    node_became_ready,
    pod_ran_on_that_node_after_it_was_ready,
    pod_succeeded_doing_gpu_work,
)


def timings(o: ColdStartObs) -> dict[str, float | None]:
    """Seconds from the act's start to each step, for the report."""
    out: dict[str, float | None] = {}
    if o.node is not None:
        out["nodeclaim_launched_s"] = seconds(o.act_started, o.node.nodeclaim_launched_at)
        out["node_ready_s"] = seconds(o.act_started, o.node.ready_at)
    if o.pod is not None and o.pod.running is not None:
        out["pod_running_s"] = seconds(o.act_started, o.pod.running.start)
        out["pod_succeeded_s"] = seconds(o.act_started, o.pod.running.end)
    return out


def check_cold_start(o: ColdStartObs) -> Verdict:
    """Act 1's claim: every clause of `CLAUSES` over the observation."""
    n, p = o.node, o.pod
    return compose(
        CLAIM,
        f"a new node of NodePool {o.nodepool}, capacity-type spot, with a GPU; the pod on it "
        f"Succeeded on one whole card, {_proof(o)}",
        CLAUSES,
        o,
        lambda: f"node {n.name} (spot, {n.allocatable_gpu} GPU) launched; pod {p.name} Succeeded on it",  # type: ignore[union-attr]
        node=n.name if n else None,
        pod=p.name if p else None,
        timings=timings(o),
    )
