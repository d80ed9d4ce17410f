"""Who held which node's GPUs, and when: pods' GPU-holding intervals read from Kubernetes.

A pod holds its node's GPUs from the time the kubelet accepted it (`status.startTime`: devices are
allocated to it from then) until its last container finished; a pod still running holds them still
(`end` None). What it holds is worth `equivalents` cards, as the held-GPU model reads its node
(gpu_finops.model.holding.NodeGpus): a whole card 1, a time-sliced replica or an MPS client 1/replicas
(GFD's `nvidia.com/gpu.replicas`), a MIG slice its compute slices over the node's.

The tenant is the namespace's `gpu-finops.io/tenant` label; else the Kueue ClusterQueue behind the
pod's LocalQueue (`kueue.x-k8s.io/queue-name`: on the pod, or, as Kueue's Job integration has it, on the
Job that controls the pod: its pods do not carry the label); else the namespace itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, RootModel, Strict

from gpu_finops.facts import file_schema, input_files, json_text
from gpu_finops.facts.errors import FILE, ConfigError
from gpu_finops.facts.file_schema import AwareTime, FileModel, Label, Text
from gpu_finops.facts.kube_keys import (
    KUEUE_GROUP,
    KUEUE_VERSION,
    LABEL_QUEUE_NAME,
    LABEL_TENANT,
    MIG_RESOURCE_PREFIX,
)
from gpu_finops.facts.private_files import write_private
from gpu_finops.model import dra, holding

TENANT_LABEL, QUEUE_LABEL = LABEL_TENANT, LABEL_QUEUE_NAME
KUEUE = (KUEUE_GROUP, KUEUE_VERSION)


@dataclass(frozen=True)
class GpuHolding:
    """One pod's hold on `gpus` GPU resources of `node` over [start, end)."""

    namespace: str
    tenant: str
    pod: str
    node: str
    gpus: (
        int  # the pod's effective nvidia.com/gpu (or .shared replica) limit: what the device plugin allocated
    )
    start: datetime
    end: datetime | None = None  # None: still holding
    replicas: int = 1  # time-slicing replicas per physical card on the node
    devices: tuple[str, ...] = ()  # device ids the kubelet gave it (pod-resources), where they are known
    # cards' worth of what it holds, where its node was read as the model reads one (a MIG slice's share is
    # not 1/replicas); None in holdings recorded before, read as gpus / replicas
    equivalents: Fraction | None = None
    resources: tuple[tuple[str, int], ...] = ()  # (resource, devices) it asked for: nvidia.com/mig-1g.10gb, 2
    # the ResourceClaims its devices were allocated through (Dynamic Resource Allocation): where they are, its
    # `devices` are the claims' allocated devices and `equivalents` their parts of cards (gpu_finops.model.dra)
    claims: tuple[str, ...] = ()

    @property
    def physical_gpus(self) -> Fraction:
        """Physical cards held: a replica holds 1/replicas of its card, a MIG slice its share of one."""
        if self.equivalents is not None:
            return self.equivalents
        return holding.physical_gpus(self.gpus, self.replicas)

    def held(self) -> list[holding.HeldGpu]:
        """Each device the kubelet gave this pod, as the model holds a GPU: card, holder, share (empty
        where the node's pod-resources answer was not read). Whole cards and replicas: a MIG slice's share
        is its offer's (holding.held with the node's Offer)."""
        if self.equivalents is not None and self.equivalents != holding.physical_gpus(
            self.gpus, self.replicas
        ):
            raise holding.DeviceIdError(
                f"{self.namespace}/{self.pod} holds {self.resources} worth {self.equivalents} cards, not whole cards "
                "or replicas: read its devices with holding.held and its node's Offer"
            )
        return holding.held(
            holding.Holder(self.namespace, self.pod, self.tenant), self.devices, self.replicas
        )

    def seconds_within(self, start: datetime, end: datetime) -> Fraction:
        """Seconds of [start, end) this pod held its GPUs (exact, whole microseconds)."""
        lo = max(start, self.start)
        hi = min(end, self.end) if self.end is not None else end
        if hi <= lo:
            return Fraction(0)
        delta = hi - lo
        return Fraction(delta.days * 86400 * 10**6 + delta.seconds * 10**6 + delta.microseconds, 10**6)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["start"] = self.start.isoformat()
        data["end"] = self.end.isoformat() if self.end else None
        data["devices"] = list(self.devices)
        data["equivalents"] = None if self.equivalents is None else str(self.equivalents)
        data["resources"] = dict(self.resources)
        data["claims"] = list(self.claims)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GpuHolding:
        return cls(
            **{
                **data,
                "start": _ts(data["start"]),
                "end": _ts(data.get("end")),
                "devices": tuple(data.get("devices") or ()),
                "equivalents": None if data.get("equivalents") is None else Fraction(data["equivalents"]),
                "resources": tuple(sorted((data.get("resources") or {}).items())),
                "claims": tuple(data.get("claims") or ()),
            }
        )


