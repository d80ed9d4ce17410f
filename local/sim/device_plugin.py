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
  with `renameByDefault` (then `nvidia.com/gpu` is withdrawn), in capacity and allocatable, plus GFD's
  labels `nvidia.com/gpu.count`, `nvidia.com/gpu.replicas`, `nvidia.com/gpu.sharing-strategy`,
  `nvidia.com/gpu.product`;
- the kubelet's own report of the node's cpu, memory, pods and ephemeral storage, capacity and allocatable,
  as the instance type's kubelet on EKS would make it (gpu_finops/facts/kubelet.py, Karpenter's AWS provider's
  figures): Karpenter's kwok provider sets a node's capacity to what its NodeClaim requested only, so without
  this a NodePool's cpu limit would count a few millicores for an instance of 4 vCPUs;
- the allocation: each container asking for a GPU resource gets free device ids the way the kubelet hands
  them out (`GPU-<uuid>` for whole cards, `GPU-<uuid>::<replica>` for time-sliced ones), served as the
  kubelet's v1 `List` response would report them at `GET /v1/nodes/<node>/pod-resources`.

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

from gpu_finops.facts.kube_keys import (
    ANNOTATION_DEFAULT_CONFIG,
    GPU_RESOURCE,
    LABEL_DEVICE_PLUGIN_CONFIG,
    LABEL_GPU_COUNT,
    LABEL_GPU_PRODUCT,
    LABEL_GPU_REPLICAS,
    LABEL_GPU_SHARING,
    LABEL_INSTANCE_TYPE,
)
from gpu_finops.facts.kubelet import node_resources
from local.sim.pacing import CACHED, next_wait

log = logging.getLogger("device-plugin")

GPU = GPU_RESOURCE
CONFIG_NAMESPACE = "nvidia-device-plugin"
CONFIG_MAP = "nvidia-device-plugin-configs"
DEFAULT_CONFIG_KEY = ANNOTATION_DEFAULT_CONFIG  # the chart's config.default, kept in the ConfigMap
NODE_CONFIG_LABEL = LABEL_DEVICE_PLUGIN_CONFIG
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
GFD_COUNT, GFD_REPLICAS, GFD_STRATEGY = LABEL_GPU_COUNT, LABEL_GPU_REPLICAS, LABEL_GPU_SHARING
GFD_PRODUCT = LABEL_GPU_PRODUCT
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


@dataclass(frozen=True)
class Sharing:
    """One named device plugin config, reduced to what decides the advertisement."""

    name: str
    resource: str  # what is advertised: nvidia.com/gpu, or the renamed nvidia.com/gpu.shared
    replicas: int  # devices per physical GPU (1: no sharing)

    @property
    def strategy(self) -> str:
        return "time-slicing" if self.replicas > 1 else "none"  # GFD's label for one replica a card


def parse_config(name: str, text: str) -> Sharing:
    """The device plugin's v1 config: sharing.timeSlicing.resources[name=nvidia.com/gpu] with replicas, and
    renameByDefault (or a resource's own `rename`) giving nvidia.com/gpu.shared."""
    doc = yaml.safe_load(text) or {}
    if doc.get("version") != "v1":
        raise ValueError(f"device plugin config {name!r}: version {doc.get('version')!r}, expected v1")
    slicing = ((doc.get("sharing") or {}).get("timeSlicing")) or {}
    for r in slicing.get("resources") or []:
        if r.get("name") != GPU:
            continue
        replicas = int(r.get("replicas", 1))
        if replicas < 1:
            raise ValueError(f"device plugin config {name!r}: replicas {replicas} < 1")
        renamed = r.get("rename") or (f"{GPU}.shared" if slicing.get("renameByDefault") else GPU)
        return Sharing(name, renamed, replicas)
    return Sharing(name, GPU, 1)


def physical_gpus(instance_type: str | None) -> int:
    from gpu_finops.facts.catalog import GPU_TYPES

    entry = GPU_TYPES.get(instance_type or "")
    return entry[2] if entry else 0


@dataclass
class Advertisement:
    """What a node should carry: extended resources and GFD labels."""

    resources: dict[str, str | None]  # None: withdraw
    labels: dict[str, str]
    devices: list[str]
    resource: str


def advertise(node_name: str, instance_type: str | None, sharing: Sharing, product: str) -> Advertisement:
    physical = physical_gpus(instance_type)
    devices = [
        gpu_uuid(node_name, i) + (f"::{r}" if sharing.replicas > 1 else "")
        for i in range(physical)
        for r in range(sharing.replicas)
    ]
    resources: dict[str, str | None] = {sharing.resource: str(len(devices))}
    if sharing.resource != GPU:
        resources[GPU] = None
    labels = {
        GFD_COUNT: str(physical),
        GFD_REPLICAS: str(sharing.replicas),
        GFD_STRATEGY: sharing.strategy,
        GFD_PRODUCT: product + ("-SHARED" if sharing.resource != GPU else ""),
        NODE_CONFIG_LABEL + ".applied": sharing.name,
    }
    return Advertisement(resources, labels, devices, sharing.resource)


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
            if res == GPU or res.startswith(GPU + "."):
                out.append((c.name, res, int(str(qty))))
    return out


class DevicePlugin:
    """One reconcile loop over the cluster's kwok GPU nodes and their pods."""

    def __init__(self, kube: Any, allocations: Allocations):
        self.kube = kube
        self.allocations = allocations
        self.lock = threading.Lock()
        self.errors: list[str] = []
        self.read_s = 0.0  # the last reconcile's time spent listing the cluster (pacing.next_wait)

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
            chosen = labels.get(NODE_CONFIG_LABEL, default)
            if chosen not in sharing:
                log.error("node %s asks for device plugin config %r; the ConfigMap has %s", name, chosen,
                          sorted(sharing))  # fmt: skip
                continue
            itype = labels.get(LABEL_INSTANCE_TYPE)
            product = PRODUCTS.get((itype or "").split(".")[0], "NVIDIA-GPU")
            ad = advertise(name, itype, sharing[chosen], product)
            ads[name] = ad
            self.apply(n, ad)
        self.allocate(ads)

    def apply(self, node: Any, ad: Advertisement) -> None:
        labels = node.metadata.labels or {}
        if any(labels.get(k) != v for k, v in ad.labels.items()):
            self.kube.core.patch_node(node.metadata.name, {"metadata": {"labels": ad.labels}})
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
        free = [d for d in ad.devices if d not in held]
        containers = []
        for cname, res, count in container_requests(pod):
            if res != ad.resource or count > len(free):
                # the kubelet refuses such a pod (UnexpectedAdmissionError); the act sees no device for it
                log.error("pod %s asks %d %s on %s, which has %d free %s", key, count, res, node, len(free),
                          ad.resource)  # fmt: skip
                continue
            ids, free = free[:count], free[count:]
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
