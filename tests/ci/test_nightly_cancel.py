"""The nightly's cancel path, run for real: the `make up` and `make acts` steps' own `run:` text, under
the runner's shell, cancelled the way the runner cancels a step, leave no process behind; and teardown
(destroy, verify, and resume when destroy did not succeed) still runs after such a cancel.

How GitHub cancels a step (https://docs.github.com/en/actions/reference/workflow-cancellation-reference):
SIGINT to the step's entry process (the `bash` of a `run:` step), SIGTERM if it has not exited 7.5 s
later, and 2.5 s after that the process tree is killed. The runner signals that one process, not its
group, and by the time it kills "the tree" a dead shell has no children left to find.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assertions.nightly import Scenario, simulate
from nightly.guard import Deadline
from tests.ci.test_nightly_workflow import index, job, load, step
from tests.process_table import descendants, kill_group, running, wait_for_file

ROOT = Path(__file__).resolve().parents[2]
RUNNER_SHELL = ("bash", "--noprofile", "--norc", "-eo", "pipefail")  # `shell: bash`'s default on Linux
SIGINT_TO_SIGTERM, SIGTERM_TO_KILL = 7.5, 2.5
GUARDED = {"up": r"make up", "acts": r"make acts"}

# make, then terraform under it in the foreground (it stops on SIGINT, as terraform does, promptly here).
OBEYS = """#!/bin/bash
echo $$ > "$PIDS/make"
bash -c 'echo $$ > "$PIDS/terraform"; exec sleep 300'; exit $?
"""
# ... or a make whose child is in the background and nothing minds SIGINT or SIGTERM: only SIGKILL ends it.
IGNORES = """#!/bin/bash
trap '' INT TERM HUP
sleep 300 & echo $! > "$PIDS/terraform"
echo $$ > "$PIDS/make"
wait
"""


def cancel_like_the_runner(entry: subprocess.Popen) -> str:
    """The runner's cancel of one step; returns what ended the entry process."""
    entry.send_signal(signal.SIGINT)
    try:
        entry.wait(SIGINT_TO_SIGTERM)
        return "SIGINT"
    except subprocess.TimeoutExpired:
        entry.send_signal(signal.SIGTERM)
    try:
        entry.wait(SIGTERM_TO_KILL)
        return "SIGTERM"
    except subprocess.TimeoutExpired:
        for pid in [*descendants(entry.pid), entry.pid]:
            os.kill(pid, signal.SIGKILL)
        entry.wait()
        return "process tree killed"


def run_the_step(tmp_path: Path, role: str, make: str) -> tuple[subprocess.Popen, Path]:
    """The workflow's step, as written, in a scratch checkout: the venv's gpu-finops is this tree's CLI,
    `make` is a stand-in that records its pids, and the deadline is hours away."""
    bin_dir, venv_bin, pids = tmp_path / "bin", tmp_path / ".venv" / "bin", tmp_path / "pids"
    for d in (bin_dir, venv_bin, pids):
        d.mkdir(parents=True)
    (bin_dir / "make").write_text(make)
    (venv_bin / "gpu-finops").write_text(f'#!/bin/sh\nexec {sys.executable} -m gpu_finops.cli "$@"\n')
    for exe in (bin_dir / "make", venv_bin / "gpu-finops"):
        exe.chmod(0o755)
    Deadline.start(3, 45).write(tmp_path / "reports" / "guard-deadline.json")
    script = tmp_path / "step.sh"
    script.write_text(str(step(load(), GUARDED[role])["run"]))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PIDS": str(pids),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }
    with (tmp_path / "step.log").open("w") as log:
        entry = subprocess.Popen(
            [*RUNNER_SHELL, str(script)], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    wait_for_file(pids / "make")
    wait_for_file(pids / "terraform")
    return entry, pids


@pytest.mark.parametrize("role", GUARDED)
def test_a_cancelled_guarded_step_leaves_no_process_behind(tmp_path, role):
    entry, pids = run_the_step(tmp_path, role, OBEYS)
    step_processes = [entry.pid, *descendants(entry.pid)]  # shell or guard, make, terraform
    make = int(pids.joinpath("make").read_text())
    try:
        assert int(pids.joinpath("terraform").read_text()) in step_processes
        t0 = time.monotonic()
        ended_by = cancel_like_the_runner(entry)
        took = time.monotonic() - t0
        left = [p for p in step_processes if running(p)]
        log = (tmp_path / "step.log").read_text()
        assert left == [], f"after the runner's cancel ({ended_by}), still running: {left}\n{log}"
        assert ended_by == "SIGINT" and took < 5, f"{ended_by} after {took:.1f}s\n{log}"
        assert entry.returncode == 130, log
        assert "cost guard: got SIGINT; passed it to make" in log
    finally:
        kill_group(make)
        entry.kill()


def test_a_cancelled_step_whose_command_ignores_signals_is_killed_by_the_guard_within_the_window(tmp_path):
    entry, pids = run_the_step(tmp_path, "up", IGNORES)
    step_processes = [entry.pid, *descendants(entry.pid)]
    make = int(pids.joinpath("make").read_text())
    try:
        ended_by = cancel_like_the_runner(entry)
        left = [p for p in step_processes if running(p)]
        log = (tmp_path / "step.log").read_text()
        assert left == [], f"after the runner's cancel ({ended_by}), still running: {left}\n{log}"
        # The guard's own SIGKILL came before the runner's SIGTERM, not the runner's kill of the tree.
        assert ended_by == "SIGINT" and entry.returncode == 130, f"{ended_by}, {entry.returncode}\n{log}"
    finally:
        kill_group(make)
        entry.kill()


@pytest.mark.parametrize("role", GUARDED)
def test_teardown_runs_after_a_cancel_during_a_guarded_step(role):
    wf = load()
    steps = job(wf)["steps"]
    at = {r: index(wf, p) for r, p in {**GUARDED, "destroy": r"make destroy", "resume": r"make resume",
                                        "verify": r"teardown verify", "upload": r"upload-artifact"}.items()}  # fmt: skip
    cancelled = simulate(steps, Scenario("cancel", frozenset(), cancel_at=at[role]))
    assert cancelled.outcome[at[role]] == "cancelled"
    assert {at["destroy"], at["verify"], at["upload"]} <= set(cancelled.ran), cancelled.ran
    assert at["resume"] not in cancelled.ran  # destroy succeeded: nothing to resume
    assert at["acts" if role == "up" else "up"] not in cancelled.ran[cancelled.ran.index(at[role]) + 1 :]
    then_destroy_fails = simulate(steps, Scenario("cancel", frozenset({at["destroy"]}), cancel_at=at[role]))
    assert {at["destroy"], at["resume"], at["verify"], at["upload"]} <= set(then_destroy_fails.ran)
