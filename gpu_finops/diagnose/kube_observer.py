"""Read what the diagnosis needs from Kubernetes: pods, nodes, GPU holders, Kueue workloads, events.

Objects are read through the kubernetes client and parsed in their JSON shape (camelCase, as the API
serves them), so a V1Pod and a Workload's pod template (a plain dict from the custom objects API) go
through the same parser.
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from typing import Any

from gpu_finops.diagnose.model import (
    EXTENDED_CLAIM,
    ClaimFacts,
    DraDevice,
    DraFacts,
    Holder,
    NodeFacts,
    PodClaim,
    PodFacts,
    Requirement,
    SelectorTerm,
    Taint,
    Toleration,
    WorkloadFacts,
)
from gpu_finops.diagnose.owners import by_owner, owner, owner_uid, workload_of
from gpu_finops.facts.kube_keys import KUEUE_GROUP, KUEUE_VERSION
from gpu_finops.model import dra, holding
from gpu_finops.model import workload as workload_model

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def as_json(obj: Any) -> dict[str, Any]:
    """A kubernetes-client model (V1Pod, V1Node, ...) in the API's JSON shape; dicts pass through."""
    if isinstance(obj, dict):
        return obj
    from kubernetes.client import ApiClient

    return ApiClient().sanitize_for_serialization(obj)


def _count(value: Any) -> int:
    if value is None:
        return 0
    text = str(value)
    if text.isdigit():
        return int(text)
    from kubernetes.utils import parse_quantity

    return int(parse_quantity(text))


def _gpu_of(resources: dict[str, Any] | None) -> dict[str, int]:
    """Extended resources: requests default to limits, and must equal them when both are set."""
    resources = resources or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    out = {}
    for r in sorted({*requests, *limits}):
        if not holding.is_gpu_resource(r):
            continue  # whole cards, replicas, MPS clients and MIG profiles alike
        n = _count(requests.get(r, limits.get(r)))
        if n:
            out[r] = n
    return out


def gpu_requests(spec: dict[str, Any]) -> dict[str, int]:
    """The pod's effective GPU request: max(sum of containers, largest init container), per resource."""
    total: dict[str, int] = {}
    for c in spec.get("containers") or []:
        for r, n in _gpu_of(c.get("resources")).items():
            total[r] = total.get(r, 0) + n
    for c in spec.get("initContainers") or []:
        for r, n in _gpu_of(c.get("resources")).items():
            total[r] = max(total.get(r, 0), n)
    return total


def _requirements(items: list[dict[str, Any]] | None) -> tuple[Requirement, ...]:
    return tuple(
        Requirement(i["key"], i["operator"], tuple(str(v) for v in i.get("values") or ()))
        for i in items or ()
    )


def required_terms(spec: dict[str, Any]) -> tuple[SelectorTerm, ...] | None:
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is None:
        return None
    return tuple(
        SelectorTerm(_requirements(t.get("matchExpressions")), _requirements(t.get("matchFields")))
        for t in required.get("nodeSelectorTerms") or ()
    )


def tolerations(spec: dict[str, Any]) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            t.get("key") or "", t.get("operator") or "Equal", t.get("value") or "", t.get("effect") or ""
        )
        for t in spec.get("tolerations") or ()
    )


