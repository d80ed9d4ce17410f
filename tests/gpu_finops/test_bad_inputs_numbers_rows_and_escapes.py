"""Bad numbers, store rows and terminal escapes that once ended in exit 4 ("a bug"), exit 0 with a NaN shown
as a figure, or raw terminal escapes on stderr.
Each is its README exit with one line naming the input and the precise reason."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpu_finops.cli import main
from gpu_finops.cost.export import DATA_FILE, PARTITION
from gpu_finops.cost.records import COLUMNS, column_problem
from gpu_finops.facts.errors import excerpt, printable
from tests.gpu_finops.report.fixtures import passing_acts

ESC = "\x1b"


def run(capsys, *argv: str, env: dict[str, str] | None = None, monkeypatch=None) -> tuple[int, str, str]:
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err[:2000]
    assert len(lines[0]) < 1000, len(lines[0])
    return lines[0]


@pytest.mark.parametrize(
    "text, says",
    [
        (
            "gvt_spot_vcpu_quota: " + "9" * 4301,
            "line 1: an integer 4301 characters long",
        ),  # PyYAML's int() raised
        (
            "system_node_count: " + "9" * 400,
            "line 1: an integer 400 characters long",
        ),  # float overflow in estimate
        ("tenants: [{name: a, gpu_quota: " + "9" * 4200 + "}]", "line 1: an integer 4200 characters long"),
        ("system_node_count: 0x" + "f" * 30, "line 1: an integer 32 characters long"),
    ],
)
def test_a_config_integer_longer_than_any_count_is_exit_2_naming_its_line(
    tmp_path, capsys, monkeypatch, text, says
):
    (tmp_path / "c.yaml").write_text(text + "\n")
    code, _, err = run(capsys, "guard", "estimate", "--rates", "catalog",
                       env={"GPU_FINOPS_CONFIG": str(tmp_path / "c.yaml")}, monkeypatch=monkeypatch)  # fmt: skip
    assert code == 2 and says in one_line(err), err[:500]


def test_an_eighteen_digit_integer_is_still_a_number_the_schema_judges(tmp_path, capsys, monkeypatch):
    (tmp_path / "c.yaml").write_text("system_node_count: " + "9" * 18 + "\n")
    code, _, err = run(capsys, "guard", "estimate", "--rates", "catalog",
                       env={"GPU_FINOPS_CONFIG": str(tmp_path / "c.yaml")}, monkeypatch=monkeypatch)  # fmt: skip
    assert "digits" not in err and code in (0, 2), err[:500]


def test_a_config_key_with_terminal_escapes_is_quoted_escaped(tmp_path, capsys, monkeypatch):
    (tmp_path / "c.yaml").write_text('"\\e]0;owned\\a\\e[2J": 1\n')
    code, _, err = run(capsys, "guard", "estimate", "--rates", "catalog",
                       env={"GPU_FINOPS_CONFIG": str(tmp_path / "c.yaml")}, monkeypatch=monkeypatch)  # fmt: skip
    line = one_line(err)
    assert code == 2 and ESC not in err and "\\x1b]0;owned\\x07\\x1b[2J" in line and "not a known key" in line


def test_a_deadline_file_with_a_400_digit_integer_is_exit_2(tmp_path, capsys):
    now = int(time.time())
    path = tmp_path / "deadline.json"
    path.write_text(json.dumps({"at": now + 60, "started": now, "max_hours": 3}).replace(
        "}", ', "teardown_reserve_minutes": ' + "9" * 400 + "}"))  # fmt: skip
    os.chmod(path, 0o600)
    code, _, err = run(capsys, "guard", "run", "--deadline-file", str(path), "--", "true")
    line = one_line(err)
    assert code == 2 and "teardown_reserve_minutes is inf; expected finite minutes" in line, line


def store(path: Path, value: object) -> Path:
    db = sqlite3.connect(path)
    db.execute("create table cost_records ({})".format(", ".join(f'"{c}"' for c in COLUMNS)))
    row = [value] * len(COLUMNS)
    row[COLUMNS.index("ChargePeriodStart")] = "2026-11-01T00:00:00Z"
    row[COLUMNS.index("ResourceName")] = "node-1"
    db.execute("insert into cost_records values ({})".format(",".join("?" * len(COLUMNS))), row)
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize("value, says", [
    ("banana", "the record of node-1 at 2026-11-01T00:00:00Z: ChargePeriodEnd"),  # text passes as str: next
    (None, "the record of node-1 at 2026-11-01T00:00:00Z: ChargePeriodEnd is NULL; expected str"),
])  # fmt: skip
def test_a_store_row_that_gpu_finops_did_not_write_is_exit_2_naming_row_and_column(
    tmp_path, capsys, value, says
):
    path = store(tmp_path / "s.sqlite", value)
    code, _, err = run(capsys, "cost", "report", "--store", str(path), "--png", str(tmp_path / "x.png"))
    line = one_line(err)
    assert code == 2 and str(path) in line and "is this a gpu-finops cost store?" in line, line
    if value is None:
        assert says in line, line
    else:  # a time column refuses 'banana' before any number column is read
        assert "ChargePeriodEnd is 'banana'; expected an ISO 8601 time with a zone, in 1970-9998" in line, (
            line
        )


def export(root: Path, **columns) -> Path:
    base = {"ResourceName": ["n"], "x_IdleCost": [0.5], "x_GpuSeconds": [3600.0], "EffectiveCost": [1.0],
            "x_Tenant": ["team-a"]}  # fmt: skip
    folder = root / f"{PARTITION}=2026-11"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({**base, **columns}), folder / DATA_FILE)
    return root


def empty_store(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("create table cost_records ({})".format(", ".join(f'"{c}"' for c in COLUMNS)))
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize("columns, says", [
    ({"EffectiveCost": pa.array([None], pa.float64()), "x_IdleCost": pa.array([None], pa.float64())},
     "1 row(s) with no EffectiveCost"),
    ({"x_Tenant": pa.array([None], pa.string())}, "1 row(s) with no x_Tenant"),
    ({"x_GpuSeconds": [float("nan")]}, "1 row(s) with no finite x_GpuSeconds"),
    ({"EffectiveCost": [float("inf")]}, "1 row(s) with no finite EffectiveCost"),
    ({"x_IdleCost": [float("nan")]}, "1 row(s) with an x_IdleCost that is not finite"),
])  # fmt: skip
def test_a_focus_export_with_missing_figures_is_exit_2_not_a_nan_in_the_table(
    tmp_path, capsys, columns, says
):
    root = export(tmp_path / "pq", **columns)
    code, out, err = run(capsys, "cost", "report", "--store", str(empty_store(tmp_path / "s.sqlite")),
                         "--png", str(tmp_path / "x.png"), "--parquet", str(root))  # fmt: skip
    line = one_line(err)
    assert code == 2 and says in line and str(root) in line and "nan" not in out, line


def test_a_tenant_name_with_markup_and_escapes_is_shown_as_written_and_escaped(tmp_path, capsys):
    root = export(tmp_path / "pq", x_Tenant=["[bold red]ALL COSTS ZERO[/]\x1b[2J"])
    code, out, err = run(capsys, "cost", "report", "--store", str(empty_store(tmp_path / "s.sqlite")),
                         "--png", str(tmp_path / "x.png"), "--parquet", str(root))  # fmt: skip
    assert code == 0, err
    assert ESC not in out and "[bold red]ALL COSTS ZERO[/]\\x1b[2J" in out.replace("\n", ""), out


def acts_report(**change: object) -> dict:
    """A valid acts report (one passing act, as acts/report.py writes it) with `change` applied: a key of the
    report, or `act_<key>` of its act, or `verdict_<key>` of the act's verdict; the value None removes it."""
    act = passing_acts()[0]
    report = {"target": "local", "finished": "2026-11-30T10:05:00+00:00", "acts": [act]}
    for key, value in change.items():
        where, key = (
            (act, key[4:]) if key.startswith("act_") else (act["verdict"], key[8:]) if key.startswith("verdict_")
            else (report, key)
        )  # fmt: skip
        if value is None:
            where.pop(key)
        else:
            where[key] = value
    return report


