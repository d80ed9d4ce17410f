"""The build's progress lines: an estimate per binary from the last build's figures (or issue 28's when there
are none, saying so), elapsed and remaining after each, the total at the end, and the record updated."""

from __future__ import annotations

import json

from local.build import progress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lines_use_the_last_builds_figures_and_record_this_one(tmp_path):
    record = tmp_path / "build-times.json"
    record.write_text(json.dumps({"etcd": 50.0, "kwok": 100.0}))
    lines: list[str] = []
    clock = Clock()
    p = progress.Progress(["etcd", "kwok"], lines.append, record, clock)
    p.start("etcd")
    clock.now = 40.0
    p.done("etcd")
    p.start("kwok")
    clock.now = 160.0
    p.done("kwok")
    p.finish()
    assert lines == [
        "  [1/2] etcd: building (about 50s, last build) ...",
        "  [1/2] etcd: built in 40s; 40s so far, about 100s left",
        "  [2/2] kwok: building (about 100s, last build) ...",
        "  [2/2] kwok: built in 120s; 160s so far, about 0s left",
        "  built 2 of 2 binaries in 160s",
    ]
    assert json.loads(record.read_text()) == {"etcd": 40.0, "kwok": 120.0}


def test_without_a_record_the_estimate_is_issue_28s_and_says_so(tmp_path):
    lines: list[str] = []
    p = progress.Progress(["kueue"], lines.append, tmp_path / "none.json", Clock())
    p.start("kueue")
    assert lines == ["  [1/1] kueue: building (about 296s, issue 28's cold build) ..."]


def test_a_record_that_is_not_json_is_reported_and_not_used(tmp_path, capsys):
    record = tmp_path / "build-times.json"
    record.write_text("{not json")
    assert progress.load_record(record) == {}
    assert f"ignoring {record}: not JSON" in capsys.readouterr().out


def test_a_binary_not_rebuilt_keeps_its_recorded_figure(tmp_path):
    record = tmp_path / "build-times.json"
    record.write_text(json.dumps({"etcd": 50.0, "kwok": 100.0}))
    clock = Clock()
    p = progress.Progress(["kwok"], lambda _: None, record, clock)
    p.start("kwok")
    clock.now = 7.0
    p.done("kwok")
    assert json.loads(record.read_text()) == {"etcd": 50.0, "kwok": 7.0}
