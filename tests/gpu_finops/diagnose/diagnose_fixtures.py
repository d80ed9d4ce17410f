"""Situations for the diagnosis tests, built from plain dataclasses and the simulator profiles."""

from __future__ import annotations

from gpu_finops.diagnose.model import (
    Cluster,
    GpuStats,
    Holder,
    NodeFacts,
    PodFacts,
    Requirement,
    SelectorTerm,
    Taint,
    Toleration,
    WorkloadFacts,
)
from gpu_finops.facts import dcgm
from gpu_finops.facts.conditions import Condition
from local.sim.profiles import (
    BUSY_TRAINER,
    DATA_STARVED,
    RESIDENT_MODEL,
    SMALL_BATCH,
    UNHELD,
    profile_values,
)

GPU = "nvidia.com/gpu"
NS = "team-a"
GPU_TAINT = Taint("nvidia.com/gpu", "NoSchedule", "present")
TOLERATE_GPU = Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule")


def gpu_node(name: str, gpus: int = 1, *, replicas: int = 1, labels=None, taints=(), **kw) -> NodeFacts:
    all_labels = {"nvidia.com/gpu.count": str(gpus), "nvidia.com/gpu.replicas": str(replicas)}
    all_labels.update(labels or {})
    return NodeFacts(name, all_labels, tuple(taints), {GPU: gpus * replicas}, **kw)


def stats(node: str, index: int, profile: str, holder: str | None) -> GpuStats:
    v = profile_values(profile)
    return GpuStats(
        node=node,
        gpu=str(index),
        uuid=f"GPU-{node}-{index}",
        holder=holder,
        sm_active=v[dcgm.SM_ACTIVE],
        sm_occupancy=v[dcgm.SM_OCCUPANCY],
        fb_used_mib=v[dcgm.FB_USED],
        fb_free_mib=v[dcgm.FB_FREE],
        pcie_tx_bps=v[dcgm.PCIE_TX_BYTES],
        pcie_rx_bps=v[dcgm.PCIE_RX_BYTES],
        nvlink_tx_bps=v[dcgm.NVLINK_TX_BYTES],
        nvlink_rx_bps=v[dcgm.NVLINK_RX_BYTES],
        power_w=v[dcgm.POWER_USAGE],
    )


def holding(node: str, pod: str, profile: str, index: int = 0, count: int = 1) -> tuple[Holder, GpuStats]:
    return Holder(NS, pod, node, {GPU: count}), stats(node, index, profile, f"{NS}/{pod}")


def cluster(nodes, held, free_cards=(), workloads=(), stats_known=True) -> Cluster:
    holders = tuple(h for h, _ in held)
    rows = tuple(s for _, s in held) + tuple(stats(n, i, UNHELD, None) for n, i in free_cards)
    return Cluster(
        nodes=tuple(nodes),
        holders=holders,
        workloads=tuple(workloads),
        stats=rows if stats_known else None,
        stats_unavailable=None if stats_known else "Prometheus at http://prom:9090 unreachable",
    )


def pending(name: str = "waiting", **kw) -> PodFacts:
    kw.setdefault("gpu_requests", {GPU: 1})
    return PodFacts(NS, name, **kw)


def unadmitted(name: str = "wl-1", template: PodFacts | None = None) -> WorkloadFacts:
    return WorkloadFacts(
        NS,
        name,
        queue="team-a",
        conditions={
            "QuotaReserved": Condition(
                "QuotaReserved",
                "False",
                "Pending",
                "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
                "flavor gpu, 1 more needed",
            )
        },
        job_suspended=True,
        pod_template=template or pending(name),
    )


# --- the five situations and the two-at-once ones --------------------------------------------------------
def allocation_situation() -> tuple[PodFacts, Cluster]:
    """Every card held by a resident model at SM 0.05."""
    return pending(), cluster(
        [gpu_node("gpu-a"), gpu_node("gpu-b")],
        [holding("gpu-a", "llm-a", RESIDENT_MODEL), holding("gpu-b", "llm-b", RESIDENT_MODEL)],
    )


def memory_situation() -> tuple[PodFacts, Cluster]:
    """A time-sliced card with replicas free, VRAM 90 % resident; no other GPU node."""
    node = gpu_node("gpu-ts", replicas=4)
    return pending(), cluster([node], [holding("gpu-ts", "llm-ts", RESIDENT_MODEL)])


def placement_situation() -> tuple[PodFacts, Cluster]:
    """A taint and node affinity leave only a busy node; free cards elsewhere."""
    pod = pending(
        required_terms=(SelectorTerm((Requirement("pool", "In", ("train",)),)),),
    )
    nodes = [
        gpu_node("gpu-busy", labels={"pool": "train"}),
        gpu_node("gpu-tainted", labels={"pool": "train"}, taints=(GPU_TAINT,)),
        gpu_node("gpu-serve", labels={"pool": "serve"}),
    ]
    return pod, cluster(
        nodes,
        [holding("gpu-busy", "trainer", BUSY_TRAINER)],
        free_cards=[("gpu-tainted", 0), ("gpu-serve", 0)],
    )


def application_situation() -> tuple[PodFacts, Cluster]:
    """The only card held by a data-starved trainer."""
    return pending(), cluster([gpu_node("gpu-a")], [holding("gpu-a", "starved", DATA_STARVED)])


def small_batch_situation() -> tuple[PodFacts, Cluster]:
    return pending(), cluster([gpu_node("gpu-a")], [holding("gpu-a", "server", SMALL_BATCH)])


def admission_situation() -> tuple[WorkloadFacts, Cluster]:
    w = unadmitted()
    _, c = allocation_situation()
    return w, Cluster(c.nodes, c.holders, (w,), c.stats)


def allocation_and_application_situation() -> tuple[PodFacts, Cluster]:
    """Two causes at once: one card held by a resident model, the other by a data-starved trainer."""
    return pending(), cluster(
        [gpu_node("gpu-a"), gpu_node("gpu-b")],
        [holding("gpu-a", "llm", RESIDENT_MODEL), holding("gpu-b", "starved", DATA_STARVED)],
    )


def allocation_and_placement_situation() -> tuple[PodFacts, Cluster]:
    """Two causes at once: every card held by idle owners, and the pod tolerates no GPU node's taint."""
    return pending(), cluster(
        [gpu_node("gpu-a", taints=(GPU_TAINT,)), gpu_node("gpu-b", taints=(GPU_TAINT,))],
        [holding("gpu-a", "llm-a", RESIDENT_MODEL), holding("gpu-b", "llm-b", RESIDENT_MODEL)],
    )


def admission_and_placement_situation() -> tuple[WorkloadFacts, Cluster]:
    """Two causes at once: quota exhausted, and the template tolerates no taint of the free GPU node."""
    w = unadmitted("wl-tainted", template=pending("wl-tainted"))
    c = cluster([gpu_node("gpu-t", taints=(GPU_TAINT,))], [], free_cards=[("gpu-t", 0)], workloads=[w])
    return w, c
