"""`gpu-finops dcgm-csv` prints the CSV the addons stack ships, with SM_ACTIVE, and Go's own encoding/csv
(the exporter's reader, tests/gpu_finops/dcgm/csvref) reads what it printed into exactly those rows."""

from __future__ import annotations

from gpu_finops.cli import main
from gpu_finops.dcgm.metrics_csv import PROJECT_METRICS, render
from gpu_finops.facts import dcgm
from tests.gpu_finops.dcgm.test_go_csv import go_csv_reader, ours, read_with_go

__all__ = ["go_csv_reader"]  # the session fixture, used by name below


def test_dcgm_csv_prints_the_shipped_csv_with_sm_active(capsys):
    assert main(["dcgm-csv"]) == 0
    out = capsys.readouterr().out
    assert out == render()
    assert f"\n{dcgm.SM_ACTIVE}," in out


def test_what_dcgm_csv_prints_reads_the_same_in_go(capsys, go_csv_reader):
    assert main(["dcgm-csv"]) == 0
    text = capsys.readouterr().out.encode()
    (go,) = read_with_go(go_csv_reader, [text])
    assert go == ours(text)
    fields = [rec[0].strip(b" ").decode() for rec in go["records"]]
    assert fields == [r.field for r in PROJECT_METRICS] and dcgm.SM_ACTIVE in fields
