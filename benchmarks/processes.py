"""Processes the ledger benchmarks measure: Debian's Prometheus on a free port, its own metrics, a
process' peak resident memory, and a tiny HTTP server handing out pre-rendered expositions."""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from resource import RUSAGE_SELF, getrusage

import yaml

from gpu_finops.clients.promql import PrometheusClient
from gpu_finops.facts import timeouts
from harness.waits import eventually
from local.cluster.prometheus_server import free_port

MIB = 2**20


def tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        raise FileNotFoundError(
            f"{name} not found on PATH; `make setup` installs Debian's prometheus package"
        )
    return path


@contextmanager
def prometheus(workdir: Path, config: dict, data: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Debian's Prometheus on a free loopback port; yields (url, process). Retention is long because it
    counts back from the newest block and a backfilled month lies in the past."""
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log_path = workdir / "prometheus.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                tool("prometheus"),
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={data}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=10y",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        client = PrometheusClient(url, retry_for=1)

        def observe() -> str:
            if process.poll() is not None:
                raise RuntimeError(f"prometheus exited {process.returncode}: {log_path.read_text()[-2000:]}")
            return "ready" if client.ready() else "not ready"

        try:
            eventually(
                observe,
                lambda s: s == "ready",
                timeout=timeouts.PROM_READY * 3,
                interval=0.2,
                what=f"{url} ready",
            )
            yield url, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def own_metrics(url: str) -> dict[str, float]:
    """Prometheus' own /metrics as {'name{labels}': value} (summaries and histograms included)."""
    text = urllib.request.urlopen(f"{url}/metrics", timeout=timeouts.PROM_QUERY).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def peak_rss(pid: int) -> int:
    """A process' peak resident set (VmHWM) in bytes, from /proc."""
    match = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    if not match:
        raise RuntimeError(f"/proc/{pid}/status has no VmHWM line")
    return int(match.group(1)) * 1024


def self_maxrss() -> int:
    return getrusage(RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def mib(n: float) -> str:
    return f"{n / MIB:,.0f} MiB"


# --- (a) ledger month over a backfilled month -------------------------------------------------------


def serve(pages: dict[str, bytes]) -> ThreadingHTTPServer:
    """A tiny HTTP server answering /<name> with a pre-rendered exposition (rendered once, not per scrape)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path.strip("/"))
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
