"""What the diagnosis reads and what it says: plain, frozen dataclasses with no I/O.

The observers (`gpu_finops.diagnose.kube_observer`, `gpu_finops.diagnose.prom_observer`) fill the inputs from
Kubernetes and Prometheus; tests build them by hand. The engine (`gpu_finops.diagnose.engine`) turns them
into a `Diagnosis` per pending pod or unadmitted Kueue workload.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

from gpu_finops.facts.conditions import Condition
from gpu_finops.facts.kube_keys import GPU_RESOURCE, SHARED_GPU_RESOURCE
from gpu_finops.model import holding, workload

GPU = GPU_RESOURCE  # whole GPUs, or time-slicing replicas when the device plugin does not rename
GPU_SHARED = SHARED_GPU_RESOURCE  # time-slicing replicas when the device plugin has renameByDefault
GPU_RESOURCES = (GPU, GPU_SHARED)

# The checks, in the order the diagnosis walks them. In a Kueue stack admission comes first: a
# suspended workload has no pod in the scheduler, so nothing about devices or nodes can explain it.
ADMISSION = "admission"
ALLOCATION = "allocation"
MEMORY = "memory"
PLACEMENT = "placement"
APPLICATION = "application"
ORDER: tuple[str, ...] = (ADMISSION, ALLOCATION, MEMORY, PLACEMENT, APPLICATION)


# --- scheduling constraints, as the pod spec and the node carry them ------------------------------------
@dataclass(frozen=True)
class Taint:
    key: str
    effect: str  # NoSchedule | PreferNoSchedule | NoExecute
    value: str = ""

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True)
class Toleration:
    key: str = ""  # empty with operator Exists: tolerates every taint
    operator: str = "Equal"  # Equal | Exists ("" reads as Equal, as in Kubernetes)
    value: str = ""
    effect: str = ""  # empty: every effect


@dataclass(frozen=True)
class Requirement:
    """One node selector requirement: matchExpressions (labels) or matchFields (metadata.name)."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...] = ()

    def __str__(self) -> str:
        return (
            f"{self.key} {self.operator} {list(self.values)}"
            if self.values
            else f"{self.key} {self.operator}"
        )


@dataclass(frozen=True)
class SelectorTerm:
    """One nodeSelectorTerm: its requirements are ANDed; the terms of a pod are ORed."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()


# --- Dynamic Resource Allocation -------------------------------------------------------------------------
EXTENDED_CLAIM = "extended-resources"  # a pod's name for the scheduler's claim of its extended resources


@dataclass(frozen=True)
class PodClaim:
    """A ResourceClaim a pod references (`spec.resourceClaims`), or the scheduler's claim of its extended
    resources (name `extended-resources`): `claim` is the ResourceClaim's name (the named claim, or the one made
    from the template, read from the pod's status), None while not made yet; `requests` what it asks where the
    claim itself was not read ((DeviceClass, count), count -1 for all)."""

    name: str
    claim: str | None
    template: str | None = None
    requests: tuple[tuple[str, int], ...] = ()

    @property
    def label(self) -> str:
        return self.claim or f"{self.name} (not made yet)"


@dataclass(frozen=True)
class ClaimFacts:
    namespace: str
    name: str
    requests: tuple[tuple[str, int], ...] = ()  # (deviceClassName, count) per request; count -1: all
    allocated: tuple[tuple[str, str], ...] = ()  # (pool, device) of each result of the GPU driver
    reserved_for: tuple[str, ...] = ()  # the pods it is reserved for
    # a request this diagnosis does not read (a prioritized list, All, a bad count)
    problem: str | None = None
    tolerations: tuple[Toleration, ...] = ()  # its requests' device tolerations (DRADeviceTaints)


@dataclass(frozen=True)
class DraDevice:
    node: str
    pool: str
    name: str
    kind: str  # the driver's type attribute: gpu or mig
    taints: tuple[Taint, ...] = ()  # its NoSchedule / NoExecute taints


@dataclass(frozen=True)
class DraFacts:
    """The GPU driver's devices, every ResourceClaim, and the extended resources DeviceClasses serve."""

    devices: tuple[DraDevice, ...] = ()
    claims: tuple[ClaimFacts, ...] = ()
    extended: dict[str, str] = field(default_factory=dict)  # extended resource name -> DeviceClass
    cards: dict[str, int] = field(default_factory=dict)  # node -> the physical cards its driver publishes
    # (node, "namespace/pod", claim, devices, cards' worth): what each pod holds through each claim
    held: tuple[tuple[str, str, str, int, Fraction], ...] = ()
    problem: str | None = None  # why the slices or claims could not be read (then nothing else is given)


