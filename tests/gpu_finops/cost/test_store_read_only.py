"""A report never writes: not on a missing store, not on another program's SQLite, not the `-wal` and `-shm`
files beside a WAL-mode store (`mode=ro` alone creates them), and the writable store never follows a
symlink; and a window compares times, not their text."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

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


def wal_store(path: Path) -> None:
    SqliteCostStore(path).db.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    db.close()  # the last connection checkpoints and removes -wal and -shm


def beside(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


def test_a_report_on_a_wal_store_creates_nothing_beside_it(tmp_path):
    store = tmp_path / "cost.sqlite"
    wal_store(store)
    assert beside(store) == {"cost.sqlite"}
    before = store.read_bytes()
    ro = SqliteCostStore(store, read_only=True)
    assert ro.records() == []
    ro.db.close()
    assert beside(store) == {"cost.sqlite"} and store.read_bytes() == before


def test_a_report_reads_what_a_live_writer_has_not_checkpointed(tmp_path):
    """A writer holds the store open in WAL mode: -wal and -shm exist; the report reads through them and
    adds nothing; with -wal left and -shm gone (a crash), it reads a copy."""
    store = tmp_path / "cost.sqlite"
    wal_store(store)
    writer = sqlite3.connect(store)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE marker (x)")
    writer.commit()
    assert {"cost.sqlite-wal", "cost.sqlite-shm"} <= beside(store)
    ro = SqliteCostStore(store, read_only=True)
    assert ro.db.execute("SELECT name FROM sqlite_master WHERE name = 'marker'").fetchall() == [("marker",)]
    ro.db.close()
    names = beside(store)
    (tmp_path / "cost.sqlite-shm").unlink()
    ro = SqliteCostStore(store, read_only=True)
    assert ro.db.execute("SELECT name FROM sqlite_master WHERE name = 'marker'").fetchall() == [("marker",)]
    ro.db.close()
    assert beside(store) == names - {"cost.sqlite-shm"}
    writer.close()


def test_the_writable_store_never_follows_a_symlink(tmp_path):
    theirs = tmp_path / "theirs.db"
    theirs.write_bytes(b"")
    link = tmp_path / "cost.sqlite"
    link.symlink_to(theirs)
    with pytest.raises(UsageError, match="a symlink, not a regular file"):
        SqliteCostStore(link)
    assert theirs.read_bytes() == b""
