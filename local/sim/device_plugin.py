"""The NVIDIA device plugin and GPU feature discovery, simulated for the local target's kwok GPU nodes.

On a real node the device plugin advertises the node's GPUs to the kubelet under the sharing config the
addons stack ships, GFD labels the node, and the kubelet hands each container device ids, which its
pod-resources API reports. kwok nodes have none of the three, so this process does their work from the
same inputs:

- the config: the device plugin's ConfigMap (`nvidia-device-plugin-configs` in `nvidia-device-plugin`,
  rendered from `infra.objects.device_plugin.device_plugin_values`), one named config per entry; a node picks one with
  the label `nvidia.com/device-plugin.config`, else the chart's default;
- the hardware: the physical GPU count of the node's instance type (the catalog Karpenter's kwok provider
  launches from), never what the node advertises, which is what this process sets;
- the advertisement: `replicas` devices per physical GPU under `nvidia.com/gpu`, or `nvidia.com/gpu.shared`
  with `renameByDefault` (then `nvidia.com/gpu` is withdrawn), time-sliced (`sharing.timeSlicing`) or MPS
  clients (`sharing.mps`), in capacity and allocatable, plus GFD's labels `nvidia.com/gpu.count`,
  `nvidia.com/gpu.replicas`, `nvidia.com/gpu.sharing-strategy`, `nvidia.com/gpu.product`,
  `nvidia.com/mps.capable` and, where the family's card is known (`CARD_MEMORY_MIB`), `nvidia.com/gpu.memory`;
- MIG, as the MIG manager and the plugin's `flags.migStrategy` make it: a node labelled
  `nvidia.com/mig.config=<layout>` has its cards cut by that layout of the mig-parted config (`mig_parted_config`:
  `all-disabled`, `all-<profile>` and `all-balanced` for each MIG-capable type of gpu_finops/facts/catalog.py),
  `nvidia.com/mig.config.state` success (failed for a layout the type has not, or a card that cannot be cut);
  under `single` each slice is an `nvidia.com/gpu` (GFD's product `<card>-MIG-<profile>`, its count the
  slices), under `mixed` one `nvidia.com/mig-<profile>` per profile with GFD's per-profile labels; each slice
  is a device `MIG-<uuid>` (`mig_uuid`);
- the kubelet's own report of the node's cpu, memory, pods and ephemeral storage, capacity and allocatable,
  as the instance type's kubelet on EKS would make it (gpu_finops/facts/kubelet.py, Karpenter's AWS provider's
  figures): Karpenter's kwok provider sets a node's capacity to what its NodeClaim requested only, so without
  this a NodePool's cpu limit would count a few millicores for an instance of 4 vCPUs;
- the allocation: each container asking for a GPU resource gets free device ids the way the kubelet hands
  them out (`GPU-<uuid>` for whole cards, `GPU-<uuid>::<replica>` for replicas, `MIG-<uuid>` for slices),
  served as the kubelet's v1 `List` response would report them at `GET /v1/nodes/<node>/pod-resources`;
- the MPS control daemon on a node whose config shares by MPS: the commands it sets each client's pinned memory
  limit and active thread percentage with (`mps_daemon_commands`), at `GET /v1/nodes/<node>/mps-control-daemon`
  (404 where no daemon runs).

Run as a supervised process of the local target (`python -m local.sim.device_plugin`).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client.exceptions import ApiException

from gpu_finops.facts.catalog import CARD_MEMORY_MIB
from gpu_finops.facts.kube_keys import (
    ANNOTATION_DEFAULT_CONFIG,
    GPU_ALLOCATION_DRA,
    GPU_RESOURCE,
    LABEL_DEVICE_PLUGIN_CONFIG,
    LABEL_GPU_ALLOCATION,
    LABEL_GPU_COUNT,
    LABEL_GPU_MEMORY,
    LABEL_GPU_PRODUCT,
    LABEL_GPU_REPLICAS,
    LABEL_GPU_SHARING,
    LABEL_INSTANCE_TYPE,
    LABEL_MIG_CAPABLE,
    LABEL_MIG_CONFIG,
    LABEL_MIG_CONFIG_STATE,
    LABEL_MIG_STRATEGY,
    LABEL_MPS_CAPABLE,
    MIG_RESOURCE_PREFIX,
)
from gpu_finops.facts.kubelet import node_resources
from gpu_finops.model import holding
from local.sim.pacing import CACHED, next_wait

log = logging.getLogger("device-plugin")

GPU = GPU_RESOURCE
CONFIG_NAMESPACE = "nvidia-device-plugin"
CONFIG_MAP = "nvidia-device-plugin-configs"
DEFAULT_CONFIG_KEY = ANNOTATION_DEFAULT_CONFIG  # the chart's config.default, kept in the ConfigMap
NODE_CONFIG_LABEL = LABEL_DEVICE_PLUGIN_CONFIG
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
# a node whose GPUs the DRA driver allocates, not the device plugin (ours: the simulated driver reads it)
DRA_NODE_LABEL, DRA_NODE_VALUE = LABEL_GPU_ALLOCATION, GPU_ALLOCATION_DRA
GFD_COUNT, GFD_REPLICAS, GFD_STRATEGY = LABEL_GPU_COUNT, LABEL_GPU_REPLICAS, LABEL_GPU_SHARING
GFD_PRODUCT = LABEL_GPU_PRODUCT
GFD_MEMORY = LABEL_GPU_MEMORY
TERMINAL = ("Succeeded", "Failed")
PRODUCTS = {
    "g6e": "NVIDIA-L40S",
    "g6": "NVIDIA-L4",
    "g5": "NVIDIA-A10G",
    "g4dn": "Tesla-T4",
    "p5": "NVIDIA-H100-80GB-HBM3",
}


def gpu_uuid(node: str, index: int) -> str:
    """A stable UUID per physical GPU of a simulated node (the DCGM simulator uses the same)."""
    return "GPU-" + hashlib.sha1(f"{node}/{index}".encode()).hexdigest()[:32]


MIG_STRATEGIES = ("none", "single", "mixed")


@dataclass(frozen=True)
class Sharing:
    """One named device plugin config, reduced to what decides the advertisement."""

    name: str
    resource: str  # what is advertised: nvidia.com/gpu, or the renamed nvidia.com/gpu.shared
    replicas: int  # devices per physical GPU (1: no sharing)
    mps: bool = False  # replicas are MPS clients (sharing.mps), not time-sliced
    mig_strategy: str = "none"  # flags.migStrategy

    @property
    def strategy(self) -> str:
        """GFD's nvidia.com/gpu.sharing-strategy: none unless a card is advertised as more than one device."""
        if self.replicas == 1:
            return "none"
        return "mps" if self.mps else "time-slicing"


