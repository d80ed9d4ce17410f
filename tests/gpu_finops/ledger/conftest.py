"""Real Prometheus servers over backfilled recorded-rule series: July 2026 (see july.py for what is
backfilled and why) and an outage fixture (outage.py)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from benchmarks.processes import prometheus as started_prometheus
from tests.gpu_finops.ledger import july, outage


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
    # retention counts back from the newest block, so a short one would delete most of July: the helper
    # keeps ten years
    with started_prometheus(workdir, {"global": {}, "scrape_configs": []}, data) as (url, _):
        yield url