@pytest.mark.parametrize("change, says", [
    ({"acts": [1]}, "acts[1]: expected an object, found number 1"),
    ({"act_timings": "abc"}, "acts[1].timings: expected an object, found string 'abc'"),
    ({"act_timings": {"a_s": "soon"}}, "acts[1].timings.a_s: expected a number, found string 'soon'"),
    ({"act_timings": {"a_s": True}}, "acts[1].timings.a_s: expected a number, found boolean True"),
    ({"act_verdict": "holds"}, "acts[1].verdict: expected an object, found string 'holds'"),
    ({"act_phases": [["p", "nan", "inf"]]}, "acts[1].phases[1][2]: expected a number, found string 'nan'"),
    ({"act_phases": [["p", 10]]}, "acts[1].phases[1][3]: required, missing"),
    ({"act_phases": [["p", 10, 5]]}, "act test_01_cold_start: phases row 'p' runs from 10.0 to 5.0"),
    ({"act_timing": {}}, "acts[1].timing: not a known key; did you mean 'timings'?"),
    ({"act_outcome": None}, "acts[1].outcome: required, missing"),
    ({"act_outcome": "PASSED"},
     "acts[1].outcome: expected one of 'passed', 'failed', 'skipped' or 'not run', found 'PASSED'"),
    ({"verdict_holds": "yes"}, "acts[1].verdict.holds: expected true or false, found string 'yes'"),
    ({"verdict_hold": True}, "acts[1].verdict.hold: not a known key; did you mean 'holds'?"),
    ({"verdict_failed_clauses": [{"clause": "c", "expected": "e"}]},
     "acts[1].verdict.failed_clauses[1].observed: required, missing"),
    ({"act": []}, "act: not a known key; did you mean 'acts'?"),
    ({"target": 7}, "target: expected a string, found number 7"),
])  # fmt: skip
def test_an_acts_report_with_a_wrong_shape_is_exit_2_naming_the_place(tmp_path, capsys, change, says):
    path = tmp_path / "acts.json"
    path.write_text(json.dumps(acts_report(**change)))
    none = str(tmp_path / "none")
    code, _, err = run(capsys, "report", "--acts", str(path), "--store", none + ".sqlite", "--ledger", none,
                       "--ladder", none, "--diagnose", none, "--out", str(tmp_path / "r.html"))  # fmt: skip
    line = one_line(err)
    assert code == 2 and says in line and str(path) in line, line