# --- the pod (or the workload's pod template) waiting for a GPU ----------------------------------------
@dataclass(frozen=True)
class PodFacts:
    namespace: str
    name: str
    phase: str = "Pending"
    node_name: str | None = None  # set when the scheduler has bound it
    gpu_requests: dict[str, int] = field(default_factory=dict)  # resource -> count the pod asks for
    node_selector: dict[str, str] = field(default_factory=dict)
    # requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms; None: no required node affinity
    required_terms: tuple[SelectorTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()
    workload: str | None = None  # the Kueue Workload this pod belongs to, when one does
    scheduler_message: str | None = None  # the latest FailedScheduling event (or PodScheduled message)
    claims: tuple[PodClaim, ...] = ()  # the ResourceClaims it references (Dynamic Resource Allocation)
    # the scheduler's own PodScheduled=False message (a newer FailedScheduling event may be Karpenter's)
    condition_message: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @cached_property  # asked per node in every check: worked out once (the instance is frozen)
    def gpu_resource(self) -> str | None:
        asked = [
            r for r, n in self.gpu_requests.items() if n > 0
        ]  # whole or replicas first, then MIG profiles
        return min(asked, key=lambda r: (r not in GPU_RESOURCES, r), default=None)

    @cached_property
    def gpu_count(self) -> int:
        r = self.gpu_resource
        return self.gpu_requests.get(r, 0) if r else 0


@dataclass(frozen=True)
class NodeFacts:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: dict[str, int] = field(default_factory=dict)  # GPU resource (MIG profiles too) -> count
    unschedulable: bool = False
    ready: bool = True
    capacity: dict[str, int] = field(default_factory=dict)  # GPU resource -> capacity (unhealthy cards too)

    @property
    def replicas_per_gpu(self) -> int:
        """GFD's nvidia.com/gpu.replicas: >1 means time-slicing (a slot is a share, not a card)."""
        return holding.replicas_per_card(self.labels)


@dataclass(frozen=True)
class Holder:
    """A non-terminal pod bound to a node that requests GPUs: it holds them whatever its SM says."""

    namespace: str
    name: str
    node: str
    gpu_requests: dict[str, int] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


# --- DCGM over the window, one row per GPU series (a time-sliced GPU has one row per holder) -------------
@dataclass(frozen=True)
class GpuStats:
    node: str  # the exporter's node label (`hostname`; `Hostname` before dcgm-exporter 4.8.3)
    gpu: str  # index
    uuid: str
    holder: str | None = None  # "namespace/pod" from the exporter's pod labels
    sm_active: float | None = None  # ratio 0..1
    sm_occupancy: float | None = None  # ratio 0..1
    fb_used_mib: float | None = None
    fb_free_mib: float | None = None
    pcie_tx_bps: float | None = None  # bytes per second
    pcie_rx_bps: float | None = None
    nvlink_tx_bps: float | None = None
    nvlink_rx_bps: float | None = None
    power_w: float | None = None

    @property
    def fb_ratio(self) -> float | None:
        """FB_USED / (FB_USED + FB_FREE): how much of the card's memory is resident."""
        if self.fb_used_mib is None or self.fb_free_mib is None:
            return None
        total = self.fb_used_mib + self.fb_free_mib
        return self.fb_used_mib / total if total > 0 else None

    @property
    def pcie_bps(self) -> float | None:
        if self.pcie_tx_bps is None and self.pcie_rx_bps is None:
            return None
        return (self.pcie_tx_bps or 0.0) + (self.pcie_rx_bps or 0.0)

    @property
    def nvlink_bps(self) -> float | None:
        if self.nvlink_tx_bps is None and self.nvlink_rx_bps is None:
            return None
        return (self.nvlink_tx_bps or 0.0) + (self.nvlink_rx_bps or 0.0)


# --- Kueue ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueuePosition:
    """Where Kueue's visibility API puts a pending workload. Positions are Kueue's own, counted from 0 (0: the
    next one Kueue tries in that queue)."""

    local_queue: str
    cluster_queue: str | None  # the LocalQueue's spec.clusterQueue; None: not read (`cluster_queue_unknown`)
    in_cluster_queue: int  # positionInClusterQueue
    in_local_queue: int  # positionInLocalQueue
    priority: int
    api: str  # the group/version that answered, e.g. visibility.kueue.x-k8s.io/v1beta2
    cluster_queue_unknown: str | None = None  # why the ClusterQueue's name is not known


@dataclass(frozen=True)
class KueueSignals:
    """What Kueue's visibility API said of one pending workload: its position, or why there is none."""

    position: QueuePosition | None = None
    fallback: str | None = None  # why no position: API not served, forbidden, gate off, not in the list...


@dataclass(frozen=True)
class WorkloadFacts:
    namespace: str
    name: str
    queue: str | None = None  # spec.queueName (the LocalQueue)
    conditions: dict[str, Condition] = field(default_factory=dict)
    job_suspended: bool | None = None  # the owning Job's spec.suspend
    pod_template: PodFacts | None = None  # podSets[0].template, so later checks run without a pod
    kueue: KueueSignals | None = None  # Kueue's visibility API on it; None: not read (said as a fallback)
    created: str | None = None  # metadata.creationTimestamp: tells this incarnation from one of the same name
    generation: int | None = None  # metadata.generation: a condition written for an older one may be stale

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def is_true(self, ctype: str) -> bool:
        return workload.is_true(self.conditions, ctype)

    @property
    def admitted(self) -> bool:
        return workload.is_active(self.conditions)


@dataclass(frozen=True)
class Cluster:
    """Everything the engine reads, taken at one moment (DCGM: averaged over `window_s` up to then)."""

    nodes: tuple[NodeFacts, ...] = ()
    holders: tuple[Holder, ...] = ()
    workloads: tuple[WorkloadFacts, ...] = ()
    stats: tuple[GpuStats, ...] | None = None  # None: DCGM not read (see `stats_unavailable`)
    stats_unavailable: str | None = None  # why, e.g. "Prometheus at http://... unreachable"
    window_s: int = 300
    dra: DraFacts | None = None  # the GPU driver's devices and every claim; None: not read


# --- what the diagnosis says ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    """One check's result. `explains` is None when the check could not be made (`summary` says why)."""

    check: str
    explains: bool | None
    summary: str
    next_action: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    key_evidence: tuple[str, ...] = ()  # short tokens an act compares, e.g. "holder:ns/pod"

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "explains": self.explains,
            "summary": self.summary,
            "next_action": self.next_action,
            "evidence": self.evidence,
            "key_evidence": list(self.key_evidence),
        }


