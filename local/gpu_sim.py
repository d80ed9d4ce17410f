"""The GPU simulator for kwok GPU nodes: DCGM-shaped series per GPU per node, driven by what the pods on
each node declare, exported only where the metrics CSV exports them (as dcgm-exporter does)."""

from __future__ import annotations

import threading
import time
from typing import Any

from facts import dcgm
from facts.kube_keys import GPU_RESOURCE, LABEL_GPU_COUNT
from finops.kube import Kube
from harness.observe import is_gpu_node
from local.dcgm_sim import DcgmSimulator, SimGpu
from local.device_plugin import gpu_uuid

SM_ACTIVE_ANNOTATION = "gpu-finops.io/sm-active"  # what a simulated workload keeps its SMs busy at (0..1)


def gpus_from_cluster(nodes: list[Any], pods: list[Any]) -> list[SimGpu]:
    """One SimGpu per physical GPU on each GPU node; a GPU held by a Running pod reports that pod's load."""
    running: dict[str, list[Any]] = {}
    for p in pods:
        if p.status.phase == "Running" and p.spec.node_name:
            running.setdefault(p.spec.node_name, []).append(p)
    out = []
    for n in nodes:
        labels = n.metadata.labels or {}
        # physical cards: GFD's count (time-slicing multiplies what the node advertises, not the cards)
        count = int(labels.get(LABEL_GPU_COUNT) or str((n.status.capacity or {}).get(GPU_RESOURCE, "0")))
        holders = [
            p
            for p in running.get(n.metadata.name, [])
            if any(
                any(r == GPU_RESOURCE or r.startswith(GPU_RESOURCE + ".") for r in (c.resources.limits or {}))
                for c in p.spec.containers
                if c.resources
            )
        ]
        for i in range(count):
            uuid = gpu_uuid(n.metadata.name, i)  # the UUID the device plugin hands out for this card
            pod = holders[i] if i < len(holders) else None
            if pod is None:
                values = {
                    dcgm.GPU_UTIL: 0.0,
                    dcgm.SM_ACTIVE: 0.0,
                    dcgm.SM_OCCUPANCY: 0.0,
                    dcgm.POWER_USAGE: 70.0,
                    dcgm.SM_CLOCK: 210.0,
                    dcgm.FB_USED: 0.0,
                    dcgm.FB_FREE: 46068.0,
                }
                holder = None
            else:
                sm = float((pod.metadata.annotations or {}).get(SM_ACTIVE_ANNOTATION, "0.5"))
                values = {
                    dcgm.GPU_UTIL: 100.0,
                    dcgm.SM_ACTIVE: sm,
                    dcgm.SM_OCCUPANCY: round(sm * 0.6, 4),
                    dcgm.POWER_USAGE: 80.0 + 270.0 * sm,
                    dcgm.SM_CLOCK: 1980.0,
                    dcgm.FB_USED: 12000.0,
                    dcgm.FB_FREE: 34068.0,
                }
                holder = (pod.metadata.namespace, pod.metadata.name, pod.spec.containers[0].name)
            out.append(SimGpu(n.metadata.name, i, uuid, values=values, pod=holder))
    return out


class ClusterGpuSimulator:
    """Refreshes a DcgmSimulator from the cluster every `period` seconds on a background thread."""

    def __init__(self, kube: Kube, exported_fields: frozenset[str], period: float = 1.0):
        self.kube, self.period = kube, period
        self.sim = DcgmSimulator(exported_fields)
        self._stop = threading.Event()
        self.server = None

    def refresh(self) -> None:
        nodes = [n for n in self.kube.core.list_node().items if is_gpu_node(n)]
        pods = self.kube.core.list_pod_for_all_namespaces().items
        self.sim.set_gpus(gpus_from_cluster(nodes, pods))

    def start(self, port: int = 0) -> int:
        self.refresh()
        self.server = self.sim.serve(port)
        threading.Thread(target=self._loop, name="gpu-sim-refresh", daemon=True).start()
        return self.server.server_port

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.refresh()
            except Exception:  # the API hiccuped; the next refresh tries again
                time.sleep(self.period)

    def stop(self) -> None:
        self._stop.set()
        if self.server:
            self.server.shutdown()