def parse_config(name: str, text: str) -> Sharing:
    """The device plugin's v1 config: `flags.migStrategy`, and sharing.timeSlicing or sharing.mps
    resources[name=nvidia.com/gpu] with replicas, renameByDefault (or a resource's own `rename`) giving
    nvidia.com/gpu.shared. Refused as the plugin refuses them: both kinds of sharing at once, MPS with MIG
    (mixed: "using --mig-strategy=mixed is not supported with MPS"; single: MPS is not supported for MIG
    devices), replicas below 1."""
    doc = yaml.safe_load(text) or {}
    if doc.get("version") != "v1":
        raise ValueError(f"device plugin config {name!r}: version {doc.get('version')!r}, expected v1")
    mig = str(((doc.get("flags") or {}).get("migStrategy")) or "none")
    if mig not in MIG_STRATEGIES:
        raise ValueError(
            f"device plugin config {name!r}: migStrategy {mig!r}, expected one of {MIG_STRATEGIES}"
        )
    sharing = doc.get("sharing") or {}
    kinds = [k for k in ("timeSlicing", "mps") if (sharing.get(k) or {}).get("resources")]
    if len(kinds) > 1:
        raise ValueError(
            f"device plugin config {name!r}: both timeSlicing and mps are set; a node shares one way"
        )
    if "mps" in kinds and mig != "none":
        raise ValueError(f"device plugin config {name!r}: MPS is not supported with migStrategy {mig}")
    section = sharing.get(kinds[0]) if kinds else {}
    for r in section.get("resources") or []:
        if r.get("name") != GPU:
            continue
        replicas = int(r.get("replicas", 1))
        if replicas < 1:
            raise ValueError(f"device plugin config {name!r}: replicas {replicas} < 1")
        renamed = r.get("rename") or (f"{GPU}.shared" if section.get("renameByDefault") else GPU)
        return Sharing(name, renamed, replicas, kinds == ["mps"], mig)
    return Sharing(name, GPU, 1, False, mig)


