"""Golden: `gpu-finops ledger` against a real Prometheus holding a backfilled July 2026 reproduces the
fleet-profile seed's monthly table and its ladder snapshot exactly."""

from __future__ import annotations

import csv
import io
import json

import pytest

from gpu_finops.cli import main
from gpu_finops.facts.file_schema import validate
from gpu_finops.report.schemas import LadderFile, LedgerMonthFile
from tests.gpu_finops.ledger import july


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["ledger", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_month_reproduces_the_seeds_july_table(july_prometheus, capsys):
    code, out, err = run_cli(
        capsys, "month", "--month", "2026-07", "--prometheus-url", july_prometheus, "--step", "1h", "--json"
    )
    assert code == 0, err
    report = json.loads(out)
    validate(LedgerMonthFile, report, "stdout", "ledger month")  # what `gpu-finops report` reads
    lines = {line["line"]: line for line in report["lines"]}
    assert report["installed_gpu_hours_shown"] == 7_440_000
    assert report["observed_samples"] == report["expected_samples"] == 744
    for bucket, (hours, share) in july.EXPECTED.items():
        assert (lines[bucket]["gpu_hours_shown"], lines[bucket]["share_percent"]) == (hours, share), bucket
        assert lines[bucket]["gpu_hours"] == str(hours), "GPU-hours are exact, not just rounded to match"
    others = {
        k: (v["gpu_hours_shown"], v["share_percent"]) for k, v in lines.items() if k not in july.EXPECTED
    }
    assert others == {k: (0, "0.0") for k in others}, "unattributed, unobserved and the rest are empty"
    assert sum(v["gpu_hours_shown"] for v in lines.values()) == 7_440_000
    assert sum(int(v["share_percent"].replace(".", "")) for v in lines.values()) == 1000
    owners = [lines[b]["owner"] for b in july.EXPECTED]
    assert owners == [
        "platform-hw",
        "platform-sw",
        "capacity",
        "platform-sched",
        "inference",
        "inference",
        "research",
        "platform-rel",
    ]
    # the SM clock series is missing on July 31 (july.NO_SM_CLOCK_FROM_HOUR): said, and nothing else
    assert [w.split(";")[0] for w in report["warnings"]] == [
        "DCGM_FI_DEV_SM_CLOCK: no series at some evaluations in the window (dcgm-exporter)"
    ]


def test_month_table_and_csv_print_the_same_lines(july_prometheus, capsys):
    code, out, _ = run_cli(
        capsys, "month", "--month", "2026-07", "--prometheus-url", july_prometheus, "--step", "1h"
    )
    assert code == 0
    assert "installed GPU-hours" in out and "7,440,000" in out and "100.0%" in out
    assert "allocated: training, lost to restarts" in out and "513,360" in out and "6.9%" in out
    code, out, _ = run_cli(
        capsys, "month", "--month", "2026-07", "--prometheus-url", july_prometheus, "--step", "1h", "--csv"
    )
    rows = {r["line"]: r for r in csv.DictReader(io.StringIO(out))}
    assert rows["installed"]["gpu_hours_shown"] == "7440000"
    assert (
        rows["allocated_serving_traffic"]["gpu_hours"],
        rows["allocated_serving_traffic"]["share_percent"],
    ) == (
        "2232000",
        "30.0",
    )


def test_ladder_snapshot_is_the_seeds(july_prometheus, capsys, tmp_path):
    png = tmp_path / "ladder.png"
    code, out, err = run_cli(
        capsys,
        "ladder",
        "--window",
        "31d",
        "--at",
        "2026-08-01T00:00:00Z",
        "--prometheus-url",
        july_prometheus,
        "--step",
        "1h",
        "--json",
        "--png",
        str(png),
    )
    assert code == 0, err
    report = json.loads(out)
    validate(LadderFile, report, "stdout", "allocation ladder")  # what `gpu-finops report` reads
    now = {r["rung"]: r["now"] for r in report["rungs"]}
    assert [now[r] for r in ("installed", "schedulable", "allocated", "busy_by_metric")] == [
        "10000",
        "9600",
        "8900",
        "8366",
    ]
    assert pytest.approx(0.94) == 8366 / 8900 and pytest.approx(0.84, abs=0.005) == 8366 / 10000
    hours = {r["rung"]: r["gpu_hours"] for r in report["rungs"]}
    assert hours["installed"] == "7440000"
    trend = report["largest_placeable_trend"]
    assert report["largest_placeable"] == "4"
    assert trend["first"] == 8 and trend["last"] == 4 and trend["per_day"] < 0
    assert png.stat().st_size > 10_000


def test_partly_observed_window_reports_unobserved_gpu_hours(july_prometheus, capsys):
    # June 30 has no data; July 1 does: half the window is unobserved, estimated at the observed mean
    code, out, err = run_cli(
        capsys,
        "month",
        "--from",
        "2026-06-30T00:00:00Z",
        "--to",
        "2026-07-02T00:00:00Z",
        "--prometheus-url",
        july_prometheus,
        "--step",
        "1h",
        "--json",
    )
    assert code == 0, err
    lines = {line["line"]: line for line in json.loads(out)["lines"]}
    assert (lines["unobserved"]["gpu_hours"], lines["unobserved"]["share_percent"]) == ("240000", "50.0")
    assert lines["unattributed"]["gpu_hours"] == "0"
    assert "24 of 48 evaluations have no data" in err


def test_a_month_with_no_data_is_an_error(july_prometheus, capsys):
    code, out, err = run_cli(
        capsys, "month", "--month", "2026-05", "--prometheus-url", july_prometheus, "--step", "1h"
    )
    assert code == 1
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert 'fleet:ledger_rung_gpus:sum{rung="installed"} has no samples' in err
    assert "did not run" in err  # nothing at all in May: not even the input counts


def test_a_missing_input_is_named(july_prometheus, capsys):
    code, _, err = run_cli(
        capsys,
        "month",
        "--from",
        "2026-07-31T00:00:00Z",
        "--to",
        "2026-08-01T00:00:00Z",
        "--prometheus-url",
        july_prometheus,
        "--step",
        "1h",
    )
    assert code == 0
    assert "DCGM_FI_DEV_SM_CLOCK: no series in the window (dcgm-exporter)" in err
    assert "kube_node_status_capacity" not in err
