"""Run Debian's Prometheus as a plain process: a config file, a data directory, a loopback port."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import yaml

from gpu_finops.clients.promql import PrometheusClient
from gpu_finops.facts import timeouts
from harness.waits import eventually


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    """A Prometheus scraping the given targets. Use as a context manager; stops and reaps on exit."""

    def __init__(
        self,
        workdir: Path,
        targets: list[str],
        *,
        scrape_interval: str = "1s",
        port: int | None = None,
        binary: str = "prometheus",
        rule_files: list[Path] | None = None,
        jobs: dict[str, list[str]] | None = None,
        evaluation_interval: str | None = None,
        scrape_configs: list[dict[str, Any]] | None = None,
    ):
        """`targets` are scraped as job "dcgm"; `jobs` adds more (job name -> targets), e.g. the local
        target's kube-state-metrics for the ledger's rules. Rules are evaluated every
        `evaluation_interval` (default: the scrape interval). `scrape_configs` are further jobs given whole
        (relabelling, honor_labels), as a chart's would be."""
        self.workdir = Path(workdir)
        self.targets = targets
        self.scrape_interval = scrape_interval
        self.port = port or free_port()
        self.binary = shutil.which(binary) or binary
        self.rule_files = rule_files or []
        self.jobs = {"dcgm": targets, **(jobs or {})}
        self.evaluation_interval = evaluation_interval or scrape_interval
        self.scrape_configs = scrape_configs or []
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = self.workdir / "prometheus.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> PrometheusServer:
        if not shutil.which(self.binary):
            raise FileNotFoundError(
                f"prometheus binary {self.binary!r} not found; `make setup` installs Debian's "
                "prometheus package"
            )
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = {
            "global": {
                "scrape_interval": self.scrape_interval,
                "evaluation_interval": self.evaluation_interval,
            },
            "rule_files": [str(p) for p in self.rule_files],
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": targets}]}
                for job, targets in self.jobs.items()
            ]
            + self.scrape_configs,
        }
        config_path = self.workdir / "prometheus.yml"
        config_path.write_text(yaml.safe_dump(config))
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [
                self.binary,
                f"--config.file={config_path}",
                f"--storage.tsdb.path={self.workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--storage.tsdb.retention.time=1d",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        client = PrometheusClient(self.url, retry_for=1)

        def observe() -> str:
            if self.process and self.process.poll() is not None:
                raise RuntimeError(
                    f"prometheus exited with {self.process.returncode}; log: "
                    f"{self.log_path.read_text()[-2000:]}"
                )
            return "ready" if client.ready() else "not ready"

        eventually(
            observe,
            lambda s: s == "ready",
            timeout=timeouts.PROM_READY,
            interval=0.2,
            what=f"prometheus on {self.url} ready",
        )
        return self

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