def pod_claims(spec: dict[str, Any], status: dict[str, Any] | None = None) -> tuple[PodClaim, ...]:
    """The ResourceClaims a pod references (`spec.resourceClaims`), each with the claim's name: the one it names,
    or the one made from its template as the pod's `status.resourceClaimStatuses` says (None while not made);
    and the scheduler's claim of its extended resources (`status.extendedResourceClaimStatus`), where one was made."""
    made = {
        s.get("name"): s.get("resourceClaimName") for s in (status or {}).get("resourceClaimStatuses") or ()
    }
    out = [
        PodClaim(
            c.get("name") or "",
            c.get("resourceClaimName") or made.get(c.get("name")),
            c.get("resourceClaimTemplateName"),
        )
        for c in spec.get("resourceClaims") or ()
    ]
    extended = ((status or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    if extended:
        out.append(PodClaim(EXTENDED_CLAIM, extended))
    return tuple(out)


def claim_facts(claim: dict[str, Any]) -> ClaimFacts:
    """A ResourceClaim as the diagnosis reads it: its requests (DeviceClass and count), the GPU driver's devices
    allocated to it, the pods it is reserved for; a request it does not read (a prioritized list, allocation mode
    All, a count that is not a whole number from 1) is said as the claim's `problem`, never read as one device."""
    meta, spec, status = claim.get("metadata") or {}, claim.get("spec") or {}, claim.get("status") or {}
    requests, problems = [], []
    tolerations: list[Toleration] = []
    raw = (spec.get("devices") or {}).get("requests") if isinstance(spec.get("devices"), dict) else None
    for r in raw if isinstance(raw, list) else [raw] if raw is not None else []:
        if not isinstance(r, dict):
            problems.append(f"a request {r!r} that is not an object")
            continue
        name = r.get("name")
        one = r.get("exactly")
        if not isinstance(one, dict):
            what = "a prioritized list (firstAvailable)" if r.get("firstAvailable") else "no exactly"
            problems.append(f"request {name}: {what}, which is not read")
            continue
        if one.get("allocationMode") == "All":
            problems.append(f"request {name}: allocation mode All (every matching device), which is not read")
            continue
        count = one.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            problems.append(f"request {name}: count {count!r} is not a whole number from 1")
            continue
        requests.append((str(one.get("deviceClassName") or ""), count))
        tolerations.extend(_tolerations(one.get("tolerations"), f"request {name}", problems))
    alloc = status.get("allocation") if isinstance(status.get("allocation"), dict) else {}
    results = (alloc.get("devices") or {}).get("results") if isinstance(alloc.get("devices"), dict) else None
    results = [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []
    reserved = status.get("reservedFor") if isinstance(status.get("reservedFor"), list) else []
    return ClaimFacts(
        meta.get("namespace") or "",
        meta.get("name") or "",
        tuple(requests),
        tuple(
            (r.get("pool") or "", r.get("device") or "") for r in results if r.get("driver") == dra.GPU_DRIVER
        ),
        tuple(c.get("name") or "" for c in reserved if isinstance(c, dict) and c.get("resource") == "pods"),
        "; ".join(problems) or None,
        tuple(tolerations),
    )


def _tolerations(raw: Any, where: str, problems: list[str]) -> list[Toleration]:
    """A request's device tolerations (as a pod's: key, operator Exists or Equal, value, effect)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        problems.append(f"{where}: tolerations {raw!r} that are not a list of objects")
        return []
    return [
        Toleration(
            t.get("key") or "", t.get("operator") or "Equal", t.get("value") or "", t.get("effect") or ""
        )
        for t in raw
    ]


def serving_classes(classes: list[Any]) -> dict[str, str]:
    """Extended resource -> the DeviceClass the scheduler serves it from: of the classes naming it in
    `extendedResourceName`, the newest (metadata.creationTimestamp), and of those created in the same second the
    first by name (kubernetes v1.36 DeviceClass docs; Kueue's pkg/dra picks the same). Not objects: skipped."""
    chosen: dict[str, tuple[str, str]] = {}
    for c in classes:
        spec, meta = (c.get("spec"), c.get("metadata")) if isinstance(c, dict) else (None, None)
        if not isinstance(spec, dict) or not isinstance(meta, dict) or not spec.get("extendedResourceName"):
            continue
        resource, name, created = (
            str(spec["extendedResourceName"]),
            str(meta.get("name") or ""),
            str(meta.get("creationTimestamp") or ""),
        )
        best = chosen.get(resource)
        if best is None or created > best[1] or (created == best[1] and name < best[0]):
            chosen[resource] = (name, created)
    return {r: name for r, (name, _) in chosen.items()}


def dra_facts(
    slices: list[dict[str, Any]], claims: list[dict[str, Any]], classes: list[dict[str, Any]]
) -> DraFacts:
    """The GPU driver's devices and what each pod holds through each claim (the held-GPU model's reading of
    ResourceSlices and ResourceClaims), every claim, and which extended resource each DeviceClass serves. Slices or
    claims the model refuses are the facts' `problem`, naming what, with no device or holding given."""
    extended = serving_classes(classes)
    try:
        installed = dra.installed(slices)
        reserved = dra.reservations(claims, installed)
    except dra.DraReadError as exc:
        return DraFacts(extended=extended, problem=str(exc))
    devices = tuple(
        DraDevice(
            d.node or "",
            d.pool,
            d.name,
            "gpu" if d.profile is None else "mig",
            tuple(Taint(k, e, v) for k, v, e in d.taints),
        )
        for d in installed.values()
    )
    held: dict[tuple[str, str, str], tuple[int, Fraction]] = {}
    for r in reserved:
        key = (r.node or "", f"{r.held.holder.namespace}/{r.held.holder.pod}", r.claim)
        n, worth = held.get(key, (0, Fraction(0)))
        held[key] = (n + 1, worth + r.held.share)
    return DraFacts(
        devices,
        tuple(claim_facts(c) for c in claims),
        extended,
        {node: int(c.installed) for node, c in dra.node_cards(installed).items()},
        tuple((*k, *v) for k, v in sorted(held.items())),
    )


def pod_facts(pod: Any, *, workload: str | None = None, scheduler_message: str | None = None) -> PodFacts:
    """A V1Pod (or its JSON) as PodFacts. The scheduler message defaults to PodScheduled's, if False."""
    p = as_json(pod)
    meta, spec, status = p.get("metadata") or {}, p.get("spec") or {}, p.get("status") or {}
    scheduled = next((c for c in status.get("conditions") or () if c.get("type") == "PodScheduled"), None)
    condition = (
        (scheduled.get("message") or scheduled.get("reason"))
        if scheduled and scheduled.get("status") == "False"
        else None
    )
    if scheduler_message is None:
        scheduler_message = condition
    facts = template_facts(
        meta.get("namespace") or "",
        meta.get("name") or "",
        spec,
        phase=status.get("phase") or "Pending",
        workload=workload,
        scheduler_message=scheduler_message,
        status=status,
    )
    return replace(facts, condition_message=condition)


def template_facts(
    namespace: str,
    name: str,
    spec: dict[str, Any],
    *,
    phase: str = "Pending",
    workload: str | None = None,
    scheduler_message: str | None = None,
    status: dict[str, Any] | None = None,
) -> PodFacts:
    return PodFacts(
        namespace=namespace,
        name=name,
        phase=phase,
        node_name=spec.get("nodeName"),
        gpu_requests=gpu_requests(spec),
        node_selector=dict(spec.get("nodeSelector") or {}),
        required_terms=required_terms(spec),
        tolerations=tolerations(spec),
        workload=workload,
        scheduler_message=scheduler_message,
        claims=pod_claims(spec, status),
    )


def node_facts(node: Any) -> NodeFacts:
    n = as_json(node)
    meta, spec, status = n.get("metadata") or {}, n.get("spec") or {}, n.get("status") or {}
    ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
    allocatable = status.get("allocatable") or {}
    return NodeFacts(
        name=meta.get("name") or "",
        labels=dict(meta.get("labels") or {}),
        taints=tuple(
            Taint(t["key"], t.get("effect") or "", t.get("value") or "") for t in spec.get("taints") or ()
        ),
        allocatable={r: _count(q) for r, q in allocatable.items() if holding.is_gpu_resource(r)},
        capacity={
            r: _count(q) for r, q in (status.get("capacity") or {}).items() if holding.is_gpu_resource(r)
        },
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready is not None and ready.get("status") == "True",
    )


def holders(pods: list[Any]) -> list[Holder]:
    """Non-terminal pods bound to a node that request GPUs: the scheduler counts them as holding."""
    out = []
    for pod in pods:
        p = as_json(pod)
        spec, status, meta = p.get("spec") or {}, p.get("status") or {}, p.get("metadata") or {}
        if not spec.get("nodeName") or status.get("phase") in TERMINAL_PHASES:
            continue
        gpus = gpu_requests(spec)
        if gpus:
            out.append(Holder(meta.get("namespace") or "", meta["name"], spec["nodeName"], gpus))
    return out


def _int_or_none(value: Any) -> int | None:
    return value if type(value) is int else None


def workload_facts(wl: dict[str, Any], job_suspended: bool | None) -> WorkloadFacts:
    meta, spec, status = wl.get("metadata") or {}, wl.get("spec") or {}, wl.get("status") or {}
    pod_sets = spec.get("podSets") or ()
    template = None
    if pod_sets:
        # The pod set that asks for GPUs stands for the workload (a launcher pod set usually asks none).
        chosen = next(
            (ps for ps in pod_sets if gpu_requests(((ps.get("template") or {}).get("spec")) or {})),
            pod_sets[0],
        )
        template = template_facts(
            meta.get("namespace") or "",
            meta.get("name") or "",
            ((chosen.get("template") or {}).get("spec")) or {},
            workload=meta.get("name"),
        )
    return WorkloadFacts(
        namespace=meta.get("namespace") or "",
        name=meta.get("name") or "",
        queue=spec.get("queueName"),
        conditions=workload_model.conditions(status.get("conditions"), with_times=False),
        job_suspended=job_suspended,
        pod_template=template,
        created=meta.get("creationTimestamp") or None,
        generation=_int_or_none(meta.get("generation")),
    )


def latest_failed_scheduling(events: list[Any]) -> dict[str, str]:
    """pod key -> the newest FailedScheduling message (events.k8s.io/v1 or core/v1 shapes)."""
    newest: dict[str, tuple[str, str]] = {}
    for event in events:
        e = as_json(event)
        if e.get("reason") != "FailedScheduling":
            continue
        regarding = e.get("regarding") or e.get("involvedObject") or {}
        if regarding.get("kind") not in (None, "Pod"):
            continue
        key = f"{regarding.get('namespace')}/{regarding.get('name')}"
        at = str(
            e.get("eventTime")
            or (e.get("series") or {}).get("lastObservedTime")
            or e.get("deprecatedLastTimestamp")
            or e.get("lastTimestamp")
            or (e.get("metadata") or {}).get("creationTimestamp")
            or ""
        )
        message = e.get("note") or e.get("message") or ""
        if key not in newest or at >= newest[key][0]:
            newest[key] = (at, message)
    return {k: m for k, (_, m) in newest.items()}


def _items(resp: Any) -> list[dict[str, Any]]:
    """A list's items as the API served them (`_preload_content=False`): the client's models cost a few ms
    an object to build and as much again to turn back into JSON, which at fleet size (5,000 pods, 1,250
    nodes) was tens of seconds of `diagnose --all`."""
    return json.loads(resp.data).get("items") or []


class PodGone(LookupError):
    """The pod named does not exist (any more)."""


class KubeObserver:
    """Reads pods, nodes, holders, workloads and events through a harness `Kube`."""

    def __init__(self, kube: Any):
        self.kube = kube

    def _pods(self, namespace: str | None) -> list[dict[str, Any]]:
        core = self.kube.core
        resp = (
            core.list_namespaced_pod(namespace, _preload_content=False)
            if namespace
            else core.list_pod_for_all_namespaces(_preload_content=False)
        )
        return _items(resp)

    def _events(self, namespace: str | None) -> list[Any]:
        """Raw JSON: the client's events.k8s.io model rejects an event without eventTime, which every
        event written through core/v1 (kwok's, Karpenter's, older components') reads back as."""
        ev = self.kube.events
        resp = (
            ev.list_namespaced_event(namespace, _preload_content=False)
            if namespace
            else ev.list_event_for_all_namespaces(_preload_content=False)
        )
        return json.loads(resp.data).get("items", [])

    def _workloads(self, namespace: str | None) -> list[dict[str, Any]]:
        custom = self.kube.custom
        try:
            if namespace:
                body = custom.list_namespaced_custom_object(
                    KUEUE_GROUP, KUEUE_VERSION, namespace, "workloads"
                )
            else:
                body = custom.list_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "workloads")
        except Exception as exc:  # Kueue not installed: no workloads, not an error
            if getattr(exc, "status", None) == 404:
                return []
            raise
        return body.get("items", [])

    def _suspended(self, namespace: str | None) -> dict[tuple[str, str], tuple[str | None, bool]]:
        """(namespace, Job name) -> (the Job's UID, its spec.suspend)."""
        batch = self.kube.batch
        resp = (
            batch.list_namespaced_job(namespace, _preload_content=False)
            if namespace
            else batch.list_job_for_all_namespaces(_preload_content=False)
        )
        out = {}
        for j in _items(resp):
            meta = j.get("metadata") or {}
            out[(meta.get("namespace") or "", meta.get("name") or "")] = (
                meta.get("uid") or None,
                bool((j.get("spec") or {}).get("suspend")),
            )
        return out

    def workloads(self, namespace: str | None) -> list[WorkloadFacts]:
        suspended = self._suspended(namespace)
        out = []
        for wl in self._workloads(namespace):
            ns = (wl.get("metadata") or {}).get("namespace") or ""
            job = owner(wl, "Job")
            uid, suspend = suspended.get((ns, job), (None, None)) if job else (None, None)
            # a Job of that name with another UID is a new one: the Workload's own Job is gone
            wl_uid = owner_uid(wl, "Job")
            out.append(workload_facts(wl, None if uid and wl_uid and uid != wl_uid else suspend))
        return out

    def dra(self) -> DraFacts | None:
        """The GPU driver's ResourceSlices, every ResourceClaim and the DeviceClasses; None where resource.k8s.io/v1
        is not served (Kubernetes before 1.34)."""
        from kubernetes.client.exceptions import ApiException

        try:
            got = {
                plural: self.kube.custom.list_cluster_custom_object(*dra.API, plural).get("items", [])
                for plural in ("resourceslices", "resourceclaims", "deviceclasses")
            }
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return dra_facts(got["resourceslices"], got["resourceclaims"], got["deviceclasses"])

    def nodes(self) -> list[NodeFacts]:
        return [node_facts(n) for n in _items(self.kube.core.list_node(_preload_content=False))]

    def observe(
        self, namespace: str | None
    ) -> tuple[list[PodFacts], list[NodeFacts], list[Holder], list[WorkloadFacts]]:
        """Pending pods of `namespace` (all when None), every node, every GPU holder, the workloads."""
        all_pods = self._pods(None)
        wls = self.workloads(namespace)
        owners = by_owner(self._workloads(namespace))
        messages = latest_failed_scheduling(self._events(namespace))
        pods = []
        for p in all_pods:
            meta = p.get("metadata") or {}
            if namespace and meta.get("namespace") != namespace:
                continue
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            pods.append(pod_facts(p, workload=workload_of(p, owners), scheduler_message=messages.get(key)))
        return pods, self.nodes(), holders(all_pods), wls

    def pod(self, namespace: str, name: str) -> PodFacts:
        """One pod by name, with its workload and newest FailedScheduling message; PodGone if absent."""
        from kubernetes.client.exceptions import ApiException

        try:
            p = as_json(self.kube.core.read_namespaced_pod(name, namespace))
        except ApiException as exc:
            if exc.status == 404:
                raise PodGone(f"pod {namespace}/{name} not found: it does not exist or is gone") from exc
            raise
        workload = workload_of(p, by_owner(self._workloads(namespace)))
        message = latest_failed_scheduling(self._events(namespace)).get(f"{namespace}/{name}")
        return pod_facts(p, workload=workload, scheduler_message=message)
