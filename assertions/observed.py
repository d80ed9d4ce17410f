"""Plain observed state the checkers decide from. The harness fills these; tests build them by hand."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise

from assertions.clauses import require_aware
from gpu_finops.facts.conditions import Condition
from gpu_finops.facts.kube_keys import LABEL_CAPACITY_TYPE, LABEL_NODEPOOL
from gpu_finops.model import holding, workload
from gpu_finops.model.time_order import before


@dataclass(frozen=True)
class Interval:
    start: datetime
    end: datetime | None = None  # None: still running when observed

    def __post_init__(self) -> None:
        if not isinstance(self.start, datetime) or not isinstance(self.end, (datetime, type(None))):
            raise ValueError(
                f"Interval({self.start!r}, {self.end!r}): start must be a datetime and end a datetime or None"
            )
        require_aware(self)
        if self.end is not None and before(self.end, self.start):
            raise ValueError(
                f"Interval {self.start.isoformat()} to {self.end.isoformat()}: ends before it starts, which no "
                "run does (a start or an end misread)"
            )

    def overlaps(self, other: Interval, now: datetime) -> bool:
        a_end, b_end = self.end or now, other.end or now
        return self.start < b_end and other.start < a_end


@dataclass(frozen=True)
class NodeObs:
    name: str
    created: datetime
    labels: dict[str, str] = field(default_factory=dict)
    allocatable_gpu: int = 0
    capacity_gpu: int = 0
    ready_at: datetime | None = None
    nodeclaim: str | None = None  # the NodeClaim whose status.nodeName is this node
    nodeclaim_nodepool: str | None = None
    nodeclaim_launched_at: datetime | None = None
    nodeclaim_created: datetime | None = None
    taints: tuple[str, ...] = ()  # "key:effect"
    instance_id: str | None = None  # from spec.providerID (aws:///zone/i-...; kwok nodes: None)
    capacity_shared: int = 0  # nvidia.com/gpu.shared: time-sliced replicas, when the plugin renames them
    allocatable_shared: int = 0
    deleted_at: datetime | None = None  # deletionTimestamp, or when the act saw it gone
    uid: str | None = None  # metadata.uid: a node re-created under the same name has another
    mig_capacity: dict[str, int] = field(default_factory=dict)  # nvidia.com/mig-<profile> -> slices (mixed)
    mig_allocatable: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_aware(self)
        said = [
            f
            for f in ("nodeclaim_nodepool", "nodeclaim_created", "nodeclaim_launched_at")
            if getattr(self, f)
        ]
        if self.nodeclaim is None and said:
            raise ValueError(
                f"NodeObs {self.name}: {said} given for no NodeClaim: facts of a NodeClaim that was not observed"
            )
        label = self.labels.get(LABEL_NODEPOOL)
        if label is not None and self.nodeclaim_nodepool is not None and label != self.nodeclaim_nodepool:
            raise ValueError(
                f"NodeObs {self.name}: labelled NodePool {label!r} but its NodeClaim {self.nodeclaim} is of "
                f"{self.nodeclaim_nodepool!r}: Karpenter labels a node with its claim's pool, so these are facts of "
                "two objects"
            )

    @property
    def nodepool(self) -> str | None:
        return self.labels.get(LABEL_NODEPOOL)

    @property
    def capacity_type(self) -> str | None:
        return self.labels.get(LABEL_CAPACITY_TYPE)


# A pod's terminated or status reason that says the platform or its limits ended it, not the workload: such a
# pod did not run to its own end, whatever its exit code
# (the kubelet's: Evicted, Preempting (a critical pod took its place), Terminated and Shutdown (graceful node
# shutdown), UnexpectedAdmissionError and NodeAffinity (refused at admission); the node controller's NodeLost)
ENDED_BADLY = frozenset(
    {
        "Evicted",
        "OOMKilled",
        "Error",
        "DeadlineExceeded",
        "ContainerStatusUnknown",
        "Preempting",
        "Terminated",
        "Shutdown",
        "NodeShutdown",
        "UnexpectedAdmissionError",
        "NodeAffinity",
        "NodeLost",
    }
)


@dataclass(frozen=True)
class PodObs:
    name: str
    node: str | None
    phase: str  # Pending | Running | Succeeded | Failed | Unknown
    running: Interval | None = None
    exit_code: int | None = None
    reason: str | None = None  # terminated reason, or status.reason (Evicted)
    output: str | None = None  # the workload's log, when the act reads it
    gpu_uuid: str | None = None  # NVIDIA_VISIBLE_DEVICES / nvidia-smi -L as the pod reported it
    evicted: bool = False  # an Evicted event or a DisruptionTarget condition was observed
    disruption: str | None = None  # the DisruptionTarget condition's reason (EvictionByEvictionAPI, ...)
    devices: tuple[
        str, ...
    ] = ()  # device ids the kubelet gave the container (GPU-uuid, GPU-uuid::replica, MIG-uuid)
    gone_at: datetime | None = (
        None  # the first look that no longer found the pod (deleted), None: still there
    )

    @property
    def not_its_own_end(self) -> str | None:
        """Why this pod did not run to its own end, in a few words, or None: a DisruptionTarget condition (the
        platform disrupted it, whatever its phase and exit code after), an eviction, or a terminated reason
        of the platform's or its limits' (ENDED_BADLY). The one reading every act's "ran" and "succeeded"
        clauses share."""
        if self.disruption:
            return f"disrupted: {self.disruption}"
        if self.evicted:
            return "disrupted: evicted"
        if self.reason in ENDED_BADLY:
            return f"ended {self.reason}"
        if self.gone_at is not None and self.phase not in ("Succeeded", "Failed"):
            return f"deleted while {self.phase} (gone by {self.gone_at.isoformat()}), its end never seen"
        return None

    @property
    def ended_before_it_ran(self) -> str | None:
        """Why the platform ended this pod before its container ever started, or None: disrupted or evicted
        (a new node's taint-eviction, say) with no run, no exit code and not Succeeded. Its Job makes another;
        it is no run and no crash."""
        started = self.running is not None or self.exit_code is not None or self.phase == "Succeeded"
        if started or not (self.disruption or self.evicted or self.gone_at is not None):
            return None
        return self.not_its_own_end

    @property
    def healthy_run(self) -> Interval | None:
        """The pod's run, when it is one that counts: a recorded Running interval, in a phase that ran
        (Running or Succeeded, not Failed, Pending or Unknown), exit code 0 or not yet exited, and not ended by
        the platform (not_its_own_end). The one reading every act's "it ran" shares."""
        if (
            self.running is None
            or self.phase not in ("Running", "Succeeded")
            or self.exit_code not in (None, 0)
            or self.not_its_own_end
        ):
            return None
        return self.running

    @property
    def failure(self) -> str | None:
        """Why this pod counts against its workload, in a few words, or None: not a healthy run, not one the
        platform ended before it ran, and not simply not started yet (Pending, no exit, no run). A crash with
        no recorded start is a failure too: missing timing is no excuse."""
        if self.healthy_run is not None or self.ended_before_it_ran:
            return None
        if self.phase == "Pending" and self.running is None and self.exit_code is None and not self.evicted:
            return None
        said = f"{self.phase}, exit {self.exit_code}, reason {self.reason}"
        if self.not_its_own_end:
            return f"{said}: {self.not_its_own_end}"
        if self.running is None:
            return f"{said}: no run recorded"
        return said

    def __post_init__(self) -> None:
        require_aware(self)
        try:  # each a device id as the kubelet hands them out (a MIG slice's names no card: not read here)
            for d in self.devices:
                holding.device(d)
        except (holding.DeviceIdError, TypeError) as exc:
            raise ValueError(f"PodObs {self.name}: {exc}") from None


@dataclass(frozen=True)
class WorkloadSnapshot:
    """One observation of a Kueue Workload."""

    at: datetime
    conditions: dict[str, Condition]
    has_admission: bool  # status.admission present
    job_suspended: bool | None = None  # the owning Job's spec.suspend
    cluster_queue: str | None = None  # status.admission.clusterQueue: the tenant Kueue charged
    flavors: tuple[str, ...] = ()  # ResourceFlavors of status.admission.podSetAssignments
    uid: str | None = None  # metadata.uid: a Workload deleted and re-created under its name has another
    # (resource, flavor) of every podSetAssignment: what Kueue charged the quota of, and on which flavor
    admitted: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        require_aware(self)
        # the model's predicates read Conditions by type: anything else is refused here, naming it, not
        # crashed on (or misread) by a clause
        wrong = [
            f"{k!r}: {type(c).__name__}"
            for k, c in dict(self.conditions).items()
            if not isinstance(c, Condition) or c.type != k
        ]
        if wrong:
            raise ValueError(
                f"WorkloadSnapshot at {self.at.isoformat()}: conditions must map each type to its Condition "
                f"(gpu_finops.model.workload.conditions reads status.conditions so); got {wrong}"
            )
        unreserved = workload.admitted_without_reservation(self.conditions)
        if unreserved:
            raise ValueError(
                f"WorkloadSnapshot at {self.at.isoformat()}: {unreserved}, which Kueue never writes (it admits "
                "only with the quota reserved, and resets both together)"
            )

    def is_(self, ctype: str, reason: str | None = None) -> bool:
        return workload.is_true(self.conditions, ctype, reason)


@dataclass(frozen=True)
class WorkloadObs:
    name: str
    tenant: str  # the tenant whose namespace the Workload is in (the act's submission)
    priority_class: str | None = None
    priority: int | None = None  # spec.priority, the value Kueue resolved from the priority class
    snapshots: tuple[WorkloadSnapshot, ...] = ()
    pods: tuple[PodObs, ...] = ()
    job: str | None = None  # the Job its ownerReference names (None: not observed)

    def __post_init__(self) -> None:
        # a history is the looks in the order they were taken: one out of order would let a clause read a
        # later state as an earlier one
        back = [
            f"{a.at.isoformat()} then {b.at.isoformat()}" for a, b in pairwise(self.snapshots) if b.at < a.at
        ]
        if back:
            raise ValueError(f"WorkloadObs {self.name}: snapshots out of time order ({'; '.join(back)})")
        # and each look agrees with the conditions' own change times (gpu_finops.model.workload): a clause
        # ordering events by those times would otherwise order a history that never happened
        disagree = workload.looks_agree_with_transitions(self.snapshots)
        if disagree:
            raise ValueError(
                f"WorkloadObs {self.name}: its looks contradict its conditions' change times "
                f"({'; '.join(v.observed for v in disagree)})"
            )

    def first(self, ctype: str, reason: str | None = None) -> WorkloadSnapshot | None:
        """The first snapshot in which the condition was True (with that reason)."""
        return next((s for s in self.snapshots if s.is_(ctype, reason)), None)

    def since(self, ctype: str) -> datetime | None:
        """When the condition last became True, by its lastTransitionTime in the first snapshot showing it."""
        s = self.first(ctype)
        if s is None:
            return None
        c = s.conditions[ctype]
        return c.last_transition or s.at

    @property
    def admitted_by(self) -> str | None:
        """The ClusterQueue of the first admission seen."""
        return next(
            (
                s.cluster_queue
                for s in self.snapshots
                if workload.is_admitted(s.conditions) and s.cluster_queue
            ),
            None,
        )

    @property
    def uids(self) -> tuple[str | None, ...]:
        """Each distinct metadata.uid seen across the snapshots, in the order first seen."""
        return tuple(dict.fromkeys(s.uid for s in self.snapshots))

    @property
    def last(self) -> WorkloadSnapshot | None:
        return self.snapshots[-1] if self.snapshots else None


@dataclass(frozen=True)
class EventObs:
    reason: str
    kind: str
    name: str
    at: datetime
    message: str = ""

    def __post_init__(self) -> None:
        require_aware(self)
