"""The dcgm metrics CSV: generated, validated with the exporter's rules; bad rows fail naming the row."""

from __future__ import annotations

import subprocess
import sys

import pytest

from facts import dcgm
from infra.metrics_csv import (
    EXPORTER_DEFAULT_METRICS,
    PROJECT_METRICS,
    MetricRow,
    MetricsCsvError,
    exported_fields,
    parse,
    render,
)


def test_project_csv_exports_sm_active_and_every_collected_metric():
    fields = exported_fields(render())
    assert dcgm.SM_ACTIVE in fields
    assert set(dcgm.COLLECTED) <= fields
    assert {
        dcgm.SM_OCCUPANCY,
        dcgm.GR_ENGINE_ACTIVE,
        dcgm.PIPE_TENSOR_ACTIVE,
        dcgm.DRAM_ACTIVE,
        dcgm.FB_USED,
        dcgm.FB_FREE,
    } <= fields


def test_exporter_default_has_no_sm_active():
    assert dcgm.SM_ACTIVE not in {r.field for r in EXPORTER_DEFAULT_METRICS}


def test_rendered_rows_have_three_fields_and_comments_are_ignored():
    text = render()
    rows = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert len(rows) == len(PROJECT_METRICS)
    assert all(len(r.split(",")) == 3 for r in rows)


@pytest.mark.parametrize(
    "row, reason",
    [
        ("DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization, in percent", "found 4"),
        ("DCGM_FI_DEV_GPU_UTIL, gauge", "found 2"),
        ("DCGM_FI_DEV_GPU_UTIL, histogram, GPU utilization", "unknown prom type 'histogram'"),
        ("GPU_UTIL, gauge, GPU utilization", "not a DCGM field name"),
        ("DCGM_FI_DEV_GPU_UTIL, gauge, ", "empty help text"),
    ],
)
def test_bad_rows_are_rejected_with_line_and_reason(row, reason):
    text = "# header\n\nDCGM_FI_PROF_SM_ACTIVE, gauge, ok\n" + row + "\n"
    with pytest.raises(MetricsCsvError) as info:
        parse(text, source="x.csv")
    assert info.value.line_no == 4
    assert reason in str(info.value) and "x.csv:4" in str(info.value)


def test_duplicate_field_is_rejected():
    with pytest.raises(MetricsCsvError, match="already listed on line 1"):
        parse("DCGM_FI_DEV_GPU_UTIL, gauge, a\nDCGM_FI_DEV_GPU_UTIL, gauge, b\n")


def test_a_bad_typed_row_fails_rendering_naming_it():
    bad = (*PROJECT_METRICS, MetricRow(dcgm.FB_USED + "_X", "gauge", "used, in MiB"))
    with pytest.raises(MetricsCsvError, match="DCGM_FI_DEV_FB_USED_X"):
        render(bad)


def test_empty_csv_is_rejected():
    with pytest.raises(MetricsCsvError, match="no metric rows"):
        parse("# only comments\n")


@pytest.mark.parametrize(
    "content, code, says",
    [
        (None, 0, "valid: 10 metrics"),
        ("DCGM_FI_DEV_GPU_UTIL, gauge, util, percent\n", 1, ":1: expected exactly 3 fields"),
    ],
)
def test_check_metrics_csv_command(tmp_path, content, code, says):
    path = tmp_path / "m.csv"
    path.write_text(content if content is not None else render())
    result = subprocess.run(
        [sys.executable, "-m", "gpu_finops.cli", "check-metrics-csv", str(path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == code, result.stderr
    assert says in result.stdout + result.stderr


def test_check_metrics_csv_warns_without_sm_active(tmp_path):
    path = tmp_path / "default.csv"
    path.write_text(render(EXPORTER_DEFAULT_METRICS))
    result = subprocess.run(
        [sys.executable, "-m", "gpu_finops.cli", "check-metrics-csv", str(path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0
    assert "DCGM_FI_PROF_SM_ACTIVE is not exported" in result.stderr
