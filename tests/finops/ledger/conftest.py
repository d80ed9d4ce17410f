"""Real Prometheus servers over backfilled recorded-rule series: July 2026 (see july.py for what is
backfilled and why) and an outage fixture (outage.py)."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from facts import timeouts
from finops.promql import PrometheusClient
from harness.waits import eventually
from tests.finops.ledger import july, outage


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def july_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a Prometheus serving the backfilled month; skips where Debian's prometheus is missing."""
    with backfilled(tmp_path_factory.mktemp("ledger-july"), july.openmetrics()) as url:
        yield url


@pytest.fixture(scope="session")
def outage_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a Prometheus serving outage.py's two days of inputs going missing."""
    with backfilled(tmp_path_factory.mktemp("ledger-outage"), outage.openmetrics()) as url:
        yield url


@contextmanager
def backfilled(workdir: Path, openmetrics: str) -> Iterator[str]:
    """A Prometheus serving `openmetrics` backfilled into its TSDB with promtool."""
    promtool, prometheus = shutil.which("promtool"), shutil.which("prometheus")
    if not (promtool and prometheus):
        pytest.skip("promtool/prometheus not installed (`make setup` installs Debian's prometheus package)")
    source = workdir / "series.om"
    source.write_text(openmetrics)
    data = workdir / "data"
    subprocess.run(
        # one block instead of 372 two-hour ones (a hidden promtool flag): seconds, not half a minute
        [
            promtool,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "--quiet",
            "--max-block-duration=768h",
            str(source),
            str(data),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    config = workdir / "prometheus.yml"
    config.write_text("global: {}\nscrape_configs: []\n")
    port = free_port()
    log = (workdir / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
            # retention counts back from the newest block, so a short one would delete most of July
            "--storage.tsdb.retention.time=10y",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    client = PrometheusClient(url, retry_for=1)

    def observe() -> str:
        if process.poll() is not None:
            raise RuntimeError(f"prometheus exited: {(workdir / 'prometheus.log').read_text()[-2000:]}")
        return "ready" if client.ready() else "not ready"

    try:
        eventually(
            observe,
            lambda s: s == "ready",
            timeout=timeouts.PROM_READY,
            interval=0.2,
            what="prometheus ready",
        )
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
