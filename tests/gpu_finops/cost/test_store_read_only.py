"""A report never writes (issue 24, item 8), and a window compares times, not their text (item 10)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest

from gpu_finops.cli import main
from gpu_finops.cost.store import SqliteCostStore, open_store
from gpu_finops.facts.errors import UsageError
from tests.gpu_finops.cost.test_reaper import records


def test_cost_report_on_a_missing_store_creates_nothing(tmp_path, capsys):
    assert main(["cost", "report", "--store", str(tmp_path / "none.sqlite")]) == 2
    assert "does not exist: a report never creates one" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite").exists()


def test_cost_report_on_another_programs_sqlite_changes_nothing(tmp_path, capsys):
    path = tmp_path / "music.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE songs (title TEXT)")
    db.execute("PRAGMA user_version = 7")
    db.commit()
    db.close()
    before = path.read_bytes()
    assert main(["cost", "report", "--store", str(path)]) == 2
    assert (
        "is not a gpu-finops cost store (no cost_records table; found ['songs'])" in capsys.readouterr().err
    )
    assert path.read_bytes() == before
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 7
    assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["songs"]


def test_a_read_only_store_refuses_a_write(tmp_path):
    SqliteCostStore(tmp_path / "c.sqlite").upsert(records("n1", [0.5]))
    store = open_store(str(tmp_path / "c.sqlite"), read_only=True)
    assert len(store.records()) == 1
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        store.upsert(records("n2", [0.5]))


def test_a_window_bound_with_an_offset_compares_as_the_time_it_is(tmp_path):
    """03:00+05:00 is 22:00Z the day before: as text it sorts after every 2026-10-31 key and before
    2026-11-01T03:00Z, so a string comparison dropped the record at 23:00Z inside the window."""
    store = SqliteCostStore(tmp_path / "c.sqlite")
    rows = records("n1", [0.5] * 3)  # consecutive intervals; the keys are rewritten below
    starts = ["2026-10-31T21:00:00Z", "2026-10-31T23:00:00Z", "2026-11-01T02:00:00Z"]
    from dataclasses import replace

    store.upsert([replace(r, ChargePeriodStart=s) for r, s in zip(rows, starts, strict=True)])
    got = [r.ChargePeriodStart for r in store.records(since="2026-11-01T03:00:00+05:00")]
    assert got == starts[1:]
    aware = datetime(2026, 11, 1, 2, tzinfo=UTC)
    assert [r.ChargePeriodStart for r in store.records(until=aware)] == starts[:2]
    with pytest.raises(UsageError, match="a time without a zone"):
        store.records(since="2026-11-01T03:00:00")


def test_the_report_cli_compares_offset_times_as_times(tmp_path, capsys):
    from dataclasses import replace

    store = SqliteCostStore(tmp_path / "c.sqlite")
    (row,) = records("n1", [0.5])
    store.upsert([replace(row, ChargePeriodStart="2026-10-31T23:00:00Z")])
    argv = ["cost", "report", "--store", str(tmp_path / "c.sqlite"), "--png", str(tmp_path / "c.png")]
    assert main([*argv, "--since", "2026-11-01T03:00:00+05:00"]) == 0
    assert "n1" in capsys.readouterr().out
