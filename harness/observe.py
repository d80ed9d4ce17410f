"""Observers: read Kubernetes objects into the plain dataclasses the claim checkers take."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from assertions.observed import EventObs, Interval, NodeObs, PodObs, WorkloadSnapshot
from gpu_finops.clients.karpenter import KarpenterClient, NodeClaimFacts
from gpu_finops.clients.kube import Kube
from gpu_finops.clients.nodes import instance_id_from_provider_id
from gpu_finops.facts import timestamps
from gpu_finops.facts.kube_keys import (
    GPU_RESOURCE,
    KUEUE_GROUP,
    KUEUE_VERSION,
    MIG_RESOURCE_PREFIX,
    SHARED_GPU_RESOURCE,
)
from gpu_finops.model import workload as workload_model

KUEUE = (KUEUE_GROUP, KUEUE_VERSION)


def _count(resources: dict[str, Any] | None, name: str) -> int:
    return int(str((resources or {}).get(name, "0")))


def _mig(resources: dict[str, Any] | None) -> dict[str, int]:
    """nvidia.com/mig-<profile> -> count: the MIG slices a node advertises under the mixed strategy."""
    return {k: int(str(v)) for k, v in (resources or {}).items() if k.startswith(MIG_RESOURCE_PREFIX)}


def is_gpu_node(n: Any) -> bool:
    """A node that advertises whole GPUs, time-sliced replicas of one, or MIG slices."""
    cap = n.status.capacity if n.status else None
    return _count(cap, GPU_RESOURCE) > 0 or _count(cap, SHARED_GPU_RESOURCE) > 0 or any(_mig(cap).values())


def gpu_node_names(kube: Kube) -> list[str]:
    return [n.metadata.name for n in kube.core.list_node().items if is_gpu_node(n)]


def nodeclaims(kube: Kube) -> list[NodeClaimFacts]:
    """Every NodeClaim, read as the reaper reads them (gpu_finops/clients/karpenter.py)."""
    return KarpenterClient(kube.custom).nodeclaims()


def node_obs(kube: Kube, name: str) -> NodeObs:
    n = kube.core.read_node(name)
    claim = next((c for c in nodeclaims(kube) if c.node_name == name), None)
    conds = {c.type: c for c in (n.status.conditions or [])}
    ready = conds.get("Ready")
    return NodeObs(
        name=name,
        created=n.metadata.creation_timestamp,
        labels=dict(n.metadata.labels or {}),
        allocatable_gpu=_count(n.status.allocatable, GPU_RESOURCE),
        capacity_gpu=_count(n.status.capacity, GPU_RESOURCE),
        allocatable_shared=_count(n.status.allocatable, SHARED_GPU_RESOURCE),
        capacity_shared=_count(n.status.capacity, SHARED_GPU_RESOURCE),
        mig_capacity=_mig(n.status.capacity),
        mig_allocatable=_mig(n.status.allocatable),
        instance_id=(
            instance_id_from_provider_id(n.spec.provider_id)
            if (n.spec.provider_id or "").startswith("aws://")
            else None
        ),
        deleted_at=n.metadata.deletion_timestamp,
        uid=n.metadata.uid,
        ready_at=ready.last_transition_time if ready is not None and ready.status == "True" else None,
        nodeclaim=claim.name if claim else None,
        nodeclaim_nodepool=claim.nodepool if claim else None,
        nodeclaim_launched_at=timestamps.parse(claim.launched_at) if claim else None,
        nodeclaim_created=timestamps.parse(claim.created) if claim else None,
        taints=tuple(f"{t.key}:{t.effect}" for t in (n.spec.taints or [])),
    )


def pod_obs(p: Any, output: str | None = None) -> PodObs:
    statuses = (p.status.container_statuses or []) if p.status else []
    start = end = None
    exit_code = reason = None
    for s in statuses:
        if s.state.running is not None:
            start = s.state.running.started_at
        elif s.state.terminated is not None:
            t = s.state.terminated
            start, end, exit_code, reason = t.started_at, t.finished_at, t.exit_code, t.reason
    disruption = next(
        (
            c.reason or "unknown"
            for c in (p.status.conditions or [])
            if c.type == "DisruptionTarget" and c.status == "True"
        ),
        None,
    )
    evicted = disruption is not None or (p.status.reason == "Evicted")
    return PodObs(
        name=p.metadata.name,
        node=p.spec.node_name,
        phase=p.status.phase,
        running=Interval(start, end) if start else None,
        exit_code=exit_code,
        reason=reason or p.status.reason,
        output=output,
        evicted=evicted,
        disruption=disruption,
    )


def job_pods(kube: Kube, namespace: str, job: str) -> list[PodObs]:
    pods = kube.core.list_namespaced_pod(
        namespace, label_selector=f"batch.kubernetes.io/job-name={job}"
    ).items
    return [pod_obs(p) for p in pods]


def workloads(kube: Kube, namespace: str) -> list[dict[str, Any]]:
    return kube.custom.list_namespaced_custom_object(*KUEUE, namespace, "workloads").get("items", [])


def said_conditions(obj: dict[str, Any], detail: str = "reason") -> list[str]:
    """An object's status conditions as a wait's observation says them: `type=status:<detail>` each (its reason,
    or its message where that says more)."""
    return [
        f"{c.get('type')}={c.get('status')}:{c.get(detail) or f'(no {detail})'}"
        for c in (obj.get("status") or {}).get("conditions") or []
    ]


def queue_state(kube: Kube, namespaces: list[str], cluster_queues: list[str]) -> dict[str, Any]:
    """What Kueue says of the namespaces' Workloads (each condition as type=status:reason) and of the
    ClusterQueues (pending, admitted, reserved per flavor and resource): the observation a wait on
    admission reports when it times out, so the reason a Workload waited is in the failure."""
    held = {}
    for ns in namespaces:
        for w in workloads(kube, ns):
            held[f"{ns}/{w['metadata']['name']}"] = said_conditions(w)
    queues = {}
    for name in cluster_queues:
        status = kube.custom.get_cluster_custom_object(*KUEUE, "clusterqueues", name).get("status") or {}
        queues[name] = {
            "pending": status.get("pendingWorkloads"),
            "admitted": status.get("admittedWorkloads"),
            "reserved": {
                f["name"]: {r["name"]: r.get("total") for r in f.get("resources") or []}
                for f in status.get("flavorsReservation") or []
            },
        }
    return {"workloads": held, "cluster_queues": queues}


def job_of(workload: dict[str, Any]) -> str | None:
    owner = next((o for o in workload["metadata"].get("ownerReferences", []) if o["kind"] == "Job"), None)
    return owner["name"] if owner else None


def snapshot(workload: dict[str, Any], at: datetime, job_suspended: bool | None) -> WorkloadSnapshot:
    status = workload.get("status") or {}
    conds = workload_model.conditions(status.get("conditions"))
    admission = status.get("admission") or {}
    pairs = {
        (r, f)
        for ps in admission.get("podSetAssignments") or []
        for r, f in (ps.get("flavors") or {}).items()
    }
    flavors = tuple(sorted({f for _, f in pairs}))
    return WorkloadSnapshot(
        at=at,
        conditions=conds,
        has_admission=bool(admission),
        job_suspended=job_suspended,
        cluster_queue=admission.get("clusterQueue"),
        flavors=flavors,
        admitted=tuple(sorted(pairs)),
        uid=(workload.get("metadata") or {}).get("uid"),
    )


def event_time(e: Any) -> datetime:
    """When a core/v1 event happened: events.k8s.io writers set eventTime, the older recorder (Karpenter's)
    sets only the first and last timestamps."""
    return e.event_time or e.last_timestamp or e.first_timestamp or e.metadata.creation_timestamp


def events_for(kube: Kube, namespace: str | None, names: set[str]) -> list[EventObs]:
    """Events about the named objects. Read through core/v1, which shows events of both APIs: the
    events.k8s.io client refuses the older recorder's events, whose eventTime is null."""
    items = (
        kube.core.list_namespaced_event(namespace).items
        if namespace
        else kube.core.list_event_for_all_namespaces().items
    )
    out = []
    for e in items:
        regarding = e.involved_object
        if regarding is None or regarding.name not in names:
            continue
        out.append(
            EventObs(e.reason or "", regarding.kind or "", regarding.name, event_time(e), e.message or "")
        )
    return out