def test_control_characters_are_escaped_in_every_quoted_value():
    assert printable("a\x1b[2Jb\x07\x9b\x7f") == "a\\x1b[2Jb\\x07\\x9b\\x7f"
    assert excerpt("k\x1b]0;t\x07") == "k\\x1b]0;t\\x07"
    assert printable("line\nbreak\ttab") == "line\nbreak\\ttab"  # line breaks are excerpt's to join


@pytest.mark.parametrize("name, value, problem", [
    ("PricingQuantity", "1.0", "PricingQuantity is str '1.0'; expected float"),
    ("PricingQuantity", None, "PricingQuantity is NULL; expected float"),
    ("PricingQuantity", float("nan"), "PricingQuantity is nan; expected a finite number"),
    ("EffectiveCost", True, "EffectiveCost is bool True; expected float or NULL"),
    ("x_GpuCount", 1.5, "x_GpuCount is float 1.5; expected int"),
    ("ResourceName", 7, "ResourceName is int 7; expected str"),
])  # fmt: skip
def test_a_column_refuses_what_the_collector_never_writes(name, value, problem):
    assert column_problem(name, value) == problem


@pytest.mark.parametrize("name, value", [("EffectiveCost", None), ("EffectiveCost", 0), ("PricingQuantity", 2.5),
                                         ("x_RateStale", 0), ("x_Message", None), ("x_GpuCount", 8)])  # fmt: skip
def test_a_column_takes_what_the_collector_writes(name, value):
    assert column_problem(name, value) is None