def mps_daemon_commands(cards: int, replicas: int, memory_mib: int) -> list[str]:
    """What the device plugin's MPS control daemon echoes to nvidia-cuda-mps-control as it starts
    (k8s-device-plugin v0.18.0 cmd/mps-control-daemon/mps/daemon.go: perDevicePinnedDeviceMemoryLimits and
    activeThreadPercentage): each card's memory over its clients, in whole MiB (integer division of bytes, as
    the Go code does), and every client's share of the SMs, 100 over the clients per card."""
    per_client = memory_mib * 1024 * 1024 // replicas // 1024 // 1024
    limits = [f"set_default_device_pinned_mem_limit {i} {per_client}M" for i in range(cards)]
    return [*limits, f"set_default_active_thread_percentage {100 // replicas}"]


def physical_gpus(instance_type: str | None) -> int:
    from gpu_finops.facts.catalog import GPU_TYPES

    entry = GPU_TYPES.get(instance_type or "")
    return entry[2] if entry else 0


def mig_parted_config(instance_type: str) -> str:
    """The MIG manager's config (mig-parted's v1 schema: `mig-configs: <name>: [{devices, mig-enabled,
    mig-devices}]`) for a MIG-capable type, its layouts gpu_finops/facts/catalog.py's `mig_layouts`."""
    from gpu_finops.facts.catalog import mig_layouts

    configs = {
        name: [{"devices": "all", "mig-enabled": False}]
        if devices is None
        else [{"devices": "all", "mig-enabled": True, "mig-devices": devices}]
        for name, devices in mig_layouts(instance_type).items()
    }
    return yaml.safe_dump({"version": "v1", "mig-configs": configs}, sort_keys=False)


def mig_layout(instance_type: str | None, config: str) -> dict[str, int] | None:
    """The MIG devices per card the named layout cuts (None: MIG disabled). Raises ValueError for a type that
    cannot be partitioned or a layout its config does not have (the MIG manager's `failed`)."""
    doc = yaml.safe_load(mig_parted_config(instance_type or ""))
    if config not in doc["mig-configs"]:
        raise ValueError(f"MIG config {config!r} is not one of {sorted(doc['mig-configs'])}")
    (entry,) = doc["mig-configs"][config]
    return dict(entry["mig-devices"]) if entry.get("mig-enabled") else None


def mig_uuid(node: str, card: int, index: int) -> str:
    """A stable UUID per MIG slice of a simulated card (a driver from R470 names a slice by its own UUID)."""
    return "MIG-" + hashlib.sha1(f"{node}/{card}/mig/{index}".encode()).hexdigest()[:32]


def mig_slices(node: str, cards: int, layout: dict[str, int]) -> list[tuple[str, int, str]]:
    """(slice id, card index, profile) for every slice the layout cuts on each card."""
    return [
        (mig_uuid(node, card, n), card, profile)
        for card in range(cards)
        for n, profile in enumerate(p for p, count in layout.items() for _ in range(count))
    ]


@dataclass
class Advertisement:
    """What a node should carry: extended resources and GFD labels, and each resource's device ids."""

    resources: dict[str, str | None]  # None: withdraw
    labels: dict[str, str]
    devices: dict[str, list[str]]  # resource -> its device ids, in the order the kubelet hands them out


