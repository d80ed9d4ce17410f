"""Why is this GPU pod (or Kueue workload) waiting? A pure walk over observed state; no I/O.

The order is admission -> allocation -> memory -> placement -> application. The walk stops at the
first check that explains the wait for the answer, and still runs and shows every later check, so a
reader sees when two causes hold at once and that the order decided between them.

- admission: Kueue has not admitted the workload (QuotaReserved False, or the Job still suspended):
  the pod is not in the scheduler at all, so nothing about devices or nodes can explain it.
- allocation: no Ready, schedulable node has the GPUs the pod asks for free: every device is held.
  Whose they are and what they do (SM_ACTIVE, occupancy, VRAM) is the evidence. When every holder is a
  workload trying to compute but starved of input or transfer-bound, ownership is not the story and the
  application check owns the finding.
- memory: free slots exist (time-slicing replicas) only on cards whose VRAM is resident: a replica
  gives compute time, not memory.
- placement: the pod's own constraints (taints without tolerations, nodeSelector, required node
  affinity, a cordon) rule out every node with room, or every GPU node.
- application: the holders of the devices the pod could use are data-starved (low SM, low PCIe) or
  transfer-bound (high PCIe, low occupancy).

Memory and application need DCGM; without it they are reported as not checked, naming why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from gpu_finops.diagnose.admission import check_admission
from gpu_finops.diagnose.devices import check_allocation, check_application, check_memory
from gpu_finops.diagnose.model import (
    ADMISSION,
    ALLOCATION,
    APPLICATION,
    GPU,
    MEMORY,
    ORDER,
    PLACEMENT,
    Cluster,
    Diagnosis,
    Finding,
    PodFacts,
    WorkloadFacts,
)
from gpu_finops.diagnose.placement import check_placement
from gpu_finops.diagnose.view import ClusterIndex, View, build_view
from gpu_finops.model.workload import FINISHED


class NotDiagnosable(ValueError):
    """The target is not something this diagnosis explains: not pending, or asks for no GPU."""


def why_not_diagnosable(pod: PodFacts) -> str | None:
    """None when the pod is a pending GPU pod; otherwise the reason, in words."""
    if pod.phase != "Pending":
        where = f" on node {pod.node_name}" if pod.node_name else ""
        return f"pod {pod.key} is not pending: it is {pod.phase}{where}"
    if pod.gpu_resource is None and not pod.claims:
        return (
            f"pod {pod.key} is not a GPU pod: it requests neither nvidia.com/gpu nor nvidia.com/gpu.shared "
            f"(requests: {pod.gpu_requests or 'none'}) and references no ResourceClaim"
        )
    return None


# --- the walk -------------------------------------------------------------------------------------------
def _walk(
    v: View, workload: WorkloadFacts | None, order: Sequence[str], skip_pod_checks: str | None
) -> tuple[Finding, ...]:
    checks: dict[str, Callable[[], Finding]] = {
        ADMISSION: lambda: check_admission(v, workload),
        ALLOCATION: lambda: check_allocation(v),
        MEMORY: lambda: check_memory(v),
        PLACEMENT: lambda: check_placement(v),
        APPLICATION: lambda: check_application(v),
    }
    if sorted(order) != sorted(ORDER):
        raise ValueError(f"order must be a permutation of {ORDER}, got {tuple(order)}")
    out = []
    for name in order:
        if skip_pod_checks and name != ADMISSION:
            out.append(Finding(name, None, skip_pod_checks))
        else:
            out.append(checks[name]())
    return tuple(out)


def diagnose_pod(
    pod: PodFacts, cluster: Cluster, order: Sequence[str] = ORDER, *, _shared: _Shared | None = None
) -> Diagnosis:
    """Diagnose one pending GPU pod. Raises NotDiagnosable (with the reason) for anything else."""
    reason = why_not_diagnosable(pod)
    if reason:
        raise NotDiagnosable(reason)
    shared = _shared or _Shared(cluster)
    workload = shared.workload_of(pod)
    return Diagnosis(pod.key, "pod", _walk(shared.view(pod), workload, order, None), tuple(order))


def diagnose_workload(
    workload: WorkloadFacts, cluster: Cluster, order: Sequence[str] = ORDER, *, _shared: _Shared | None = None
) -> Diagnosis:
    """Diagnose one Kueue workload; the device and node checks run against its pod template."""
    template = workload.pod_template
    skip = None
    if template is None or template.gpu_resource is None:
        template = PodFacts(workload.namespace, workload.name, gpu_requests={GPU: 1})
        skip = (
            "not checked: the workload's pod template was not observed"
            if workload.pod_template is None
            else "not checked: the workload's pod template asks for no GPU"
        )
    v = (_shared or _Shared(cluster)).view(template)
    return Diagnosis(workload.key, "workload", _walk(v, workload, order, skip), tuple(order))


class _Shared:
    """What the diagnoses of one cluster share: one ClusterIndex per GPU resource, built on first use, and
    the workloads by (namespace, name). Without it each diagnosis rebuilt both; `diagnose --all` at 1,250
    nodes took 1-3 s a diagnosis (docs/benchmarks.md, `python -m benchmarks diagnose`)."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self._indexes: dict[str, ClusterIndex] = {}
        self._workloads: dict[tuple[str, str], WorkloadFacts] | None = None

    def view(self, pod: PodFacts) -> View:
        resource = pod.gpu_resource or GPU
        v = build_view(pod, self.cluster, self._indexes.get(resource))
        self._indexes[resource] = v.index
        return v

    def workload_of(self, pod: PodFacts) -> WorkloadFacts | None:
        if not pod.workload:
            return None
        if self._workloads is None:
            self._workloads = {}
            for w in self.cluster.workloads:
                self._workloads.setdefault((w.namespace, w.name), w)  # the first, as a scan would find
        return self._workloads.get((pod.namespace, pod.workload))


def diagnose_all(
    pods: Iterable[PodFacts], cluster: Cluster, order: Sequence[str] = ORDER, namespace: str | None = None
) -> list[Diagnosis]:
    """Every pending GPU pod, then every unadmitted workload that has no such pod (a suspended Job's)."""
    out = []
    seen_workloads = set()
    shared = _Shared(cluster)
    for pod in pods:
        if namespace and pod.namespace != namespace:
            continue
        if why_not_diagnosable(pod) is None:
            out.append(diagnose_pod(pod, cluster, order, _shared=shared))
            if pod.workload:
                seen_workloads.add((pod.namespace, pod.workload))
    for w in cluster.workloads:
        if namespace and w.namespace != namespace:
            continue
        if (w.namespace, w.name) in seen_workloads or (w.admitted and w.job_suspended is not True):
            continue
        if w.is_true(FINISHED):
            continue
        out.append(diagnose_workload(w, cluster, order, _shared=shared))
    return out
