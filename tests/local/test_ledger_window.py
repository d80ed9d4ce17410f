"""`make demo`'s ledger (local/ledger_window.py), offline: a real Prometheus evaluates the shipped ledger
rules over a generated fleet (benchmarks/ledger_data.py, the kube-state-metrics and DCGM series the rules
read) while a command runs; the real `gpu-finops ledger` writes the month and the ladder of exactly that
window; the real `gpu-finops report` draws them. On the local target the same code scrapes its
kube-state-metrics and the GPU simulator instead (`python -m local.ledger_window` in the Makefile)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from decimal import Decimal

import pytest

from benchmarks.ledger_data import fleet_exposition
from benchmarks.processes import serve
from local import ledger_window

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="make setup installs prometheus"),
]
GPUS = 88  # one 8-GPU node of each kind the generator knows


def test_the_window_is_whole_steps_inside_the_run():
    assert ledger_window.window(101, 133) == (105, 130)
    assert ledger_window.window(100, 104) is None  # not one whole step


def test_the_ledger_of_a_commands_window_is_written_where_the_report_reads_it(tmp_path):
    pages, fleet = fleet_exposition(GPUS)
    server = serve(pages)
    target = f"127.0.0.1:{server.server_port}"
    jobs = [
        {"job_name": f"fleet-{j}", "metrics_path": f"/{j}", "static_configs": [{"targets": [target]}]}
        for j in pages
    ]
    reports = tmp_path / "reports"
    try:
        code, said = ledger_window.record_during(
            [sys.executable, "-c", "import time; time.sleep(25); raise SystemExit(3)"],
            jobs,
            tmp_path / "work",
            reports,
        )
    finally:
        server.shutdown()
    assert code == 3, "the command's exit code is the wrapper's: the ledger never decides the run"
    assert [s.split(":")[0] for s in said] == ["ledger month", "ledger ladder"]
    assert all("not written" not in s for s in said), said
    month = json.loads((reports / "ledger-month.json").read_text())
    ladder = json.loads((reports / "ledger-ladder.json").read_text())
    assert month["lines"] and ladder["rungs"]
    # exactly the steps the command ran in (25 s: four or five 5 s steps), every GPU installed throughout
    # (an evaluation before the first scrape is estimated at the observed mean, so installed stays exact)
    assert month["step_seconds"] == ledger_window.STEP_S and month["expected_samples"] in (4, 5)
    hours = Decimal(month["expected_samples"] * ledger_window.STEP_S) / 3600
    # equal to the ledger's own precision: 88 x (20/3600) rounds differently from the ledger's sum of steps
    # in the 28th digit (seen in CI: ...888 against ...8893), which is no GPU-hour anyone owns
    assert abs(Decimal(month["installed_gpu_hours"]) - GPUS * hours) < Decimal("1e-20")
    installed = next(r for r in ladder["rungs"] if r["rung"] == "installed")
    assert Decimal(installed["now"]) == fleet.rungs["installed"] == GPUS

    page = tmp_path / "index.html"
    done = subprocess.run(
        [sys.executable, "-m", "gpu_finops.cli", "report", "--acts", str(tmp_path / "none.json"),
         "--store", str(tmp_path / "none.sqlite"), "--diagnose", str(tmp_path / "none.json"),
         "--ledger", str(reports / "ledger-month.json"), "--ladder", str(reports / "ledger-ladder.json"),
         "--out", str(page)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert "ledger-month.json does not exist" not in html and "ledger-ladder.json does not exist" not in html
    for line in month["lines"]:
        assert line["owner"] in html


def test_a_ledger_that_cannot_be_read_is_a_line_and_no_stale_file(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    stale = reports / "ledger-month.json"
    stale.write_text('{"lines": []}')
    said = ledger_window.write_ledger("http://127.0.0.1:9", 1_800_000_000, 1_800_000_060, reports)
    assert not stale.exists(), "an earlier run's ledger must not be reported beside this run's acts"
    assert said[0].startswith("ledger month: not written (gpu-finops ledger: ") and "127.0.0.1:9" in said[0]


def test_a_run_shorter_than_a_step_writes_no_ledger_and_removes_an_earlier_one(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "ledger-ladder.json").write_text('{"rungs": []}')
    code, said = ledger_window.record_during([sys.executable, "-c", "pass"], [], tmp_path / "work", reports)
    assert code == 0
    assert said == [said[0]] and said[0].startswith(
        "ledger: not written (the run lasted 0 s, under one 5 s step)"
    )
    assert not list(reports.iterdir())
