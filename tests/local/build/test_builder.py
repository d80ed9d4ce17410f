"""The Builder runs the one `go build -v`, follows its output with progress lines, and moves the binaries into
the cache folder only when the build succeeded: a failed build leaves no binary behind. A stand-in for `go`
prints package paths and writes the binaries, as `go build -v -o DIR/` does."""

from __future__ import annotations

import json
import sys

import pytest

from local.build import binaries

FAKE_GO = """
import pathlib, sys
out = pathlib.Path(sys.argv[1])
for pkg in ("internal/abi", "k8s.io/api/core/v1", "go.etcd.io/etcd/server/v3/etcdmain"):
    print(pkg, flush=True)
print("go: downloading example.com/m v1.0.0", flush=True)
for name in sys.argv[3:]:
    (out / name).write_text("#!/bin/sh\\n")
    (out / name).chmod(0o755)
if sys.argv[2] == "fail":
    print("# k8s.io/kube-state-metrics/v2/internal/store\\nbuilder.go:535: missing method Bookmark", flush=True)
    sys.exit(1)
"""


@pytest.fixture
def fake_go(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_FINOPS_CACHE", str(tmp_path / "cache"))
    script = tmp_path / "go.py"
    script.write_text(FAKE_GO)

    def command(outcome, written):
        def build_command(names, out, extra=()):
            assert extra == ("-v",)
            return [sys.executable, str(script), str(out), outcome, *written(names)]

        monkeypatch.setattr(binaries, "build_command", build_command)

    return command


def test_a_build_writes_every_binary_into_the_cache_folder_with_progress_lines(tmp_path, fake_go):
    fake_go("ok", lambda names: names)
    lines: list[str] = []
    out = tmp_path / "bin" / "set" / "unified-x"
    builder = binaries.Builder(out, tmp_path / "build.log", lines.append)
    builder.build(("etcd", "kwok"))
    assert sorted(p.name for p in out.iterdir()) == ["etcd", "kwok"] and builder.have("etcd")
    assert [p.name for p in out.parent.iterdir()] == ["unified-x"]  # the staging folder is gone
    assert lines[0].startswith(
        "  building 2 binaries with one go build (etcd, kwok); the measured unified cold build:"
    )
    assert lines[1].startswith("  [1/2] etcd written at ") and lines[2].startswith("  [2/2] kwok written at ")
    assert lines[-1].startswith("  built 2 of 2 binaries in ") and lines[-1].endswith("(3 packages compiled)")
    record = json.loads((tmp_path / "cache" / "local" / "build-times.json").read_text())
    assert record["unified"]["packages"] == 3 and record["unified"]["binaries"] == ["etcd", "kwok"]
    assert "k8s.io/api/core/v1" in (tmp_path / "build.log").read_text()


def test_a_failed_build_leaves_no_binary_and_says_why(tmp_path, fake_go):
    fake_go("fail", lambda names: names[:1])
    out = tmp_path / "bin" / "set" / "unified-x"
    builder = binaries.Builder(out, tmp_path / "build.log", lambda _: None)
    with pytest.raises(
        binaries.BuildError, match="(?s)go build of etcd, kwok failed \\(exit 1\\).*missing method Bookmark"
    ):
        builder.build(("etcd", "kwok"))
    assert not out.exists() or not any(out.iterdir())
    assert not any(p.name.startswith(".unified-x.building") for p in out.parent.iterdir())


def test_a_build_that_exits_0_without_a_binary_is_an_error(tmp_path, fake_go):
    fake_go("ok", lambda names: names[:1])
    builder = binaries.Builder(tmp_path / "out", tmp_path / "build.log", lambda _: None)
    with pytest.raises(binaries.BuildError, match="go build exited 0 but wrote no kwok"):
        builder.build(("etcd", "kwok"))
    assert not (tmp_path / "out" / "etcd").exists()


def test_all_builds_only_what_is_missing(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    for name in binaries.MAINS:
        if name != "kueue":
            (out / name).write_text("")
            (out / name).chmod(0o755)
    asked: list[tuple[str, ...]] = []
    monkeypatch.setattr(binaries.Builder, "build", lambda self, names: asked.append(names))
    assert binaries.Builder(out, tmp_path / "log").all() == out
    assert asked == [("kueue",)]
