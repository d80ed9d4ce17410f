"""What the machine does to a command, each answered as its own class: a reader that closed the pipe is
neither our bug nor a service failing (exit 1, one line); a full disk and a port in use are exit 2 naming
standard output, the file or the port; an output file is written whole or not at all; a long-running
server logs one line per failed cycle, the traceback only at debug level (`-v`)."""

from __future__ import annotations

import ast
import errno
import json
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_finops.cli import main
from gpu_finops.diagnose.exporter import read_once
from gpu_finops.facts.errors import UsageError
from gpu_finops.facts.output_files import write_output

ROOT = Path(__file__).resolve().parents[2]


def cli(*argv: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gpu_finops.cli", *argv], cwd=ROOT, stderr=subprocess.PIPE, text=True, **kwargs
    )


def test_a_reader_that_closed_the_pipe_is_one_line_and_exit_1():
    proc = cli("dcgm-csv", stdout=subprocess.PIPE)
    proc.stdout.close()  # before the command writes: its first write finds no reader
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 1, err
    assert err.splitlines() == [
        "gpu-finops dcgm-csv: stopped: the reader of standard output closed it (a pipe such as `| head`) "
        "before the output ended; nothing else went wrong"
    ]


def test_help_to_a_reader_that_closed_the_pipe_is_the_same_line():
    proc = cli("--help", stdout=subprocess.PIPE)
    proc.stdout.close()  # argparse swallows the write's error: the contract still says so
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 1, err
    assert err.splitlines() == [
        "gpu-finops: stopped: the reader of standard output closed it (a pipe such as `| head`) before the "
        "output ended; nothing else went wrong"
    ]


def test_standard_output_on_a_full_disk_is_exit_2_naming_it():
    with open("/dev/full", "w") as full:
        proc = cli("dcgm-csv", stdout=full)
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 2, err
    assert err.splitlines() == [
        "gpu-finops dcgm-csv: standard output: No space left on device; free space or write the output elsewhere"
    ]


@pytest.fixture
def busy_port():
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        yield s.getsockname()[1]


def test_a_port_in_use_is_exit_2_naming_it_before_the_store_is_made(tmp_path, busy_port, capsys):
    (tmp_path / "nodes.json").write_text(json.dumps({"items": []}))
    (tmp_path / "rates.json").write_text(json.dumps({"g6e.xlarge": {"on-demand": 1.86, "spot": 0.6}}))
    argv = ["collect", "--nodes", f"file:{tmp_path}/nodes.json", "--rates", f"catalog:{tmp_path}/rates.json"]
    code = main([*argv, "--store", str(tmp_path / "cost.sqlite"), "--port", str(busy_port)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.splitlines() == [
        f"gpu-finops collect: --port {busy_port}: cannot listen on 0.0.0.0:{busy_port}: Address already in use; "
        "choose a free port or stop what listens there"
    ]
    assert not (tmp_path / "cost.sqlite").exists()


def test_the_diagnosis_exporter_on_a_port_in_use_is_exit_2(tmp_path, busy_port, capsys):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    code = main(["diagnose", "--all", "--kubeconfig", str(kubeconfig), "--port", str(busy_port)])
    err = capsys.readouterr().err
    assert code == 2 and err.splitlines()[-1] == (
        f"gpu-finops diagnose: --port {busy_port}: cannot listen on 0.0.0.0:{busy_port}: Address already in "
        "use; choose a free port or stop what listens there"
    ), err


def test_an_output_is_written_whole_or_the_old_one_stays(tmp_path, monkeypatch):
    page = tmp_path / "index.html"
    page.write_text("the earlier page")

    class FullDisk:
        def __init__(self, fd: int, mode: str):
            os.close(fd)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("gpu_finops.facts.output_files.os.fdopen", FullDisk)
    with pytest.raises(UsageError) as err:
        write_output(page, "the new page", "--out")
    assert str(err.value) == (
        f"--out {page}: cannot be written (No space left on device); nothing was written there, free space or "
        "name another path"
    )
    assert page.read_text() == "the earlier page"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html"]  # no half-written file beside it


def test_an_output_replaces_the_old_one_and_is_readable(tmp_path):
    page = tmp_path / "deeper" / "index.html"
    write_output(page, "one")
    write_output(page, "two")
    assert page.read_text() == "two" and page.stat().st_mode & 0o044  # a page, not a private file


def test_a_failed_exporter_cycle_logs_one_line_and_the_traceback_only_at_debug(caplog):
    def list_pending():
        raise ConnectionRefusedError("the API server at 127.0.0.1:6443 refused\nthe connection")

    with caplog.at_level(logging.DEBUG, logger="gpu_finops.diagnose.exporter"):
        reading = read_once(list_pending, lambda: ([], None))
    assert reading.counts is None
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        "the pending pods could not be listed: ConnectionRefusedError: the API server at 127.0.0.1:6443 "
        "refused the connection"
    ]
    assert warnings[0].exc_info is None
    assert [r.levelno for r in caplog.records if r.exc_info] == [logging.DEBUG]


def _tracebacks_logged_above_debug(source: str) -> list[int]:
    """Lines where a logger call other than .debug() logs a traceback (`.exception(` or exc_info=)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr == "exception" or (
            node.func.attr != "debug" and any(k.arg == "exc_info" for k in node.keywords)
        ):
            found.append(node.lineno)
    return found


def test_no_server_logs_a_traceback_above_debug():
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for root in ("gpu_finops", "twin")
        for path in sorted((ROOT / root).rglob("*.py"))
        for line in _tracebacks_logged_above_debug(path.read_text())
    ]
    assert found == [], "log one line (failure_line) and the traceback at debug level"


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("log.exception('x')", [1]),
        ("log.warning('x', exc_info=True)", [1]),
        ("log.debug('x', exc_info=True)", []),
        ("log.warning('x: %s', failure_line(exc))", []),
    ],
)
def test_the_walk_finds_a_traceback_logged_above_debug(source, lines):
    assert _tracebacks_logged_above_debug(source) == lines
