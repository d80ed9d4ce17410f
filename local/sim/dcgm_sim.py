"""A dcgm-exporter look-alike: DCGM-shaped series for simulated GPUs, honouring a metrics CSV.

It exports exactly the fields the CSV it is given exports (a field not in the CSV is not exported, as
with the real exporter), with the real exporter's labels: gpu, UUID, device, modelName, the node (`hostname`, as the pinned
dcgm-exporter 4.8.3 spells it; `Hostname` or none on request), and pod/namespace/container when a pod
holds the GPU (none when it is unheld, as the real exporter).

A held card is rendered in the shape dcgm-exporter 4.8.3 gives it under the chart values we ship
(`infra/objects/monitoring.py`: KUBERNETES_VIRTUAL_GPUS, enablePodUID; source and reasons in
docs/infra.md, "Time-sliced attribution"): each field's value is the card's, one series per holder with
its pod labels, `pod_uid`, and `vgpu` (its time-slicing replica; none on a whole card); GPU_UTIL and
FB_USED also keep the card's own series without pod labels, and each holder's series of those two is its
own processes' share (`SimGpu.own`, else an equal share). Several SimGpus with the same node and UUID are
the holders of one card; the card's value of a field is their mean. `virtual_gpus=False` renders the
shape without that flag: one set of series per card, labelled with the last holder only.

A MIG card is rendered as dcgm-exporter renders one (its default `--devices f`: every GPU instance, no
series of the card itself): one set of series per GPU instance, with the card's `gpu`, `UUID`, `device` and
`modelName` and the instance's `GPU_I_PROFILE` (the profile's name, e.g. `1g.10gb`) and `GPU_I_ID`
(internal/pkg/rendermetrics/render_metrics.go, collector/gpu_collector.go toMetric), its holder's pod labels,
and no `DCGM_FI_DEV_GPU_UTIL` (DCGM does not report it per MIG instance).

A card a pod holds through a DRA ResourceClaim carries, with the pod labels, the labels dcgm-exporter adds with
`KUBERNETES_ENABLE_DRA` (internal/pkg/transformation/const.go, kubernetes.go; 4.3.1-4.4.0 to 4.5.3-4.8.2):
`dra_claim_name`, `dra_claim_namespace`, `dra_driver_name`, `dra_pool_name` and `dra_device_name`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from gpu_finops.facts import dcgm


@dataclass
class SimGpu:
    hostname: str
    index: int
    uuid: str
    model: str = "NVIDIA L40S"
    values: dict[str, float] = field(default_factory=dict)
    pod: tuple[str, str, str] | None = None  # (namespace, pod, container)
    vgpu: str | None = None  # the time-slicing replica the holder was given (`GPU-<uuid>::<n>`), if any
    pod_uid: str = ""
    # a MIG slice: (its profile, its GPU instance id); its series carry GPU_I_PROFILE and GPU_I_ID
    instance: tuple[str, int] | None = None
    # the holder's own processes' GPU_UTIL / FB_USED (per-process series); unset: an equal share of the card
    own: dict[str, float] = field(default_factory=dict)
    # the DRA claim the holder holds this card through: (claim namespace, claim, driver, pool, device)
    dra: tuple[str, str, str, str, str] | None = None
    # The node label's name: `hostname` as the pinned dcgm-exporter 4.8.3 spells it (the default),
    # `Hostname` as versions before 4.8.3 did, "" for none at all (a misconfigured exporter).
    hostname_label: str = dcgm.HOSTNAME_LABEL


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class DcgmSimulator:
    """Holds simulated GPUs and renders them in the Prometheus text format."""

    def __init__(self, exported_fields: Iterable[str], virtual_gpus: bool = True):
        self.exported = frozenset(exported_fields)
        self.virtual_gpus = virtual_gpus
        self._gpus: list[SimGpu] = []
        self._lock = threading.Lock()
        self._extra = ""  # other series served with the DCGM ones (the simulated workloads' metrics)
        self._exposition: bytes | None = None  # rendered once per set_gpus, served to every scrape
        self.scrapes = 0
        self.renders = 0

    def set_gpus(self, gpus: Iterable[SimGpu], extra: str = "") -> None:
        """Replace the GPUs (and their values), and the `extra` exposition text served after them. The
        exposition is rendered again on the next scrape."""
        with self._lock:
            self._gpus = list(gpus)
            self._extra = extra
            self._exposition = None

    def exposition(self) -> bytes:
        """The scrape body. Rendering 10,000 GPUs takes Python a good part of a second on a small machine,
        and a scrape that waits for it competes with Prometheus for the CPU; so it is rendered once per
        change and the bytes are reused (SimGpu values must be changed through set_gpus)."""
        with self._lock:
            if self._exposition is None:
                self._exposition = (self._render(self._gpus) + self._extra).encode()
                self.renders += 1
            return self._exposition

    def render(self) -> str:
        with self._lock:
            gpus = list(self._gpus)
        return self._render(gpus)

    def _render(self, gpus: list[SimGpu]) -> str:
        cards: dict[tuple[str, str, str, tuple[str, int] | None], list[SimGpu]] = {}
        for gpu in gpus:  # a card, or one GPU instance of a MIG card
            cards.setdefault((gpu.hostname_label, gpu.hostname, gpu.uuid, gpu.instance), []).append(gpu)
        lines: list[str] = []
        metrics = sorted({m for g in gpus for m in g.values} & self.exported)
        for metric in metrics:
            lines.append(f"# HELP {metric} simulated {metric}")
            lines.append(f"# TYPE {metric} gauge")
            for card in cards.values():
                lines.extend(self._card_lines(metric, card))
        return "\n".join(lines) + "\n"

    def _card_lines(self, metric: str, card: list[SimGpu]) -> list[str]:
        holders = [g for g in card if g.pod]
        if not holders:
            return [_line(metric, g, g.values[metric]) for g in card if metric in g.values]
        present = [g.values[metric] for g in holders if metric in g.values]
        if not present:
            return []
        # the card's value: one GPU, one reading (the holders' mean where their profiles differ)
        value = present[0] if len(set(present)) == 1 else sum(present) / len(present)
        if not self.virtual_gpus:  # one pod per device ID: the last holder's labels win (toDeviceToPod)
            return [_line(metric, holders[-1], value, pod_labels=True)]
        if metric not in dcgm.PER_PROCESS:
            return [_line(metric, h, value, pod_labels=True, vgpu=True) for h in holders]
        out = [_line(metric, holders[0], value)]  # the card's own series, without pod labels
        for h in holders:
            share = h.own.get(metric, value / len(holders))
            out.append(_line(metric, h, share, pod_labels=True, vgpu=True, uid=True))
        return out

    def serve(self, port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
        """Serve /metrics on a background thread; port 0 picks a free port (see server.server_port)."""
        sim = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                sim.scrapes += 1
                body = sim.exposition()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer((host, port), Handler)
        threading.Thread(target=server.serve_forever, name="dcgm-sim", daemon=True).start()
        return server


def _line(
    metric: str, gpu: SimGpu, value: float, *, pod_labels: bool = False, vgpu: bool = False, uid: bool = False
) -> str:
    labels = {"gpu": str(gpu.index), "UUID": gpu.uuid, "device": f"nvidia{gpu.index}", "modelName": gpu.model}
    if gpu.instance is not None:
        labels.update(GPU_I_PROFILE=gpu.instance[0], GPU_I_ID=str(gpu.instance[1]))
    if gpu.hostname_label:
        labels[gpu.hostname_label] = gpu.hostname
    if pod_labels and gpu.pod:
        labels.update(namespace=gpu.pod[0], pod=gpu.pod[1], container=gpu.pod[2])
        # enablePodUID puts pod_uid on every pod series; per-process ones carry it regardless
        if gpu.pod_uid or uid:
            labels["pod_uid"] = gpu.pod_uid
        if vgpu and gpu.vgpu is not None:
            labels["vgpu"] = gpu.vgpu
        if gpu.dra is not None:
            names = (
                "dra_claim_namespace",
                "dra_claim_name",
                "dra_driver_name",
                "dra_pool_name",
                "dra_device_name",
            )
            labels.update(zip(names, gpu.dra, strict=True))
    text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items() if v != "")
    return f"{metric}{{{text}}} {value!r}"
