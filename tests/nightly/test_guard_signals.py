"""`guard run` stopped by a signal: SIGINT, SIGTERM and SIGHUP reach the command's whole process group,
the guard waits until none of it is left (SIGKILL after its grace), and it exits as a shell reports the
signal; a deadline file that is not a finite deadline is refused before anything starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpu_finops.cli import main
from gpu_finops.facts import timeouts
from nightly.guard import Deadline
from tests.process_table import group, kill_group, running, wait_for_file

ROOT = Path(__file__).resolve().parents[2]
# The guarded command: a shell (the group's leader) running a sleeping grandchild in the foreground, as
# make runs terraform.
SPAWNS = "echo $$ > {leader}; bash -c 'echo $$ > {grandchild}; exec sleep 300'; exit $?"
# ... and one whose grandchild is in the background, where a non-interactive shell starts it with SIGINT
# ignored (POSIX), and which ignores the polite signals itself (terraform finishing an apply): only the
# guard's SIGKILL after its grace ends them.
IGNORES = "trap '' INT TERM HUP; echo $$ > {leader}; sleep 300 & echo $! > {grandchild}; wait"


def start_guard(
    tmp_path: Path, script: str, signal_grace: float | None = None
) -> tuple[subprocess.Popen, int, int]:
    """The guard as the workflow runs it, once its command's leader and grandchild have written their pids."""
    deadline = tmp_path / "deadline.json"
    grace = [] if signal_grace is None else ["--signal-grace-seconds", str(signal_grace)]
    Deadline.start(1, 1).write(deadline)
    leader, grandchild = tmp_path / "leader.pid", tmp_path / "grandchild.pid"
    with (tmp_path / "guard.out").open("w") as out:
        guard = subprocess.Popen(
            [sys.executable, "-m", "gpu_finops.cli", "guard", "run", "--deadline-file", str(deadline),
             *grace, "--", "bash", "-c", script.format(leader=leader, grandchild=grandchild)],
            # a file, not a pipe: a leftover grandchild holding a pipe open would make reading it hang
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    return guard, int(wait_for_file(leader)), int(wait_for_file(grandchild))


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_a_signal_to_the_guard_stops_the_whole_group_and_exits_as_the_shell_would(tmp_path, sig, code):
    guard, pgid, grandchild = start_guard(tmp_path, SPAWNS)
    try:
        assert running(grandchild) and grandchild != pgid and grandchild in group(pgid)
        t0 = time.monotonic()
        guard.send_signal(sig)
        guard.wait(timeout=30)
        out = (tmp_path / "guard.out").read_text()
        took = time.monotonic() - t0
        left = group(pgid)
        assert left == [] and not running(grandchild), f"still running after the guard ended: {left}"
        assert guard.returncode == code, out
        assert took < 5, f"the guard took {took:.1f}s to stop a command that obeys {sig.name}"
        assert f"cost guard: got {sig.name}; passed it to bash -c" in out
    finally:
        kill_group(pgid)
        guard.kill()


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_group_that_ignores_the_signal_is_killed_after_the_grace(tmp_path, sig, code):
    guard, pgid, grandchild = start_guard(tmp_path, IGNORES, signal_grace=1.0)
    try:
        t0 = time.monotonic()
        guard.send_signal(sig)
        guard.wait(timeout=30)
        out = (tmp_path / "guard.out").read_text()
        took = time.monotonic() - t0
        assert group(pgid) == [] and not running(grandchild), group(pgid)
        assert guard.returncode == code, out
        assert 1.0 <= took < 1.0 + timeouts.GUARD_KILL_WAIT + 3, f"took {took:.1f}s for a 1s grace"
    finally:
        kill_group(pgid)
        guard.kill()


def test_the_default_signal_grace_fits_inside_the_runners_cancel():
    """GitHub sends SIGINT, then SIGTERM 7.5 s later: the guard must have killed the group by then."""
    assert timeouts.GUARD_SIGNAL_GRACE + timeouts.GUARD_KILL_WAIT < 7.5


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('{"at": NaN, "started": 1e9, "max_hours": 3, "teardown_reserve_minutes": 45}', "at is nan"),
        ('{"at": Infinity, "started": 1e9, "max_hours": 3, "teardown_reserve_minutes": 45}', "at is inf"),
        ('{"at": -Infinity, "started": 1e9, "max_hours": 3, "teardown_reserve_minutes": 45}', "at is -inf"),
        ('{"at": -5, "started": 1e9, "max_hours": 3, "teardown_reserve_minutes": 45}', "at is -5"),
        ('{"at": "soon", "started": 1e9, "max_hours": 3, "teardown_reserve_minutes": 45}', "at is 'soon'"),
        ('{"at": true, "started": 1e9, "max_hours": 3, "teardown_reserve_minutes": 45}', "at is True"),
        ('{"at": 9e9, "started": 1e9, "max_hours": NaN, "teardown_reserve_minutes": 45}', "max_hours is nan"),
        ('{"at": 9e9, "started": 1e9, "max_hours": 3, "teardown_reserve_minutes": -1}',
         "teardown_reserve_minutes is -1"),
        ("", "is empty"),
        ("   \n", "is empty"),
        ("NaN", "holds nan, expected an object"),
        ("[]", "holds [], expected an object"),
        ("soon", "is not JSON"),
        ('{"at": 9e9}', "holds ['at'], expected an object with"),
    ],
)  # fmt: skip
def test_a_deadline_that_is_not_a_finite_deadline_is_refused(tmp_path, capsys, text, named):
    deadline, marker = tmp_path / "deadline.json", tmp_path / "started"
    deadline.write_text(text)
    code = main(["guard", "run", "--deadline-file", str(deadline), "--", "touch", str(marker)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert not marker.exists(), "the command started under a deadline that cannot stop it"
    assert err.count("\n") == 1 and f"deadline file {deadline}" in err and named in err, err
    assert f"`gpu-finops guard estimate --deadline-file {deadline}`" in err


def test_a_deadline_written_by_estimate_reads_back():
    d = Deadline.start(3, 45, now=1.0e9)
    assert d.at == 1.0e9 + 3 * 3600 - 45 * 60 and json.loads(json.dumps(d.__dict__)) == d.__dict__