def advertise(
    node_name: str,
    instance_type: str | None,
    sharing: Sharing,
    product: str,
    mig_config: str | None = None,
    have: dict[str, Any] | None = None,
) -> Advertisement:
    """What the plugin, GFD and the MIG manager make of the node. `have`: the capacity it carries, so a GPU
    resource the node no longer advertises (a MIG profile of a former layout) is withdrawn."""
    physical = physical_gpus(instance_type)
    labels: dict[str, str] = {GFD_COUNT: str(physical), NODE_CONFIG_LABEL + ".applied": sharing.name}
    layout, state = None, None
    if mig_config:
        try:
            layout, state = mig_layout(instance_type, mig_config), "success"
        except ValueError as exc:
            log.error("node %s: %s", node_name, exc)
            state = "failed"
        labels[LABEL_MIG_CONFIG_STATE] = state
    if layout and sharing.mig_strategy != "none":
        ad = _advertise_mig(node_name, physical, sharing, product, layout, labels)
    else:
        memory = CARD_MEMORY_MIB.get((instance_type or "").split(".")[0])
        ad = _advertise_cards(node_name, physical, sharing, product, labels, memory)
    for r in have or {}:  # a GPU resource this advertisement has not is withdrawn
        if holding.is_gpu_resource(r) and r not in ad.resources:
            ad.resources[r] = None
    return ad


def _advertise_cards(
    node: str, physical: int, sharing: Sharing, product: str, labels: dict[str, str], memory_mib: int | None
) -> Advertisement:
    """Whole cards, or each card as `replicas` devices (time-sliced or MPS clients), with GFD's labels; its
    card memory (`nvidia.com/gpu.memory`, MiB) where the family's is known. A MIG node's labels carry no card
    memory here: GFD's per-profile `.memory` labels say what each slice has."""
    devices = [
        gpu_uuid(node, i) + (f"::{r}" if sharing.replicas > 1 else "")
        for i in range(physical)
        for r in range(sharing.replicas)
    ]
    resources: dict[str, str | None] = {sharing.resource: str(len(devices))}
    if sharing.resource != GPU:
        resources[GPU] = None
    labels |= {
        GFD_REPLICAS: str(sharing.replicas),
        GFD_STRATEGY: sharing.strategy,
        GFD_PRODUCT: product + ("-SHARED" if sharing.resource != GPU else ""),
        LABEL_MPS_CAPABLE: "true" if sharing.mps else "false",
    }
    if memory_mib is not None:  # what the MPS control daemon divides among its clients
        labels[GFD_MEMORY] = str(memory_mib)
    return Advertisement(resources, labels, {sharing.resource: devices})


