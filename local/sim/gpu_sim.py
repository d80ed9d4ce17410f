"""The GPU simulator for kwok GPU nodes: DCGM-shaped series per GPU per node, driven by what the pods on
each node declare, exported only where the metrics CSV exports them (as dcgm-exporter does).

A Running pod that holds a GPU declares its load with annotations: `gpu-finops.io/gpu-profile` (a
workload kind from `local.sim.profiles`: resident-model, data-starved, busy-trainer,
small-batch-server) gives every DCGM field that kind's value; `gpu-finops.io/sm-active` sets SM_ACTIVE
(alone, the other fields follow from it). The ledger's behaviours are profiles too: training-stepping,
training-stalled (busy by the metric, idle by physics), serving-idle, serving-busy; with the workload
annotations of `local.sim.workload_sim` the pods also export the ledger's per-class measure inputs.

On a node whose GPUs the DRA driver allocates, a pod holds the devices its ResourceClaims allocate (read from
the claims, as dcgm-exporter reads them from the kubelet with KUBERNETES_ENABLE_DRA), and its series carry the
claim's `dra_*` labels. Which physical card a pod holds comes from the simulated device plugin's allocation (the kubelet's
pod-resources answer: `GPU-<uuid>` or `GPU-<uuid>::<replica>`), so the time-sliced holders of one card are
all reported on that card, in the label shape dcgm-exporter 4.8.3 gives them with KUBERNETES_VIRTUAL_GPUS
(local/sim/dcgm_sim.py); a pod the allocation does not show yet takes the first card nobody holds. On a node
the simulated MIG manager cut, each GPU instance is reported apart, with its card's UUID, its profile and
instance id and its holder's load (`MIG-<uuid>`), and without GPU_UTIL, as dcgm-exporter reports MIG.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from gpu_finops.clients.kube import Kube
from gpu_finops.cost.gpu_holdings import pod_resources_devices
from gpu_finops.cost.gpu_holdings import read_pod_resources as pod_resources
from gpu_finops.facts import dcgm
from gpu_finops.facts.catalog import MIG_CARDS
from gpu_finops.facts.kube_keys import (
    ANNOTATION_GPU_PROFILE,
    ANNOTATION_SM_ACTIVE,
    GPU_ALLOCATION_DRA,
    GPU_RESOURCE,
    LABEL_GPU_ALLOCATION,
    LABEL_GPU_COUNT,
    LABEL_INSTANCE_TYPE,
    LABEL_MIG_CONFIG,
    LABEL_MIG_CONFIG_STATE,
    LABEL_MIG_STRATEGY,
)
from gpu_finops.model import holding
from harness.observe import is_gpu_node
from local.sim.dcgm_sim import DcgmSimulator, SimGpu
from local.sim.device_plugin import gpu_uuid, mig_layout, mig_slices, physical_gpus
from local.sim.pacing import CACHED, next_wait
from local.sim.profiles import UNHELD, profile_values
from local.sim.workload_sim import WorkloadSimulator

log = logging.getLogger(__name__)

SM_ACTIVE_ANNOTATION = ANNOTATION_SM_ACTIVE  # kept: act 6 and older callers name it here
# (namespace, pod) -> the device IDs it holds, one per physical card: `GPU-<uuid>` for a whole card, its
# first replica `GPU-<uuid>::<n>` for a time-sliced one (the exporter's `vgpu` label is that `n`)
PodDevices = dict[tuple[str, str], tuple[str, ...]]


def devices_from_pod_resources(body: dict[str, Any]) -> PodDevices:
    """The kubelet pod-resources v1 List answer, as the collector reads it (gpu_finops.cost.gpu_holdings), ->
    the device IDs per pod, one per physical card."""
    return {key: _one_per_card(ids) for key, ids in pod_resources_devices(body).items()}


def _one_per_card(ids: tuple[str, ...]) -> tuple[str, ...]:
    by_card: dict[str, str] = {}
    for d in ids:  # a MIG slice named by its own UUID is kept by that UUID: the node maps it to its card
        by_card.setdefault(holding.device(d).card or d.partition(holding.REPLICA_SEPARATOR)[0], d)
    return tuple(by_card.values())


def holder_values(annotations: dict[str, str], pod: str = "") -> dict[str, float]:
    """DCGM values for a GPU held by a pod with these annotations (see the module docstring)."""
    profile = annotations.get(ANNOTATION_GPU_PROFILE)
    sm_text = annotations.get(ANNOTATION_SM_ACTIVE)
    if profile:
        try:
            values = profile_values(profile)
        except ValueError as exc:  # a typo in an annotation: said, and the pod reports the default load
            log.error("pod %s: %s", pod, exc)
        else:
            if sm_text is not None:
                values[dcgm.SM_ACTIVE] = float(sm_text)
            return values
    sm = float(sm_text) if sm_text is not None else 0.5
    return {
        dcgm.GPU_UTIL: 100.0,
        dcgm.SM_ACTIVE: sm,
        dcgm.SM_OCCUPANCY: round(sm * 0.6, 4),
        dcgm.POWER_USAGE: 80.0 + 270.0 * sm,
        dcgm.SM_CLOCK: 1980.0,
        dcgm.FB_USED: 12000.0,
        dcgm.FB_FREE: 34068.0,
    }


def _holds_gpu(pod: Any) -> bool:
    return bool(getattr(pod.spec, "resource_claims", None)) or any(
        any(holding.is_gpu_resource(r) for r in (c.resources.limits or {}))
        for c in pod.spec.containers
        if c.resources
    )


# (namespace, pod) -> card UUID -> (claim namespace, claim, driver, pool, device): the DRA device a pod holds
DraLabels = dict[tuple[str, str], dict[str, tuple[str, str, str, str, str]]]


def dra_holdings(
    slices: list[dict[str, Any]], claims: list[dict[str, Any]], uids: dict[tuple[str, str], str] | None = None
) -> tuple[dict[str, PodDevices], DraLabels]:
    """What the kubelet's pod-resources answer gives dcgm-exporter under DRA: node -> the devices each pod holds
    through its claims (as `GPU-<uuid>` ids), and the claim and device each card is held through. `uids`:
    (namespace, pod) -> the pod's UID; a reservation for another UID (an earlier pod of the name) is nobody's."""
    from gpu_finops.model import dra

    devices = dra.installed(slices)
    by_uuid = {d.uuid: d for d in devices.values()}
    out: dict[str, PodDevices] = {}
    labels: DraLabels = {}
    for r in dra.reservations(claims, devices):
        key = (r.held.holder.namespace, r.held.holder.pod)
        if uids is not None and uids.get(key) != r.pod_uid:
            continue
        out.setdefault(r.node or "", {}).setdefault(key, ())
        out[r.node or ""][key] += (r.held.device.id,)
        d = by_uuid[r.held.device.id]
        labels.setdefault(key, {})[d.card] = (key[0], r.claim, d.driver, d.pool, d.name)
    return out, labels


def gpus_from_cluster(
    nodes: list[Any],
    pods: list[Any],
    devices: dict[str, PodDevices] | None = None,
    dra: DraLabels | None = None,
) -> list[SimGpu]:
    """One SimGpu per physical GPU on each GPU node, or one per holder of a shared card; a GPU held by a
    Running pod reports that pod's load. `devices`: node -> the device plugin's (or the DRA claims') allocation
    on it; `dra`: the claim each pod holds a card through (its series' `dra_*` labels)."""
    running: dict[str, list[Any]] = {}
    for p in pods:
        if p.status.phase == "Running" and p.spec.node_name and _holds_gpu(p):
            running.setdefault(p.spec.node_name, []).append(p)
    out = []
    for n in nodes:
        name = n.metadata.name
        labels = n.metadata.labels or {}
        # physical cards: the instance type's (GFD's count is the slices under MIG single), else GFD's count
        # (time-slicing multiplies what the node advertises, not the cards)
        count = physical_gpus(labels.get(LABEL_INSTANCE_TYPE)) or int(
            labels.get(LABEL_GPU_COUNT) or str((n.status.capacity or {}).get(GPU_RESOURCE, "0"))
        )
        allocated = (devices or {}).get(name) or {}
        instances = _slices(name, count, labels)
        if instances:  # a MIG node: series per GPU instance, as dcgm-exporter reports one
            model = MIG_CARDS[labels[LABEL_INSTANCE_TYPE]][0].replace("-", " ")  # GFD's product, DCGM's name
            out.extend(_mig_gpus(name, instances, running.get(name, []), allocated, model))
            continue
        out.extend(_card_gpus(name, count, running.get(name, []), allocated, dra or {}))
    return out


def _card_gpus(
    name: str, count: int, running: list[Any], allocated: PodDevices, dra: DraLabels | None = None
) -> list[SimGpu]:
    """One SimGpu per physical card of a node without MIG, or one per holder of a shared card."""
    out = []
    index_of = {gpu_uuid(name, i): i for i in range(count)}  # the UUIDs the device plugin hands out
    on_card: dict[int, list[Any]] = {i: [] for i in range(count)}
    replica: dict[tuple[str, int], str] = {}  # (pod key, card) -> the replica the device plugin gave it
    unplaced = []
    for pod in running:
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        cards = []
        for device_id in allocated.get((pod.metadata.namespace, pod.metadata.name), ()):
            dev = holding.device(device_id)
            card = dev.card or device_id  # a MIG slice's own id: no card of this node, skipped below
            n = dev.replica or ""
            if card in index_of:
                cards.append(index_of[card])
                if n:
                    replica[(key, index_of[card])] = n
        if cards:
            for i in cards:
                on_card[i].append(pod)
        else:
            unplaced.append(pod)
    for pod in unplaced:  # no allocation seen for it: the first card nobody holds, as before
        free = next((i for i in range(count) if not on_card[i]), None)
        if free is not None:
            on_card[free].append(pod)
    for i in range(count):
        uuid = gpu_uuid(name, i)
        if not on_card[i]:
            out.append(SimGpu(name, i, uuid, values=profile_values(UNHELD)))
        for pod in on_card[i]:
            key = f"{pod.metadata.namespace}/{pod.metadata.name}"
            out.append(
                SimGpu(
                    name,
                    i,
                    uuid,
                    values=holder_values(pod.metadata.annotations or {}, key),
                    pod=(pod.metadata.namespace, pod.metadata.name, pod.spec.containers[0].name),
                    vgpu=replica.get((key, i)),
                    pod_uid=str(getattr(pod.metadata, "uid", None) or ""),
                    dra=(dra or {}).get((pod.metadata.namespace, pod.metadata.name), {}).get(uuid),
                )
            )
    return out


def _slices(node: str, cards: int, labels: dict[str, str]) -> dict[str, tuple[int, str, int]]:
    """MIG slice id -> (its card's index, its profile, its GPU instance id on the card), for a node the
    simulated MIG manager cut (its layout label applied) and the device plugin advertises as MIG."""
    layout_name = labels.get(LABEL_MIG_CONFIG)
    if (
        not layout_name
        or labels.get(LABEL_MIG_CONFIG_STATE) != "success"
        or not labels.get(LABEL_MIG_STRATEGY)
    ):
        return {}
    try:
        layout = mig_layout(labels.get(LABEL_INSTANCE_TYPE), layout_name)
    except ValueError:
        return {}
    out: dict[str, tuple[int, str, int]] = {}
    for sid, card, profile in mig_slices(node, cards, layout or {}):
        out[sid] = (card, profile, sum(1 for c, _, _ in out.values() if c == card) + 1)
    return out


def _mig_gpus(
    node: str,
    instances: dict[str, tuple[int, str, int]],
    running: list[Any],
    allocated: PodDevices,
    model: str,
) -> list[SimGpu]:
    """One SimGpu per GPU instance of each cut card, or one per holder of a time-sliced instance: its card's
    index and UUID, its profile and instance id, its holder's load (no GPU_UTIL: DCGM reports none per MIG
    instance)."""
    holders: dict[str, list[Any]] = {}
    for pod in running:
        for device_id in allocated.get((pod.metadata.namespace, pod.metadata.name), ()):
            slice_id = device_id.partition(holding.REPLICA_SEPARATOR)[0]
            if slice_id in instances:
                holders.setdefault(slice_id, []).append(pod)
    out = []
    for slice_id, (card, profile, gi) in instances.items():
        uuid, instance = gpu_uuid(node, card), (profile, gi)
        if not holders.get(slice_id):
            values = {k: v for k, v in profile_values(UNHELD).items() if k != dcgm.GPU_UTIL}
            out.append(SimGpu(node, card, uuid, model=model, values=values, instance=instance))
        for pod in holders.get(slice_id, ()):
            key = f"{pod.metadata.namespace}/{pod.metadata.name}"
            values = {
                k: v
                for k, v in holder_values(pod.metadata.annotations or {}, key).items()
                if k != dcgm.GPU_UTIL
            }
            out.append(
                SimGpu(
                    node,
                    card,
                    uuid,
                    values=values,
                    pod=(pod.metadata.namespace, pod.metadata.name, pod.spec.containers[0].name),
                    pod_uid=str(getattr(pod.metadata, "uid", None) or ""),
                    instance=instance,
                    model=model,
                )
            )
    return out


def read_pod_resources(url: str, node: str, timeout: float = 5.0) -> PodDevices:
    """The device plugin's allocation on one node, from its pod-resources endpoint, one device per card."""
    return {key: _one_per_card(ids) for key, ids in pod_resources(url, node, timeout).items()}


class ClusterGpuSimulator:
    """Refreshes a DcgmSimulator from the cluster every `period` seconds on a background thread.

    `pod_resources_url`: the simulated device plugin's pod-resources endpoint (the local target's
    `pod_resources_url`); without it, or when it does not answer, holders take cards in order."""

    def __init__(
        self,
        kube: Kube,
        exported_fields: frozenset[str],
        period: float = 1.0,
        pod_resources_url: str | None = None,
    ):
        self.kube, self.period = kube, period
        self.pod_resources_url = pod_resources_url
        self.sim = DcgmSimulator(exported_fields)
        self.workloads = WorkloadSimulator()
        self._stop = threading.Event()
        self.server = None
        self._uids: dict[tuple[str, str], str] | None = None  # (namespace, pod) -> UID, as last listed

    def devices(self, nodes: list[Any]) -> dict[str, PodDevices]:
        if not self.pod_resources_url:
            return {}
        out = {}
        for n in nodes:
            try:
                out[n.metadata.name] = read_pod_resources(self.pod_resources_url, n.metadata.name)
            except OSError as exc:  # not answering: this node's holders take cards in order
                log.warning("pod-resources for %s: %s", n.metadata.name, exc)
        return out

    def claimed(self) -> tuple[dict[str, PodDevices], DraLabels]:
        """The devices pods hold through DRA claims, per node, and each card's claim (none before the API)."""
        from kubernetes.client.exceptions import ApiException

        try:
            slices, claims = (
                self.kube.custom.list_cluster_custom_object("resource.k8s.io", "v1", plural)["items"]
                for plural in ("resourceslices", "resourceclaims")
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
            return {}, {}
        return dra_holdings(slices, claims, self._uids)

    def refresh(self) -> None:
        nodes = [
            n
            for n in self.kube.core.list_node(resource_version=CACHED).items
            if is_gpu_node(n) or (n.metadata.labels or {}).get(LABEL_GPU_ALLOCATION) == GPU_ALLOCATION_DRA
        ]
        pods = self.kube.core.list_pod_for_all_namespaces(resource_version=CACHED).items
        extra = self.workloads.update(pods, time.time())
        devices = self.devices(nodes)
        self._uids = {(p.metadata.namespace, p.metadata.name): str(p.metadata.uid) for p in pods}
        claimed, labels = self.claimed()
        for node, held in claimed.items():  # a DRA node: its claims are its allocation
            devices[node] = {**devices.get(node, {}), **{k: _one_per_card(v) for k, v in held.items()}}
        self.sim.set_gpus(gpus_from_cluster(nodes, pods, devices, labels), extra=extra)

    def start(self, port: int = 0) -> int:
        self.refresh()
        self.server = self.sim.serve(port)
        threading.Thread(target=self._loop, name="gpu-sim-refresh", daemon=True).start()
        return self.server.server_port

    def _loop(self) -> None:
        wait = self.period
        while not self._stop.wait(wait):
            began = time.monotonic()
            try:
                self.refresh()
            except Exception:  # the API hiccuped; the next refresh tries again
                time.sleep(self.period)
            wait = next_wait(self.period, time.monotonic() - began)

    def stop(self) -> None:
        self._stop.set()
        if self.server:
            self.server.shutdown()
