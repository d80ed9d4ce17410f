"""The one build's progress lines: the estimate from the last build's figures (or the measured ones when there are none,
saying so), a count of compiled packages every so often with the time left, a line per binary written, the
total at the end, and the record updated for the next build."""

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
    record.write_text(json.dumps({"unified": {"seconds": 600.0, "packages": 4}}))
    lines: list[str] = []
    clock = Clock()
    p = progress.Progress(["etcd", "kwok"], lines.append, record, clock, every=30)
    p.begin(tmp_path / "build.log")
    for t, line in ((10, "internal/abi"), (20, "go: downloading x v1"), (31, "k8s.io/api/core/v1")):
        clock.now = t
        p.output(line)
        p.tick()
    clock.now = 45
    p.linked(["etcd"])
    p.linked(["etcd"])  # said once
    clock.now = 70
    p.output("k8s.io/kubernetes/cmd/kube-apiserver")
    p.output("sigs.k8s.io/kwok/cmd/kwok")
    p.output("# k8s.io/x")
    p.tick()
    p.linked(["etcd", "kwok"])
    clock.now = 75
    p.finish()
    assert lines == [
        f"  building 2 binaries with one go build (etcd, kwok); the last build: 4 packages compiled in 10m00s; log {tmp_path / 'build.log'}",
        "  2 packages compiled, 31s elapsed; about 5m00s left if it compiles as many as the last build",
        "  [1/2] etcd written at 45s",
        "  4 packages compiled, 1m10s elapsed; more than the last build compiled (4); linking",
        "  [2/2] kwok written at 1m10s",
        "  built 2 of 2 binaries in 1m15s (4 packages compiled)",
    ]
    assert json.loads(record.read_text()) == {
        "unified": {"seconds": 75.0, "packages": 4, "binaries": ["etcd", "kwok"]}
    }


def test_without_a_record_the_estimate_is_issue_28s_and_says_so(tmp_path):
    lines: list[str] = []
    p = progress.Progress(["kueue"], lines.append, tmp_path / "none.json", Clock())
    p.begin()
    first = progress.FIRST_BUILD
    assert lines == [
        f"  building 1 binaries with one go build (kueue); the measured unified cold build: "
        f"{first['packages']:,.0f} packages compiled in {progress.minutes(first['seconds'])}"
    ]


def test_a_record_that_is_not_json_is_reported_and_not_used(tmp_path, capsys):
    record = tmp_path / "build-times.json"
    record.write_text("{not json")
    assert progress.load_record(record) is None
    assert f"ignoring {record}: not JSON" in capsys.readouterr().out


def test_the_per_binary_builds_record_is_reported_and_not_used(tmp_path, capsys):
    record = tmp_path / "build-times.json"
    record.write_text(json.dumps({"etcd": 50.0, "kwok": 100.0}))
    assert progress.load_record(record) is None
    assert f"ignoring {record}: no unified build recorded" in capsys.readouterr().out


def test_a_build_that_compiled_nothing_keeps_the_record(tmp_path):
    record = tmp_path / "build-times.json"
    before = json.dumps({"unified": {"seconds": 600.0, "packages": 3000}})
    record.write_text(before)
    clock = Clock()
    p = progress.Progress(["kwok"], lambda _: None, record, clock)
    p.begin()
    clock.now = 9.0
    p.finish()
    assert record.read_text() == before