def _advertise_mig(
    node: str, physical: int, sharing: Sharing, product: str, layout: dict[str, int], labels: dict[str, str]
) -> Advertisement:
    """Every card cut by `layout`: under `single` (one profile) each slice an nvidia.com/gpu, GFD's count the
    slices and its product `<card>-MIG-<profile>`; under `mixed` an nvidia.com/mig-<profile> per profile with
    GFD's per-profile labels (count, memory in MiB, slices.gi, slices.ci). A slice time-sliced in turn is
    `MIG-<uuid>::<n>` (replicas from the config), as the plugin writes it."""
    slices = mig_slices(node, physical, layout)
    reps = sharing.replicas

    def ids(profile: str | None) -> list[str]:
        return [
            d + (f"::{r}" if reps > 1 else "")
            for d, _, p in slices
            if profile in (None, p)
            for r in range(reps)
        ]

    labels |= {
        LABEL_MIG_STRATEGY: sharing.mig_strategy,
        LABEL_MIG_CAPABLE: "true",
        LABEL_MPS_CAPABLE: "false",
    }
    if sharing.mig_strategy == "single" and len(layout) > 1:  # GFD: single needs one profile on every card
        labels |= {
            GFD_COUNT: "0",
            GFD_REPLICAS: str(reps),
            GFD_STRATEGY: "none",
            GFD_PRODUCT: f"{product}-MIG-INVALID",
        }
        return Advertisement({GPU: "0"}, labels, {GPU: []})
    if sharing.mig_strategy == "single":
        (profile,) = layout
        devices = {GPU: ids(None)}
        labels |= {
            GFD_COUNT: str(len(slices)),
            GFD_REPLICAS: str(reps),
            GFD_STRATEGY: sharing.strategy,
            GFD_PRODUCT: f"{product}-MIG-{profile}",
        }
        return Advertisement({GPU: str(len(devices[GPU]))}, labels, devices)
    profiles = {p: holding.MigProfile.parse(p.replace("+", ".")) for p in layout}
    devices = {MIG_RESOURCE_PREFIX + profile.name: ids(p) for p, profile in profiles.items()}
    for p, profile in profiles.items():
        key = MIG_RESOURCE_PREFIX + profile.name
        labels |= {
            f"{key}.count": str(len(slices) // sum(layout.values()) * layout[p]),
            f"{key}.replicas": str(reps),
            # the profile's nominal size in MiB: GFD writes what NVML reports for the instance, a few percent under
            f"{key}.memory": str(profile.memory_gb * 1024),
            f"{key}.slices.gi": str(profile.compute),
            f"{key}.slices.ci": str(profile.compute),
        }
    resources: dict[str, str | None] = {r: str(len(v)) for r, v in devices.items()}
    resources[GPU] = None  # every card cut: no whole card left
    labels[GFD_COUNT] = str(physical)
    return Advertisement(resources, labels, devices)


def same_quantities(have: dict[str, Any], want: dict[str, str | None]) -> bool:
    """Whether `have` carries every quantity of `want` (equal as quantities: "1Gi" is "1024Mi") and none of
    those `want` withdraws (None)."""
    from kubernetes.utils import parse_quantity

    for k, v in want.items():
        if v is None:
            if k in have:
                return False
        elif have.get(k) != v and (k not in have or parse_quantity(str(have[k])) != parse_quantity(v)):
            return False  # (the API server keeps these spellings, so the parse is rarely needed)
    return True


# per instance type, read-only: the loop compares every node's figures every pass (1,250 nodes in the twin)
_kubelet_figures = functools.lru_cache(maxsize=None)(node_resources)


@dataclass
class Allocations:
    """Device ids per (namespace, pod, container), kept across restarts in a JSON file."""

    path: Path | None = None
    by_pod: dict[str, dict[str, Any]] = field(default_factory=dict)  # "ns/pod" -> {node, containers}

    def load(self) -> None:
        if self.path and self.path.exists():
            self.by_pod = json.loads(self.path.read_text())

    def save(self) -> None:
        if self.path:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.by_pod, indent=1, sort_keys=True))
            tmp.replace(self.path)

    def on_node(self, node: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.by_pod.items() if v["node"] == node}


def container_requests(pod: Any) -> list[tuple[str, str, int]]:
    """(container, resource, count) for every GPU resource a container asks for (limits, as the kubelet)."""
    out = []
    for c in pod.spec.containers or []:
        limits = (c.resources.limits or {}) if c.resources else {}
        for res, qty in limits.items():
            if holding.is_gpu_resource(res):
                out.append((c.name, res, int(str(qty))))
    return out


def _ours(label: str) -> bool:
    """A label GFD, the plugin or the MIG manager write (not the node's choice of config or of MIG layout)."""
    if label in (NODE_CONFIG_LABEL, LABEL_MIG_CONFIG):
        return False
    return label.startswith((MIG_RESOURCE_PREFIX, "nvidia.com/mig.", "nvidia.com/mps.")) or label in (
        GFD_COUNT,
        GFD_REPLICAS,
        GFD_STRATEGY,
        GFD_PRODUCT,
        GFD_MEMORY,
    )


