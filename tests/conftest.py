"""Shared fixtures: a moto server for AWS calls, promtool (Prometheus's own rule checker), report folders."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest

from local.cluster.prometheus_server import free_port


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A moto server on a free loopback port; boto3 reaches it through AWS_ENDPOINT_URL."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def aws_env(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point every boto3 client at the moto server with throwaway credentials; reset its state."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(f"{moto_endpoint}/moto-api/reset", method="POST")).read()
    return moto_endpoint


@pytest.fixture
def boto_session(aws_env: str) -> boto3.Session:
    return boto3.Session(region_name="us-east-1")


@pytest.fixture
def teardown_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Teardown's provenance as `make up` leaves it, in a temporary working directory: a run record for
    each cluster the tests name, begun now (before the test builds its account), and `.state/` for the
    Terraform state that tests/teardown/account.py writes. Returns that directory."""
    from datetime import UTC, datetime

    from teardown.provenance import run_record_path, write_run_record

    monkeypatch.chdir(tmp_path)
    for cluster in ("gpu-finops", "demo", "demo-2"):
        write_run_record(run_record_path(cluster), "123456789012", "us-east-1", cluster, datetime.now(UTC))
    return tmp_path


@pytest.fixture
def reports_dir(tmp_path: Path) -> Path:
    path = tmp_path / "reports"
    path.mkdir()
    return path


@pytest.fixture
def private_files_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The usual umask (022, which leaves new files world-readable) and no chmod of any kind: a file
    that is 0600 under this fixture was created 0600, not written open and narrowed afterwards."""
    old = os.umask(0o022)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"chmod after creation: {args}")

    for owner, name in ((os, "chmod"), (os, "fchmod"), (Path, "chmod")):
        monkeypatch.setattr(owner, name, refuse)
    try:
        yield
    finally:
        os.umask(old)


@dataclass(frozen=True)
class Promtool:
    """promtool at `path`; each method asserts that it exits 0, with its output as the message."""

    path: str

    def check_rules(self, rules_file: Path) -> None:
        """Prometheus would load the rules file: `promtool check rules`."""
        self._passes("check", "rules", str(rules_file))

    def test_rules(self, test_file: Path) -> None:
        """Every case of a `promtool test rules` file passes, run from its folder (its rule_files are
        relative to it)."""
        self._passes("test", "rules", test_file.name, cwd=test_file.parent)

    def _passes(self, *args: str, cwd: Path | None = None) -> None:
        result = subprocess.run(
            [self.path, *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=120
        )
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="session")
def promtool() -> Promtool:
    """Debian's promtool; skips where it is missing."""
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool not installed (`make setup` installs Debian's prometheus package)")
    return Promtool(path)


def pytest_report_header(config: pytest.Config) -> str:
    return f"gpu-finops tests; TARGET={config.getoption('--target')}; cwd={os.getcwd()}"
