"""`gpu-finops report` without a browser: its exit codes, its one line per bad input, and the store it
reads left exactly as it was."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3

import pytest

from gpu_finops.cli import main
from gpu_finops.cost.store import SqliteCostStore
from gpu_finops.facts.errors import UsageError
from tests.gpu_finops.report import fixtures


def args(paths):
    return ["report", *(f"--{k}={v}" for k, v in paths.items())]


def test_the_page_is_written_and_its_path_is_the_last_line(tmp_path, capsys):
    paths = fixtures.write_all(tmp_path, fixtures.passing_acts())
    before = hashlib.sha256(paths["store"].read_bytes()).hexdigest()
    assert main(args(paths)) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"report: {paths['out'].resolve()}"
    page = paths["out"].read_text()
    assert "<script" not in page and " src=" not in page  # nothing loaded at view time
    assert not re.search(r'href="(?!#|test_|file:)', page)  # links: the page's own anchors, evidence folders
    for heading in ("Acts", "Cost", "Ledger", "Diagnosis"):
        assert f">{heading}</h2>" in page
    assert hashlib.sha256(paths["store"].read_bytes()).hexdigest() == before  # read-only: not migrated


def test_each_missing_input_is_a_section_saying_why(tmp_path):
    paths = fixtures.write_all(tmp_path, fixtures.passing_acts(), cost=False)
    for key in ("ledger", "ladder", "diagnose"):
        paths[key].unlink()
    assert main(args(paths)) == 0
    page = paths["out"].read_text()
    assert f"no cost store at {paths['store']}: no cost was recorded in this run" in page
    assert f"no ledger month: {paths['ledger']} does not exist" in page
    assert f"no allocation ladder: {paths['ladder']} does not exist" in page
    assert f"no diagnosis: {paths['diagnose']} does not exist" in page


def test_nothing_to_report_is_exit_1_naming_the_inputs(tmp_path, capsys):
    paths = fixtures.write_all(tmp_path, [], cost=False)
    for key in ("acts", "ledger", "ladder", "diagnose"):
        paths[key].unlink()
    assert main(args(paths)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"nothing to report: none of {paths['acts']}" in err[0]
    assert not paths["out"].exists()


@pytest.mark.parametrize(
    ("key", "text", "why"),
    [("acts", "{not json", "not JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
     ("acts", '{"target": "local", "finished": "2026-11-30T10:05:00+00:00", "acts": 3}', "acts: expected a list, found number 3"),
     ("diagnose", '{"order": []}', "window_s: required, missing"),
     ("ledger", json.dumps(fixtures.LADDER), "step_seconds: required, missing"),
     ("ladder", json.dumps(fixtures.LEDGER), "rungs: required, missing")],
)  # fmt: skip
def test_a_malformed_input_is_exit_2_naming_it(tmp_path, capsys, key, text, why):
    paths = fixtures.write_all(tmp_path, fixtures.passing_acts())
    paths[key].write_text(text)
    assert main(args(paths)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(paths[key]) in err[0] and why in err[0]


def test_a_store_opened_read_only_is_neither_created_nor_migrated(tmp_path):
    missing = tmp_path / "none" / "cost.sqlite"
    with pytest.raises(
        UsageError,
        match=re.escape(f"the SQLite cost store {missing} does not exist: a report never creates one"),
    ):
        SqliteCostStore(missing, read_only=True)
    assert not missing.parent.exists()
    v1 = tmp_path / "v1.sqlite"
    db = sqlite3.connect(v1)
    SqliteCostStore(":memory:")  # the columns are the store's; a version-1 file is cost_records alone
    db.execute("CREATE TABLE cost_records (x TEXT)")
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()
    store = SqliteCostStore(v1, read_only=True)
    assert store.holdings() == {} and store.schema_version == 1
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        store.db.execute("CREATE TABLE t (x)")