class DevicePlugin:
    """One reconcile loop over the cluster's kwok GPU nodes and their pods."""

    def __init__(self, kube: Any, allocations: Allocations):
        self.kube = kube
        self.allocations = allocations
        self.lock = threading.Lock()
        self.errors: list[str] = []
        self.read_s = 0.0  # the last reconcile's time spent listing the cluster (pacing.next_wait)
        self.mps: dict[str, list[str]] = {}  # node -> what its MPS control daemon set, where one runs
        self.dra_classes = False  # the DRA driver's DeviceClasses created (with the first DRA node's slice)

    def configs(self) -> tuple[dict[str, Sharing], str]:
        cm = self.kube.core.read_namespaced_config_map(CONFIG_MAP, CONFIG_NAMESPACE)
        data = dict(cm.data or {})
        default = (cm.metadata.annotations or {}).get(DEFAULT_CONFIG_KEY, "default")
        return {k: parse_config(k, v) for k, v in data.items()}, default

    def reconcile(self) -> None:
        sharing, default = self.configs()
        began = time.monotonic()
        listed = self.kube.core.list_node(resource_version=CACHED).items
        self.read_s = time.monotonic() - began
        nodes = {
            n.metadata.name: n
            for n in listed
            if (n.metadata.annotations or {}).get(KWOK_ANNOTATION) == "fake"
            and physical_gpus((n.metadata.labels or {}).get(LABEL_INSTANCE_TYPE))
        }
        ads: dict[str, Advertisement] = {}
        for name, n in nodes.items():
            labels = n.metadata.labels or {}
            if labels.get(DRA_NODE_LABEL) == DRA_NODE_VALUE:
                # the DRA driver's node: no device plugin, so no extended resource; its cards are devices of
                # the driver's ResourceSlice, which the scheduler allocates (local/sim/dra_driver.py)
                self.publish_dra(n)
                continue
            chosen = labels.get(NODE_CONFIG_LABEL, default)
            if chosen not in sharing:
                log.error("node %s asks for device plugin config %r; the ConfigMap has %s", name, chosen,
                          sorted(sharing))  # fmt: skip
                continue
            itype = labels.get(LABEL_INSTANCE_TYPE)
            product = PRODUCTS.get((itype or "").split(".")[0], "NVIDIA-GPU")
            ad = advertise(
                name, itype, sharing[chosen], product, labels.get(LABEL_MIG_CONFIG), n.status.capacity or {}
            )
            ads[name] = ad
            self.apply(n, ad)
            family = (itype or "").split(".")[0]
            if sharing[chosen].mps and family in CARD_MEMORY_MIB:
                self.mps[name] = mps_daemon_commands(
                    physical_gpus(itype), sharing[chosen].replicas, CARD_MEMORY_MIB[family]
                )
            else:
                self.mps.pop(name, None)
        self.mps = {k: v for k, v in self.mps.items() if k in ads}
        self.allocate(ads)

    def publish_dra(self, node: Any) -> None:
        """A DRA node: its GPU extended resources withdrawn (the device plugin does not run there), its cards
        published as the driver's one ResourceSlice (created once; the Node owns it, so it goes with it)."""
        from local.sim import dra_driver

        name, labels = node.metadata.name, node.metadata.labels or {}
        itype = labels[LABEL_INSTANCE_TYPE]
        gpu_resources = {r: None for r in (node.status.capacity or {}) if holding.is_gpu_resource(r)}
        capacity, allocatable = _kubelet_figures(itype)
        want = {"capacity": {**capacity, **gpu_resources}, "allocatable": {**allocatable, **gpu_resources}}
        have = {"capacity": node.status.capacity or {}, "allocatable": node.status.allocatable or {}}
        if gpu_resources or any(not same_quantities(have[k], want[k]) for k in want):
            self.kube.core.patch_node_status(name, {"status": want})
        uuids = [gpu_uuid(name, i) for i in range(physical_gpus(itype))]
        objects = [] if self.dra_classes else [("deviceclasses", c) for c in dra_driver.device_classes()]
        objects.append(("resourceslices", dra_driver.resource_slice(name, node.metadata.uid, itype, uuids)))
        for plural, obj in objects:  # the driver chart's DeviceClasses once, as its install creates them
            try:
                self.kube.custom.create_cluster_custom_object("resource.k8s.io", "v1", plural, obj)
                log.info("node %s: created %s %s", name, plural, obj["metadata"]["name"])
            except ApiException as exc:
                if exc.status != 409:  # 409: created already
                    raise
        self.dra_classes = True

    def apply(self, node: Any, ad: Advertisement) -> None:
        labels = node.metadata.labels or {}
        stale = {k: None for k in labels if _ours(k) and k not in ad.labels}  # a former layout's or sharing's
        if stale or any(labels.get(k) != v for k, v in ad.labels.items()):
            self.kube.core.patch_node(node.metadata.name, {"metadata": {"labels": {**ad.labels, **stale}}})
        capacity, allocatable = _kubelet_figures(labels[LABEL_INSTANCE_TYPE])  # the kubelet's, as on EKS
        want = {"capacity": {**capacity, **ad.resources}, "allocatable": {**allocatable, **ad.resources}}
        have = {"capacity": node.status.capacity or {}, "allocatable": node.status.allocatable or {}}
        if any(not same_quantities(have[k], want[k]) for k in want):
            self.kube.core.patch_node_status(node.metadata.name, {"status": want})
            log.info("node %s advertises %s", node.metadata.name, want)

    def allocate(self, ads: dict[str, Advertisement]) -> None:
        began = time.monotonic()
        pods = self.kube.core.list_pod_for_all_namespaces(
            field_selector="spec.nodeName!=", resource_version=CACHED
        ).items
        self.read_s += time.monotonic() - began
        live = [
            p
            for p in sorted(pods, key=lambda p: p.metadata.creation_timestamp)
            if p.spec.node_name in ads
            and p.status.phase not in TERMINAL
            and not p.metadata.deletion_timestamp
        ]
        keys = {f"{p.metadata.namespace}/{p.metadata.name}" for p in live}
        with self.lock:
            for key in [
                k for k in self.allocations.by_pod if k not in keys
            ]:  # finished pods free their devices
                del self.allocations.by_pod[key]
            for p in live:
                key = f"{p.metadata.namespace}/{p.metadata.name}"
                if key not in self.allocations.by_pod:
                    self.assign(key, p, ads[p.spec.node_name])
            self.allocations.save()

    def assign(self, key: str, pod: Any, ad: Advertisement) -> None:
        """Free device ids to each container, first free first, as the kubelet's device manager does."""
        node = pod.spec.node_name
        held = {
            d
            for a in self.allocations.on_node(node).values()
            for c in a["containers"]
            for dev in c["devices"]
            for d in dev["deviceIds"]
        }
        containers = []
        for cname, res, count in container_requests(pod):
            free = [d for d in ad.devices.get(res, ()) if d not in held]
            if count > len(free):
                # the kubelet refuses such a pod (UnexpectedAdmissionError); the act sees no device for it
                log.error("pod %s asks %d %s on %s, which has %d free of it (advertised: %s)", key, count, res,
                          node, len(free), sorted(ad.devices))  # fmt: skip
                continue
            ids = free[:count]
            held |= set(ids)
            containers.append({"name": cname, "devices": [{"resourceName": res, "deviceIds": ids}]})
        if containers:
            self.allocations.by_pod[key] = {"node": node, "containers": containers}
            log.info("pod %s on %s: %s", key, node, containers)

    def pod_resources(self, node: str) -> dict[str, Any]:
        """The kubelet pod-resources v1 List response for a node (protobuf JSON field names)."""
        with self.lock:
            entries = self.allocations.on_node(node)
        return {
            "podResources": [
                {"namespace": k.split("/", 1)[0], "name": k.split("/", 1)[1], "containers": v["containers"]}
                for k, v in sorted(entries.items())
            ]
        }


