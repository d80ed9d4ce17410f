"""Red-team F19: a report on a WAL-mode store created its `-wal` and `-shm` files beside it (`mode=ro` alone
does); and F18: the writable store followed a symlink."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gpu_finops.cost.store import SqliteCostStore
from gpu_finops.facts.errors import UsageError


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
