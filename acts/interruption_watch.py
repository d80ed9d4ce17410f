"""What act 5 watches after the warning, sampled every second until the story is complete or time runs out:
the node's taint, its NodeClaim's deletion, the workload's pods (kept after eviction deletes them) and
the GPU nodes that appear."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from acts.recorder import PodRecorder
from assertions.interruption import TAINT
from assertions.observed import NodeObs, PodObs
from gpu_finops.clients.kube import Kube
from harness.observe import gpu_node_names, node_obs, nodeclaims


@dataclass
class InterruptionWatch:
    kube: Kube
    node: NodeObs  # the node about to be interrupted
    pods: PodRecorder
    taint_seen_at: datetime | None = None
    nodeclaim_deleted_at: datetime | None = None
    last_node: NodeObs | None = None
    replacement: NodeObs | None = None
    nodes_before: frozenset[str] = field(default_factory=frozenset)

    def observe(self) -> InterruptionWatch:
        now = datetime.now(UTC)
        try:
            self.last_node = node_obs(self.kube, self.node.name)
            if TAINT in self.last_node.taints and self.taint_seen_at is None:
                self.taint_seen_at = now
        except Exception:  # the node is gone: drained and terminated
            pass
        if self.node.nodeclaim and self.nodeclaim_deleted_at is None:
            claims = {c.name: c for c in nodeclaims(self.kube)}
            claim = claims.get(self.node.nodeclaim)
            if claim is None or claim.deleting:
                self.nodeclaim_deleted_at = now
        self.pods.observe()
        for name in gpu_node_names(self.kube):
            if name != self.node.name and name not in self.nodes_before:
                self.replacement = node_obs(self.kube, name)
        return self

    @property
    def workload_running_again(self) -> bool:
        """A pod of the workload Running on the replacement and not being disrupted. Not merely one that ran
        there: on the local target a pod bound to the new node before Karpenter's NoExecute taint reached it
        was deleted by the taint manager a second later (DisruptionTarget DeletionByTaintManager, exit 143,
        2026-12-02 CI); stopping the wait at that pod left the check (assertions/interruption.ran_again,
        which refuses a failed pod) no pod to find, while the Job (its podFailurePolicy ignores disruptions)
        was about to start the next one."""
        r = self.replacement
        return r is not None and any(
            p.node == r.name and p.running is not None and p.phase == "Running" and p.disruption is None
            for p in self.pods.seen.values()
        )

    def all_pods(self) -> tuple[PodObs, ...]:
        return tuple(self.pods.seen.values())

    def __repr__(self) -> str:  # what a timed-out wait prints as its last observation
        return (
            f"InterruptionWatch(node={self.node.name}, taint_seen_at={self.taint_seen_at}, "
            f"nodeclaim_deleted_at={self.nodeclaim_deleted_at}, replacement={getattr(self.replacement, 'name', None)}, "
            f"pods={[(p.name, p.node, p.phase, p.disruption) for p in self.pods.seen.values()]})"
        )
