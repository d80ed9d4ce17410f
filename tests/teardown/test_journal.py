"""The teardown journal: whole lines; a torn line is skipped with a warning and never hides later entries."""

from __future__ import annotations

import json
import logging
import os

import pytest

from teardown.journal import Journal


@pytest.fixture
def journal(tmp_path) -> Journal:
    return Journal(tmp_path / "journal.jsonl")


def torn(entry: dict) -> bytes:
    """An entry cut short, as a kill in the middle of writing it would leave it."""
    whole = json.dumps(entry).encode()
    return whole[: len(whole) // 2]


def test_each_entry_is_one_whole_line(journal):
    journal.write("destroy-start", planned=2)
    journal.write("deleted", key="vpc/vpc-1", note="a note with\na newline")
    lines = journal.path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3
    assert [json.loads(line)["event"] for line in lines[:-1]] == ["destroy-start", "deleted"]


def test_a_torn_last_line_does_not_swallow_the_next_entry(journal, caplog):
    journal.write("destroy-start", planned=3)
    journal.write("deleted", key="subnet/subnet-1")
    with journal.path.open("ab") as f:  # killed while writing the second deletion
        f.write(torn({"t": 1.0, "event": "deleted", "key": "subnet/subnet-2"}))
    journal.write("resume-start", planned=2)  # the next run appends after the torn fragment
    journal.write("deleted", key="subnet/subnet-2")
    journal.write("resume-end", deleted=1, failed=0)

    with caplog.at_level(logging.WARNING, logger="teardown.journal"):
        events = [e["event"] for e in journal.events()]
    assert events == ["destroy-start", "deleted", "resume-start", "deleted", "resume-end"]
    assert journal.deleted() == {"subnet/subnet-1", "subnet/subnet-2"}
    assert journal.finished()
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert f"journal {journal.path}: line 3 is torn or not an entry" in warnings[0]
    assert "skipped, later lines kept" in warnings[0]


@pytest.mark.parametrize(
    "bad",
    [
        torn({"t": 1.0, "event": "plan", "resources": []}),
        b"\xff\xfe not utf-8 at all",
        b'["a list, not an entry"]',
        b'{"no": "event"}',
    ],
    ids=["cut short", "not utf-8", "not an object", "no event"],
)
def test_a_bad_line_in_the_middle_is_skipped_and_later_entries_stand(journal, bad, caplog):
    journal.write("destroy-start", planned=1)
    with journal.path.open("ab") as f:
        f.write(bad + b"\n")
    journal.write("deleted", key="eip/eipalloc-1")
    journal.write("destroy-end", deleted=1, failed=0)
    with caplog.at_level(logging.WARNING, logger="teardown.journal"):
        assert [e["event"] for e in journal.events()] == ["destroy-start", "deleted", "destroy-end"]
        assert journal.deleted() == {"eip/eipalloc-1"} and journal.finished()
    # said once per line, however often the journal is read
    assert len(caplog.records) == 1
    assert (
        caplog.records[0].getMessage().startswith(f"journal {journal.path}: line 2 is torn or not an entry")
    )


def test_a_short_os_write_is_completed(journal, monkeypatch):
    real = os.write

    def short(fd, data):  # the kernel may accept fewer bytes than asked; the rest must follow
        return real(fd, data[: max(1, len(data) // 3)])

    monkeypatch.setattr(os, "write", short)
    journal.write("deleted", key="launch_template/lt-1")
    monkeypatch.undo()
    assert [e["key"] for e in journal.events()] == ["launch_template/lt-1"]


def test_a_missing_journal_has_no_events(journal):
    assert list(journal.events()) == [] and journal.last_plan() == [] and not journal.finished()


def test_the_journal_is_created_readable_by_its_owner_only(journal, private_files_only):
    """It names the account's resources; under umask 022 it used to be created 0644."""
    journal.write("destroy-start", planned=1)
    journal.write("deleted", key="vpc/vpc-1")
    assert journal.path.stat().st_mode & 0o777 == 0o600
    assert [e["event"] for e in journal.events()] == ["destroy-start", "deleted"]


def test_a_deleted_entry_without_a_key_of_text_counts_for_nothing(journal):
    journal.path.write_text(
        '{"event": "deleted"}\n{"event": "deleted", "key": ["vpc/x"]}\n{"event": "deleted", "key": "vpc/y"}\n'
    )
    assert journal.deleted() == {"vpc/y"}


def test_a_line_nested_past_pythons_limit_is_skipped_as_not_an_entry(journal, caplog):
    journal.path.write_text("[" * 40_000 + "]" * 40_000 + '\n{"event": "deleted", "key": "vpc/y"}\n')
    with caplog.at_level(logging.WARNING):
        assert journal.deleted() == {"vpc/y"}
    assert "line 1 is torn or not an entry" in caplog.text