def serve(plugin: DevicePlugin, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = self.path.strip("/").split("/")
            if self.path == "/healthz":
                body = b"ok"
            elif len(parts) == 4 and parts[:2] == ["v1", "nodes"] and parts[3] == "pod-resources":
                body = json.dumps(plugin.pod_resources(parts[2])).encode()
            elif len(parts) == 4 and parts[:2] == ["v1", "nodes"] and parts[3] == "mps-control-daemon":
                commands = plugin.mps.get(parts[2])
                if commands is None:  # no MPS control daemon on that node
                    self.send_error(404)
                    return
                body = json.dumps({"node": parts[2], "commands": commands}).encode()
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, name="pod-resources", daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--period", type=float, default=0.5)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    from gpu_finops.clients.kube import Kube

    allocations = Allocations(args.state)
    allocations.load()
    plugin = DevicePlugin(Kube.from_kubeconfig(args.kubeconfig), allocations)
    serve(plugin, args.port)
    while True:
        try:
            plugin.reconcile()
        except Exception as exc:  # the API hiccuped or the ConfigMap is not there yet: said, then retried
            log.warning("reconcile: %s: %s", type(exc).__name__, str(exc)[:300])
        time.sleep(next_wait(args.period, plugin.read_s))  # the reads paced, never the writes they found


if __name__ == "__main__":
    raise SystemExit(main())