@dataclass(frozen=True)
class Diagnosis:
    target: str  # "namespace/name"
    kind: str  # "pod" | "workload"
    findings: tuple[Finding, ...]
    order: tuple[str, ...] = ORDER

    @property
    def first(self) -> Finding | None:
        """The first finding, in the walk's order, that explains the wait."""
        return next((f for f in self.findings if f.explains), None)

    @property
    def first_cause(self) -> str | None:
        first = self.first
        return first.check if first else None

    @property
    def also_explains(self) -> tuple[str, ...]:
        """Later checks that explain the wait too (shown, not the answer: the order decided)."""
        first = self.first
        return tuple(f.check for f in self.findings if f.explains and f is not first)

    @property
    def not_checked(self) -> tuple[str, ...]:
        return tuple(f.check for f in self.findings if f.explains is None)

    def finding(self, check: str) -> Finding | None:
        return next((f for f in self.findings if f.check == check), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "kind": self.kind,
            "first_cause": self.first_cause,
            "also_explains": list(self.also_explains),
            "not_checked": list(self.not_checked),
            "order": list(self.order),
            "findings": [f.to_dict() for f in self.findings],
        }


def document(diagnoses: list[Diagnosis], cluster: Cluster, order: tuple[str, ...] = ORDER) -> dict[str, Any]:
    """The diagnoses as `gpu-finops diagnose --all --json` writes them and `gpu-finops report` reads them
    (gpu_finops/report/schemas.py's DiagnosisFile): the one shape, whoever writes it."""
    return {
        "order": list(order),
        "window_s": cluster.window_s,
        "dcgm": "read" if cluster.stats is not None else f"not read: {cluster.stats_unavailable}",
        "diagnoses": [d.to_dict() for d in diagnoses],
    }
