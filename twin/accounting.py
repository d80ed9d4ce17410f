"""GPU-seconds per ledger bucket over a replay, integrated from what the observer holds, tick by tick.

Each GPU node's GPUs are split at every tick into exactly one of the ledger's buckets (gpu_finops/ledger/conventions.py),
by the ledger's own rules (docs/ledger.md): a cordoned node's GPUs are unschedulable (repair queue when its
`gpu-finops.io/unschedulable-reason` says so, else other); a schedulable node's GPUs held by a bound pod
that has not ended are allocated, in the bucket of the pod's workload class; the rest are free, and
stranded when they are fewer than the smallest request shape waiting, in Kueue's queue or admitted and
not yet placed (no demand strands nothing). The
partition is per node, so the buckets sum to the installed GPU-seconds by construction; the readout
states both sums so a reader sees it.

Only the fleet's nodes count: the static nodes the fleet names, and nodes of the fleet's Karpenter pool.
A GPU node another test or run left in the target would otherwise add its GPUs to "free" for as long as
each run lasts, so two policies' runs of different lengths would differ by it. They are named in `foreign_nodes` instead.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from gpu_finops.facts.kube_keys import GPU_RESOURCE, LABEL_NODEPOOL, LABEL_UNSCHEDULABLE_REASON
from gpu_finops.ledger.conventions import CLASS_BUCKETS, Conventions
from twin.observe import Observer

UNSCHEDULABLE_OTHER = "unschedulable_other"
FREE_PLACEABLE, FREE_STRANDED = "free_placeable", "free_stranded"


@dataclass
class Ledger:
    """Integrated GPU-seconds (wall) per bucket, per tick state; `idle_gpu_seconds_by_profile` feeds idle
    dollars (allocated GPUs idle by their profile's SM_ACTIVE, free GPUs idle whole)."""

    shapes: dict[str, int]  # Job name -> GPUs it asks for (from the trace)
    pools: frozenset[str] = (
        frozenset()
    )  # Karpenter pools whose nodes are the fleet's (besides the named ones)
    foreign_nodes: set[str] = field(
        default_factory=set
    )  # GPU nodes seen that are not the fleet's: not counted
    gpu_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    installed_gpu_seconds: float = 0.0
    allocated_by_profile: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    pending_now: int = 0
    peak_pending: int = 0
    peak_at: float | None = None
    stranded_peak: int = 0
    last: float | None = None

    def tick(self, obs: Observer, now: float, gpus_of_node: dict[str, int]) -> None:
        """Integrate since the last tick. `gpus_of_node`: the fleet's named nodes and their GPUs; a node of
        `pools` counts with its advertised capacity; any other node is not the fleet's."""
        dt = 0.0 if self.last is None else now - self.last
        self.last = now
        reasons = Conventions().reasons
        with obs.lock:
            waiting = [
                w
                for w in obs.workloads.values()
                if w.reserved is None and w.finished is None and w.job_uid in obs.job_uids
            ]
            # demand: workloads Kueue has not admitted, and pods admitted but not placed (fragmentation)
            unplaced = {p.gpus for p in obs.pods.values() if p.running is None and p.ended is None}
            shapes = sorted(({self.shapes.get(w.job, 0) for w in waiting} | unplaced) - {0})
            held: dict[str, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
            for p in obs.pods.values():
                if p.node and p.ended is None and p.running is not None:
                    held[p.node][(p.workload_class, p.profile)] += p.gpus
            nodes = {n: dict(v) for n, v in obs.nodes.items()}
        self.pending_now = len(waiting)
        if len(waiting) > self.peak_pending:
            self.peak_pending, self.peak_at = len(waiting), now
        stranded_now = 0
        for name, node in nodes.items():
            advertised = int(node["capacity"].get(GPU_RESOURCE, 0) or 0)
            if name not in gpus_of_node and node["labels"].get(LABEL_NODEPOOL) not in self.pools:
                if advertised:
                    self.foreign_nodes.add(name)
                continue
            gpus = gpus_of_node.get(name) or advertised
            if not gpus:
                continue
            self.installed_gpu_seconds += gpus * dt
            if node["unschedulable"]:
                bucket = reasons.get(node["labels"].get(LABEL_UNSCHEDULABLE_REASON, ""), UNSCHEDULABLE_OTHER)
                self.gpu_seconds[bucket] += gpus * dt
                continue
            used = 0
            for (cls, profile), n in held.get(name, {}).items():
                n = min(n, gpus - used)
                used += n
                self.gpu_seconds[CLASS_BUCKETS.get(cls, CLASS_BUCKETS["unclassified"])] += n * dt
                self.allocated_by_profile[profile] += n * dt
            free = gpus - used
            if free and shapes and free < shapes[0]:
                self.gpu_seconds[FREE_STRANDED] += free * dt
                stranded_now += free
            elif free:
                self.gpu_seconds[FREE_PLACEABLE] += free * dt
        self.stranded_peak = max(self.stranded_peak, stranded_now)
