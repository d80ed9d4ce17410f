"""GitHub's cancel is SIGINT, SIGTERM 7.5 s later, SIGKILL 2.5 s after
that. The guard used to give its group 6 s, then what left the group (`setsid`) another 6 s: ~13 s, so the
runner's SIGKILL landed first and the setsid'ed descendant outlived the job. Now one deadline,
`timeouts.GUARD_CANCEL_WINDOW`, bounds it all, and the child has PR_SET_PDEATHSIG: a guard killed any other
way takes its child down."""

from __future__ import annotations

import signal
import time

from gpu_finops.facts import timeouts
from tests.nightly.test_guard_signals import SPAWNS, start_guard
from tests.process_table import kill_group, running

RUNNER_SIGTERM_AT = 7.5  # the runner's cancel: SIGINT, SIGTERM 7.5 s later, SIGKILL 2.5 s after that
# A command that ignores the polite signals and leaves a descendant in a session of its own that ignores
# them too (a provider plugin, a background apply): the command that tried it.
LEAVES = (
    "trap '' INT TERM HUP; echo $$ > {leader}; "
    "setsid bash -c \"trap '' INT TERM HUP; echo \\$\\$ > {grandchild}; exec sleep 300\" & wait"
)


def test_a_cancelled_guard_stops_what_left_its_group_before_the_runners_sigterm(tmp_path):
    guard, pgid, leftover = start_guard(tmp_path, LEAVES)
    try:
        assert running(leftover)
        t0 = time.monotonic()
        guard.send_signal(signal.SIGINT)
        guard.wait(timeout=30)
        took = time.monotonic() - t0
        out = (tmp_path / "guard.out").read_text()
        assert not running(leftover), f"the setsid'ed descendant outlived the guard: {out}"
        assert took < RUNNER_SIGTERM_AT, f"took {took:.1f}s: the runner's SIGTERM comes at 7.5s\n{out}"
        assert guard.returncode == 130, out
        assert "(its whole process group and what left it), SIGKILL in 5.0s" in out, out
    finally:
        kill_group(pgid)
        kill_group(leftover)
        guard.kill()


def test_a_guard_killed_outright_takes_its_child_with_it(tmp_path):
    """SIGKILL cannot be forwarded: the kernel's PR_SET_PDEATHSIG ends the direct child (make) instead."""
    guard, pgid, _grandchild = start_guard(tmp_path, SPAWNS)  # the grandchild: the limit in die_with_parent
    try:
        assert running(pgid)
        guard.kill()
        guard.wait(timeout=10)
        end = time.monotonic() + 5
        while running(pgid) and time.monotonic() < end:
            time.sleep(0.05)
        assert not running(pgid), "the guard's child (the group's leader) outlived a SIGKILLed guard"
    finally:
        kill_group(pgid)
        guard.kill()


def test_the_cancel_window_fits_inside_the_runners_cancel():
    """Everything, both SIGKILL waits included, ends before the runner's SIGTERM."""
    assert timeouts.GUARD_CANCEL_WINDOW < RUNNER_SIGTERM_AT
    assert timeouts.GUARD_CANCEL_WINDOW - 2 * timeouts.GUARD_KILL_WAIT > 0
