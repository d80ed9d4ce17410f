"""and F13 (a deadline
of 1e300 is a deadline switched off; `guard estimate --max-hours 1e308` ended in exit 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpu_finops.cli import main
from nightly.guard import MAX_RUN_HOURS, Deadline
from tests.process_table import running, wait_for_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "script",
    [
        "sleep 300 & echo $! > {pid}; exit 0",  # in the command's group, left behind
        "setsid sleep 300 & echo $! > {pid}; exit 0",  # out of its group and session
        "setsid bash -c 'sleep 300 & echo $! > {pid}' & wait; exit 0",  # a setsid child's child, orphaned
    ],
)
def test_what_the_command_leaves_running_is_stopped_when_it_ends_by_itself(tmp_path, script):
    deadline = tmp_path / "deadline.json"
    Deadline.start(1, 1).write(deadline)
    pid_file = tmp_path / "left.pid"
    with (tmp_path / "guard.out").open("w") as out:
        guard = subprocess.run(
            [sys.executable, "-m", "gpu_finops.cli", "guard", "run", "--deadline-file", str(deadline),
             "--signal-grace-seconds", "2", "--", "bash", "-c", script.format(pid=pid_file)],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60,
        )  # fmt: skip
    left = int(wait_for_file(pid_file))
    try:
        assert guard.returncode == 0
        assert not running(left), f"pid {left} outlived guard run: {(tmp_path / 'guard.out').read_text()}"
        assert f"left [{left}] running; stopped them" in (tmp_path / "guard.out").read_text()
    finally:
        if running(left):
            os.kill(left, 9)


@pytest.mark.parametrize(
    "doc, says",
    [
        ({"max_hours": 1e300}, "max_hours is 1e+300; expected finite hours > 0 and <= 72"),
        ({"at": 1e300}, "at is 1e+300, outside the run it describes"),
        ({"at": 1.0}, "at is 1.0, outside the run it describes"),
        ({"started": 1e300, "at": 1e300}, "the run starts in the future"),
    ],
)
def test_a_deadline_that_switches_the_deadline_off_is_refused(tmp_path, capsys, doc, says):
    path = tmp_path / "deadline.json"
    path.write_text(json.dumps({**Deadline.start(1, 1).__dict__, **doc}))
    assert main(["guard", "run", "--deadline-file", str(path), "--", "true"]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "argv",
    [
        ("estimate", "--rates", "catalog", "--max-hours", "1e308"),
        ("estimate", "--rates", "catalog", "--max-hours", str(MAX_RUN_HOURS + 1)),
        ("estimate", "--rates", "catalog", "--teardown-reserve-minutes", "1e308"),
        ("run", "--grace-seconds", "1e300", "--", "true"),
    ],
)
def test_numbers_past_the_cap_are_usage_errors(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        main(["guard", *argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "expected a finite number" in err and "<= " in err, err


def test_an_environment_max_hours_past_the_cap_is_refused(monkeypatch):
    import importlib

    import nightly.cli_guard

    monkeypatch.setenv("GPU_FINOPS_MAX_HOURS", "1e308")
    with pytest.raises(Exception, match="GPU_FINOPS_MAX_HOURS"):
        importlib.reload(nightly.cli_guard).add_arguments(__import__("argparse").ArgumentParser())
    monkeypatch.delenv("GPU_FINOPS_MAX_HOURS")
    importlib.reload(nightly.cli_guard)


def test_a_sensible_deadline_still_runs(tmp_path):
    path = tmp_path / "deadline.json"
    Deadline.start(3, 30).write(path)
    assert main(["guard", "run", "--deadline-file", str(path), "--", "true"]) == 0
    time.sleep(0)  # nothing left behind, nothing said


def test_a_fifo_as_the_deadline_file_or_the_json_is_refused_not_waited_on(tmp_path, capsys):
    """A FIFO or a symlink in place of the guard's own files."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["guard", "run", "--deadline-file", str(fifo), "--", "true"]) == 2
    assert "a FIFO, not a regular file" in capsys.readouterr().err
    for flag in ("--deadline-file", "--json"):  # refused as the argument is parsed, before the estimate
        with pytest.raises(SystemExit) as exit_:
            main(["guard", "estimate", "--rates", "catalog", flag, str(fifo)])
        assert exit_.value.code == 2
        assert (
            f"argument {flag}: {fifo} is a symlink, FIFO or device, not a regular file"
            in capsys.readouterr().err
        )
