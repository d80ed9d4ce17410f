"""The ground floor: one timestamp format, the price list, the names derived from the config, and the
import rule that keeps it the ground floor."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from gpu_finops.facts import timestamps
from gpu_finops.facts.catalog import GPU_TYPES, ON_DEMAND, SPOT, prices
from gpu_finops.facts.config import Config

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30T12:00:05Z", datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC)),
        ("2026-11-30T12:00:05+00:00", datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC)),
        ("2026-11-30T14:00:05+02:00", datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC)),
    ],
)
def test_parse_reads_iso_with_z_or_offset_into_utc(text, expected):
    parsed = timestamps.parse(text)
    assert parsed == expected and parsed.utcoffset() == timedelta(0)
    assert timestamps.iso(parsed) == "2026-11-30T12:00:05Z"


def test_parse_passes_none_and_datetimes_through():
    t = datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    assert timestamps.parse(None) is None
    assert timestamps.parse(t) is t


def test_iso_is_utc_whole_seconds_with_z():
    t = datetime(2026, 1, 1, 1, 0, 0, 999_000, tzinfo=timezone(timedelta(hours=1)))
    assert timestamps.iso(t) == "2026-01-01T00:00:00Z"


def test_every_gpu_type_has_both_prices_and_spot_is_cheaper():
    listed = prices()
    assert set(listed) == {(t, cap) for t in GPU_TYPES for cap in (ON_DEMAND, SPOT)}
    assert all(listed[(t, SPOT)] < listed[(t, ON_DEMAND)] for t in GPU_TYPES)


def test_names_derive_from_the_cluster_name():
    c = Config(cluster_name="demo")
    assert (c.cost_table, c.interruption_queue, c.karpenter_node_role, c.ci_role) == (
        "demo-cost",
        "demo-interruption",
        "demo-karpenter-node",
        "nightly-demo",
    )
    assert c.spot_slr_record == "/gpu-finops/demo/spot-slr-created"
    assert c.tags == {"gpu-finops.io/project": "gpu-finops", "gpu-finops.io/cluster": "demo"}


def test_the_import_floors_hold():
    """The contracts in pyproject.toml (docs/architecture.md): no import runs back up a floor."""
    result = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