def _ts(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


# a Kubernetes quantity (apimachinery's resource.Quantity grammar): a signed decimal and one suffix
QUANTITY = re.compile(
    r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?", re.ASCII
)


def _devices(quantity: Any, resource: str) -> int:
    """A GPU resource's quantity as the API server keeps it ("2", "1k"): a whole number of devices."""
    from kubernetes.utils import parse_quantity

    if not QUANTITY.fullmatch(str(quantity)):  # parse_quantity alone takes Python's forms too: 1_0, ' 2'
        raise ValueError(f"{resource} quantity {quantity!r} is not a Kubernetes quantity")
    try:
        value = parse_quantity(str(quantity))
    except ValueError:
        raise ValueError(f"{resource} quantity {quantity!r} is not a Kubernetes quantity") from None
    if value != value.to_integral_value() or value < 0:
        raise ValueError(f"{resource} quantity {quantity!r} is not a whole number of devices")
    return int(value)


def _gpu_limits(container: Any) -> dict[str, int]:
    """The GPU resources a container's limits ask for: nvidia.com/gpu, a renamed share of it
    (nvidia.com/gpu.shared) or MIG profiles (nvidia.com/mig-1g.10gb); a node advertises what its GFD labels
    and capacity say one of them is worth."""
    limits = (container.resources.limits or {}) if container.resources else {}
    counts = {r: _devices(q, r) for r, q in limits.items() if holding.is_gpu_resource(r)}
    return {r: n for r, n in counts.items() if n}


def effective_requests(pod: Any) -> dict[str, int]:
    """What the scheduler counts, per GPU resource: the app containers' sum plus the sidecars' (init
    containers with restartPolicy Always, which run beside them), or, if larger, any one init container
    with the sidecars started before it."""
    sidecars: dict[str, int] = {}
    peak: dict[str, int] = {}
    for c in pod.spec.init_containers or []:
        asks = _gpu_limits(c)
        if getattr(c, "restart_policy", None) == "Always":
            for r, n in asks.items():
                sidecars[r] = sidecars.get(r, 0) + n
            continue
        for r, n in asks.items():
            peak[r] = max(peak.get(r, 0), n + sidecars.get(r, 0))
    out = dict(sidecars)
    for c in pod.spec.containers or []:
        for r, n in _gpu_limits(c).items():
            out[r] = out.get(r, 0) + n
    for r, n in peak.items():
        out[r] = max(out.get(r, 0), n)
    return out


def effective_gpus(pod: Any) -> int:
    """GPU devices of every kind the scheduler counts for the pod."""
    return sum(effective_requests(pod).values())


def holding_interval(pod: Any) -> tuple[datetime, datetime | None] | None:
    """[start, end) of a pod's hold on its devices; None for a pod never started on a node."""
    status = pod.status
    if status is None or status.start_time is None or not pod.spec.node_name:
        return None
    end = None
    if status.phase in ("Succeeded", "Failed"):
        finished = [
            s.state.terminated.finished_at
            for s in (status.container_statuses or [])
            if s.state is not None and s.state.terminated is not None and s.state.terminated.finished_at
        ]
        end = max(finished) if finished else status.start_time
    return status.start_time, end


def tenant_of(namespace: str, queue: str | None, ns_labels: dict[str, str], cluster_queues: dict) -> str:
    """Namespace label, else the ClusterQueue of the pod's LocalQueue, else the namespace."""
    if ns_labels.get(TENANT_LABEL):
        return ns_labels[TENANT_LABEL]
    if queue and (namespace, queue) in cluster_queues:
        return cluster_queues[(namespace, queue)]
    return namespace


def controlling_job(pod: Any) -> str | None:
    """The name of the batch/v1 Job that controls the pod, if one does."""
    for ref in pod.metadata.owner_references or ():
        if ref.controller and ref.kind == "Job" and ref.api_version == "batch/v1":
            return ref.name
    return None


def queue_of(pod: Any, job_queues: dict[tuple[str, str], str]) -> str | None:
    """The pod's LocalQueue: its own queue-name label, else its controlling Job's (Kueue labels the Job)."""
    own = (pod.metadata.labels or {}).get(QUEUE_LABEL)
    if own:
        return own
    job = controlling_job(pod)
    return job_queues.get((pod.metadata.namespace, job)) if job else None


def holdings_from_objects(
    pods: list[Any],
    namespace_labels: dict[str, dict[str, str]],
    node_gpus: dict[str, int | holding.NodeGpus | holding.NodeGpusError],
    cluster_queues: dict[tuple[str, str], str],
    job_queues: dict[tuple[str, str], str] | None = None,
    reserved: Mapping[tuple[str, str], list[dra.Reservation]] | None = None,
) -> list[GpuHolding]:
    """Pure: GPU holdings from pod objects and the lookups they need (`node_gpus`: node -> its cards as the
    model reads them, why it could not be read (raised naming the pod, for a pod on it), or the replicas per
    card of a node that shares only by replicas; a pod on a node not listed (gone since) is read as whole cards:
    no node-interval of it is priced, so it is never split; `job_queues`:
    (namespace, Job) -> the Job's queue-name label). A pod asking for a resource its node does not advertise
    raises NodeGpusError naming the pod. `reserved`: (namespace, pod) -> the GPU devices ResourceClaims
    allocate to it (`dra.by_pod`): such a pod holds those devices, whether it asked for them through a claim or
    as `nvidia.com/gpu` served by DRA, and its limits are not read again."""
    out = []
    for pod in pods:
        ns, node = pod.metadata.namespace, pod.spec.node_name
        interval = holding_interval(pod)
        uid = getattr(pod.metadata, "uid", None)
        # a claim reserved for an earlier pod of the same name (another UID) is not this pod's; one this pod
        # references itself, reserved for another UID, is a contradiction (the scheduler reserves a pod's
        # claims for it before it binds)
        by_name = (reserved or {}).get((ns, pod.metadata.name), ())
        claimed = [r for r in by_name if not uid or r.pod_uid == uid]
        mine = _referenced_claims(pod)
        foreign = sorted({r.claim for r in by_name if uid and r.pod_uid != uid and r.claim in mine})
        if foreign and interval is not None:
            raise dra.DraReadError(
                f"pod {ns}/{pod.metadata.name} (UID {uid}) references ResourceClaim(s) {', '.join(foreign)}, "
                "which are reserved for another pod of its name"
            )
        if claimed and interval is not None:
            queue = queue_of(pod, job_queues or {})
            out.append(
                _claimed(
                    pod, claimed, interval, tenant_of(ns, queue, namespace_labels.get(ns, {}), cluster_queues)
                )
            )
            continue
        requests = effective_requests(pod)
        gpus = sum(requests.values())
        if gpus <= 0 or interval is None:
            continue
        queue = queue_of(pod, job_queues or {})
        read = node_gpus.get(node, 1)
        if isinstance(read, holding.NodeGpusError):
            raise holding.NodeGpusError(f"pod {ns}/{pod.metadata.name}: {read}")
        if isinstance(read, holding.NodeGpus):
            try:
                equivalents: Fraction | None = read.equivalents(requests)
            except holding.NodeGpusError as exc:
                raise holding.NodeGpusError(f"pod {ns}/{pod.metadata.name} on node {node}: {exc}") from None
            replicas = max((read.offer(r).replicas for r in requests), default=1)
        else:
            equivalents, replicas = None, read
        out.append(
            GpuHolding(
                namespace=ns,
                tenant=tenant_of(ns, queue, namespace_labels.get(ns, {}), cluster_queues),
                pod=pod.metadata.name,
                node=node,
                gpus=gpus,
                start=interval[0],
                end=interval[1],
                replicas=replicas,
                equivalents=equivalents,
                resources=tuple(sorted(requests.items())),
            )
        )
    return sorted(out, key=lambda h: (h.node, h.start, h.namespace, h.pod))


def _referenced_claims(pod: Any) -> set[str]:
    """The ResourceClaims a pod names: in its spec, or made from its templates as its status says."""
    spec, status = pod.spec, getattr(pod, "status", None)
    named = {getattr(c, "resource_claim_name", None) for c in getattr(spec, "resource_claims", None) or ()}
    made = {
        getattr(c, "resource_claim_name", None)
        for c in getattr(status, "resource_claim_statuses", None) or ()
    }
    extended = getattr(getattr(status, "extended_resource_claim_status", None), "resource_claim_name", None)
    return {n for n in (*named, *made, extended) if n}


def _claimed(
    pod: Any, claimed: list[dra.Reservation], interval: tuple[datetime, datetime | None], tenant: str
) -> GpuHolding:
    """A pod's holding of the GPU devices its ResourceClaims allocate: one per device, each worth its part of a
    card (a claim shared by several pods split among them). Raises DraReadError, naming the pod, where a device
    is on another node than the pod: an allocation is for the node the pod was scheduled to."""
    ns, name, node = pod.metadata.namespace, pod.metadata.name, pod.spec.node_name
    elsewhere = sorted({f"{r.held.device.id} on {r.node}" for r in claimed if r.node != node})
    if elsewhere:
        raise dra.DraReadError(
            f"pod {ns}/{name} on node {node}: its claims allocate device(s) of another node ({', '.join(elsewhere)})"
        )
    return GpuHolding(
        namespace=ns,
        tenant=tenant,
        pod=name,
        node=node,
        gpus=len(claimed),
        start=interval[0],
        end=interval[1],
        devices=tuple(r.held.device.id for r in claimed),
        equivalents=sum((r.held.share for r in claimed), Fraction(0)),
        claims=tuple(sorted({r.claim for r in claimed})),
    )


def read_node_gpus(node: Any, *, strict: bool = True) -> holding.NodeGpus:
    """A node's cards and offers as the model reads them (its catalog entry where no label gives its cards).
    `strict=False`: devices not adding up to the cards are the node's `problem`, not an error."""
    labels = dict(node.metadata.labels or {})
    capacity = dict((node.status.capacity or {}) if node.status else {})
    return holding.read_node(node.metadata.name, labels, capacity, strict=strict)


def _read_or_error(node: Any) -> holding.NodeGpus | holding.NodeGpusError:
    """The node as `read_node_gpus` reads it, or why it cannot be read: raised only when a pod on it is
    priced, so one node between two configs does not stop every other node's holdings."""
    try:
        return read_node_gpus(node, strict=False)
    except holding.NodeGpusError as exc:
        return exc


def gpu_holdings(kube: Any) -> list[GpuHolding]:
    """Every pod in the cluster that holds (or held, and still exists) GPUs on a node. Reads pods,
    namespaces, nodes, Kueue LocalQueues and the Jobs labelled with a queue (the in-cluster collector's
    ClusterRole grants exactly these, read-only: infra/objects/monitoring.py)."""
    pods = kube.core.list_pod_for_all_namespaces().items
    namespace_labels = {
        n.metadata.name: dict(n.metadata.labels or {}) for n in kube.core.list_namespace().items
    }
    node_gpus: dict[str, int | holding.NodeGpus | holding.NodeGpusError] = {
        n.metadata.name: _read_or_error(n) for n in kube.core.list_node().items
    }
    cluster_queues: dict[tuple[str, str], str] = {}
    from kubernetes.client.exceptions import ApiException

    try:
        lqs = kube.custom.list_cluster_custom_object(*KUEUE, "localqueues").get("items", [])
    except ApiException as exc:
        if exc.status != 404:
            raise
        lqs = []  # Kueue not installed: tenants come from namespace labels alone
    for lq in lqs:
        meta, spec = lq["metadata"], lq.get("spec") or {}
        if spec.get("clusterQueue"):
            cluster_queues[(meta["namespace"], meta["name"])] = spec["clusterQueue"]
    job_queues = {
        (j.metadata.namespace, j.metadata.name): j.metadata.labels[QUEUE_LABEL]
        for j in kube.batch.list_job_for_all_namespaces(label_selector=QUEUE_LABEL).items
    }
    reserved = dra.by_pod(
        dra.reservations(_dra_list(kube, "resourceclaims"), dra.installed(_dra_list(kube, "resourceslices")))
    )
    return holdings_from_objects(pods, namespace_labels, node_gpus, cluster_queues, job_queues, reserved)


def _dra_list(kube: Any, plural: str) -> list[dict[str, Any]]:
    """Every object of a resource.k8s.io/v1 kind; none where the API is not served (Kubernetes before 1.34)."""
    from kubernetes.client.exceptions import ApiException

    try:
        return kube.custom.list_cluster_custom_object(*dra.API, plural).get("items", [])
    except ApiException as exc:
        if exc.status != 404:
            raise
        return []


class HoldingEntry(FileModel):
    """One holding as `write_holdings_file` writes it."""

    namespace: Label
    tenant: Label
    pod: Label
    node: Label
    gpus: Annotated[int, Strict(), Field(ge=1)]
    start: AwareTime
    end: AwareTime | None = None
    replicas: Annotated[int, Strict(), Field(ge=1)] = 1
    devices: tuple[Text, ...] = ()
    equivalents: (
        Annotated[str, Strict(), Field(pattern=r"^(0|[1-9][0-9]{0,8})(/[1-9][0-9]{0,8})?$")] | None
    ) = None
    resources: dict[Label, Annotated[int, Strict(), Field(ge=1)]] = Field(default_factory=dict)
    claims: tuple[Label, ...] = ()


class HoldingsFile(RootModel[list[HoldingEntry]]):
    """A holdings file: a JSON list of holdings."""


def holdings_from_data(data: Any, source: str) -> list[GpuHolding]:
    """Holdings as `write_holdings_file` and the store write them, checked against HoldingsFile; a holding
    that ends before it starts is refused naming it."""
    entries = file_schema.validate(HoldingsFile, data, source, input_files.kind("holdings file")).root
    holdings = [GpuHolding.from_dict(e.model_dump()) for e in entries]
    for n, h in enumerate(holdings, 1):
        why = _inconsistent(h)
        if why:
            raise ConfigError(
                FILE,
                f"[{n}]: holding {h.namespace}/{h.pod} {why}",
                source,
                input_files.kind("holdings file"),
            )
    return holdings


def _inconsistent(h: GpuHolding) -> str | None:
    """What a holding says that no collector writes: an end before its start, resources that are not GPU
    resources or do not add up to its devices, a share of cards of none or more than one card per device,
    MIG resources without their share, device ids the device plugin would not write or more of them than
    its devices."""
    if h.end is not None and h.end < h.start:
        return f"ends ({h.end}) before it starts ({h.start})"
    if h.resources:
        foreign = sorted(r for r, _ in h.resources if not holding.is_gpu_resource(r))
        if foreign:
            return f"asks for {foreign}, which are not GPU resources"
        if sum(c for _, c in h.resources) != h.gpus:
            return f"has resources {dict(h.resources)} adding up to {sum(c for _, c in h.resources)} devices, not its gpus {h.gpus}"
    if h.equivalents is not None and not 0 < h.equivalents <= h.gpus:
        return f"has equivalents {h.equivalents}: each of its {h.gpus} device(s) is worth more than nothing and at most a card"
    if h.claims and (h.equivalents is None or len(set(h.claims)) != len(h.claims) or h.resources):
        return (
            f"holds through claims {list(h.claims)} without its devices' worth (equivalents), with a claim twice, "
            "or with resources as well: a holding through claims has distinct claims, its equivalents and no resources"
        )
    if h.equivalents is None and any(r.startswith(MIG_RESOURCE_PREFIX) for r, _ in h.resources):
        return "holds MIG slices without their share of a card (equivalents)"
    try:
        held = holding.devices(list(h.devices))
    except holding.DeviceIdError as exc:
        return f"has {exc}"
    if len(held) > h.gpus or len(set(h.devices)) != len(h.devices):
        return f"has {len(h.devices)} device ids ({len(set(h.devices))} distinct) for {h.gpus} device(s)"
    return None


def holdings_from_json(text: str, source: str) -> list[GpuHolding]:
    """A holdings list from JSON text (the store's cell), as `holdings_from_data`."""
    try:
        data = json_text.loads(text)
    except json_text.JSONTextError as exc:
        raise ConfigError(FILE, f"not JSON ({exc})", source, input_files.kind("holdings file")) from None
    return holdings_from_data(data, source)


def read_holdings_file(path: str | Path) -> list[GpuHolding]:
    """A JSON list of holdings (what `write_holdings_file` writes), as `holdings_from_data`."""
    return holdings_from_data(input_files.read_json(Path(path), "holdings file"), str(path))


def write_holdings_file(holdings: list[GpuHolding], path: str | Path) -> None:
    # who holds which GPU, by pod and tenant: ours alone (0600 from creation, never through a symlink)
    write_private(Path(path), json.dumps([h.to_dict() for h in holdings], indent=1).encode())


def pod_resources_devices(body: dict[str, Any]) -> dict[tuple[str, str], tuple[str, ...]]:
    """The kubelet pod-resources v1 `List` answer -> the GPU device ids per (namespace, pod), as the
    kubelet gave them (`GPU-<uuid>`, `GPU-<uuid>::<replica>` for a replica, `MIG-<uuid>` for a MIG slice). An id the
    device plugin would not write raises `holding.DeviceIdError`: the answer is not read in part."""
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for entry in body.get("podResources") or ():
        ids = [
            d
            for c in entry.get("containers") or ()
            for dev in c.get("devices") or ()
            if holding.is_gpu_resource(str(dev.get("resourceName", "")))
            for d in dev.get("deviceIds") or ()
        ]
        if ids:
            holding.devices(ids)  # an id the device plugin would not write raises DeviceIdError, naming it
            out[(entry["namespace"], entry["name"])] = tuple(ids)
    return out


def read_pod_resources(url: str, node: str, timeout: float = 5.0) -> dict[tuple[str, str], tuple[str, ...]]:
    """One node's pod-resources answer over HTTP (the local target's simulated kubelets serve it at
    `URL/v1/nodes/NODE/pod-resources`; a real kubelet serves it on a node-local gRPC socket only)."""
    import urllib.request

    with urllib.request.urlopen(f"{url.rstrip('/')}/v1/nodes/{node}/pod-resources", timeout=timeout) as r:
        return pod_resources_devices(json.loads(r.read()))


def with_devices(holdings: list[GpuHolding], url: str) -> list[GpuHolding]:
    """Holdings with the device ids the kubelet's pod-resources answer gives each pod still holding.
    A node that does not answer raises: the caller records nothing rather than half an answer."""
    from dataclasses import replace

    answers = {
        node: read_pod_resources(url, node) for node in sorted({h.node for h in holdings if h.end is None})
    }
    return [
        replace(h, devices=answers.get(h.node, {}).get((h.namespace, h.pod), h.devices)) for h in holdings
    ]
