"""The dcgm metrics CSV: read exactly as dcgm-exporter reads it (Go's encoding/csv, then its field checks).

One table holds each rule: rows where it holds and rows where it fails, with the precise reason. The same
table, plus reader edge cases and seeded random inputs, goes through a real Go `encoding/csv` reader
configured as dcgm-exporter configures it (tests/gpu_finops/dcgm/csvref), and our reader must return the same
records, or the same error at the same line and column, for every one (test_go_csv.py).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpu_finops.dcgm.metrics_csv import (
    EXPORTER_DEFAULT_METRICS,
    MAX_CSV_BYTES,
    PROJECT_METRICS,
    MetricRow,
    MetricsCsvError,
    MetricsCsvTooLarge,
    exported_fields,
    parse,
    render,
)
from gpu_finops.facts import dcgm
from tests.gpu_finops.dcgm.metrics_csv_table import HEADER, TABLE, Holds


@pytest.mark.parametrize("case", TABLE)
def test_each_rule_holds_and_fails_with_the_precise_reason(case):
    data, expect = TABLE[case]
    if isinstance(expect, Holds):
        assert tuple((r.field, r.prom_type, r.help) for r in parse(data, source="x.csv")) == expect.rows
        return
    with pytest.raises(MetricsCsvError) as info:
        parse(data, source="x.csv")
    assert (info.value.line_no, info.value.reason) == (expect.line, expect.reason)
    if expect.line:
        assert str(info.value).startswith(f"x.csv:{expect.line}: {expect.reason}: ")


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
    assert set(dcgm.DIAGNOSED) <= fields  # what the pending-pod diagnosis reads


def test_exporter_default_has_no_sm_active():
    assert dcgm.SM_ACTIVE not in {r.field for r in EXPORTER_DEFAULT_METRICS}


def test_help_text_with_a_comma_or_quote_is_rendered_quoted():
    row = MetricRow(dcgm.FB_USED, "gauge", 'used, in "MiB"')
    assert row.line() == 'DCGM_FI_DEV_FB_USED, gauge,"used, in ""MiB"""'
    assert parse(render((row,)))[0] == row


def test_a_bad_typed_row_fails_rendering_naming_it():
    bad = (*PROJECT_METRICS, MetricRow(dcgm.FB_USED + "_X", "gauge", "used, in MiB"))
    with pytest.raises(MetricsCsvError, match="DCGM_FI_DEV_FB_USED_X"):
        render(bad)


def test_input_over_the_cap_is_refused():
    with pytest.raises(MetricsCsvTooLarge, match="over 1,048,576 bytes, refused unread"):
        parse(b"#" * (MAX_CSV_BYTES + 1), source="big.csv")


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpu_finops.cli", "check-metrics-csv", *argv], capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "content, code, says",
    [
        (None, 0, "valid: 14 metrics"),
        (b'DCGM_FI_PROF_SM_ACTIVE, gauge,"ratio, 0..1"\n', 0, "valid: 1 metrics"),
        (b"DCGM_FI_DEV_GPU_UTIL, gauge, util, percent\n", 1, ":1: expected exactly 3 fields"),
        (
            HEADER + b'DCGM_FI_DEV_GPU_UTIL, gauge, "util, %"\n',
            1,
            ':4: parse error on line 4, column 30: bare "',
        ),
        (HEADER + b"DCGM_FI_DEV_GPU_UTIL, gauge, caf\xe9\n", 1, ":4: the help text is not UTF-8 text"),
        (b"#" * (MAX_CSV_BYTES + 1), 2, "is larger than 1,048,576 bytes, the most a metrics CSV may be"),
    ],
    ids=["project", "quoted comma", "four fields", "bare quote", "not utf-8", "too large"],
)
def test_check_metrics_csv_command(tmp_path, content, code, says):
    path = tmp_path / "m.csv"
    path.write_bytes(content if content is not None else render().encode())
    result = cli(str(path))
    assert result.returncode == code, result.stderr
    assert says in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "target, says",
    [("missing.csv", "does not exist"), (".", "a directory, not a regular file: refusing to read it")],
)
def test_check_metrics_csv_unreadable_is_exit_2(tmp_path, target, says):
    result = cli(str(tmp_path / target))
    assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr


def test_check_metrics_csv_warns_without_sm_active(tmp_path):
    path = tmp_path / "default.csv"
    path.write_text(render(EXPORTER_DEFAULT_METRICS))
    result = cli(str(path))
    assert result.returncode == 0
    assert "DCGM_FI_PROF_SM_ACTIVE is not exported" in result.stderr
