"""The collector's own Prometheus metrics and its health endpoint."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from finops.records import STATUS_MISSING_SM_ACTIVE, STATUS_NO_GPU_SERIES, CycleResult


class CollectorMetrics:
    """Cycle time, records written, missing metrics, idle dollars per node; plus health state."""

    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.cycle_seconds = Histogram(
            "gpu_finops_collector_cycle_seconds", "Wall time of one collector cycle", registry=r
        )
        self.records_written = Counter(
            "gpu_finops_collector_records_written", "Cost records written", registry=r
        )
        self.missing_metric = Counter(
            "gpu_finops_collector_missing_metric",
            "Node-intervals where a required DCGM metric had no series",
            ["metric", "node"],
            registry=r,
        )
        self.cycle_failures = Counter("gpu_finops_collector_cycle_failures", "Cycles that raised", registry=r)
        self.idle_dollars = Gauge(
            "gpu_finops_node_idle_dollars",
            "Idle dollars of the node in the last interval",
            ["node"],
            registry=r,
        )
        self.healthy = Gauge(
            "gpu_finops_collector_healthy", "1 when the last cycle found no configuration error", registry=r
        )
        self.problems: list[str] = ["no cycle has completed yet"]
        self.healthy.set(0)

    def observe_cycle(self, result: CycleResult) -> None:
        self.cycle_seconds.observe(result.seconds)
        self.records_written.inc(len(result.records))
        for record in result.records:
            if record.x_Status == STATUS_MISSING_SM_ACTIVE:
                self.missing_metric.labels("DCGM_FI_PROF_SM_ACTIVE", record.ResourceName).inc()
            elif record.x_Status == STATUS_NO_GPU_SERIES:
                self.missing_metric.labels("DCGM_FI_DEV_GPU_UTIL", record.ResourceName).inc()
            if record.x_IdleCost is not None:
                self.idle_dollars.labels(record.ResourceName).set(record.x_IdleCost)
        self.problems = list(result.problems)
        self.healthy.set(1 if result.healthy else 0)

    def cycle_failed(self) -> None:
        self.cycle_failures.inc()
        self.problems = ["the last cycle raised; see the collector log"]
        self.healthy.set(0)


def serve(metrics: CollectorMetrics, port: int, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """Serve /metrics and /healthz (200 healthy, 503 with the reasons) on a background thread."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/metrics":
                body, ctype, code = generate_latest(metrics.registry), CONTENT_TYPE_LATEST, 200
            elif self.path == "/healthz":
                ok = not metrics.problems
                body = json.dumps({"healthy": ok, "problems": metrics.problems}).encode()
                ctype, code = "application/json", 200 if ok else 503
            else:
                body, ctype, code = b"not found\n", "text/plain", 404
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # quiet: the collector logs its own way
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, name="collector-http", daemon=True).start()
    return server
