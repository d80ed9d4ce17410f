"""A dcgm-exporter look-alike: DCGM-shaped series for simulated GPUs, honouring a metrics CSV.

It exports exactly the fields the CSV it is given exports (a field not in the CSV is not exported, as
with the real exporter), with the real exporter's labels: gpu, UUID, device, modelName, the node (`hostname`, as the pinned
dcgm-exporter 4.8.3 spells it; `Hostname` or none on request), and pod/namespace/container when a pod
holds the GPU (none when it is unheld, as the real exporter).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from facts import dcgm


@dataclass
class SimGpu:
    hostname: str
    index: int
    uuid: str
    model: str = "NVIDIA L40S"
    values: dict[str, float] = field(default_factory=dict)
    pod: tuple[str, str, str] | None = None  # (namespace, pod, container)
    # The node label's name: `hostname` as the pinned dcgm-exporter 4.8.3 spells it (the default),
    # `Hostname` as versions before 4.8.3 did, "" for none at all (a misconfigured exporter).
    hostname_label: str = dcgm.HOSTNAME_LABEL


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class DcgmSimulator:
    """Holds simulated GPUs and renders them in the Prometheus text format."""

    def __init__(self, exported_fields: Iterable[str]):
        self.exported = frozenset(exported_fields)
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
        lines: list[str] = []
        metrics = sorted({m for g in gpus for m in g.values} & self.exported)
        for metric in metrics:
            lines.append(f"# HELP {metric} simulated {metric}")
            lines.append(f"# TYPE {metric} gauge")
            for gpu in gpus:
                if metric not in gpu.values:
                    continue
                labels = {
                    "gpu": str(gpu.index),
                    "UUID": gpu.uuid,
                    "device": f"nvidia{gpu.index}",
                    "modelName": gpu.model,
                }
                if gpu.hostname_label:
                    labels[gpu.hostname_label] = gpu.hostname
                if gpu.pod:
                    labels.update(namespace=gpu.pod[0], pod=gpu.pod[1], container=gpu.pod[2])
                text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
                lines.append(f"{metric}{{{text}}} {gpu.values[metric]!r}")
        return "\n".join(lines) + "\n"

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
