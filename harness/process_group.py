"""A command's process group as the kernel sees it (Linux /proc): who is still in it, when a process
started, and waiting until the group is empty.

The guard (nightly/guard.py) starts its command in a session of its own, so a signal meant for the whole
command (make, terraform, its providers) must go to the group, and "stopped" means no member is left,
not only that the direct child was reaped: a grandchild that ignores SIGTERM outlives its parent.
The local supervisor (local/supervisor.py) uses the start time to tell its own process from a later
one that was given the same pid.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

PROC = Path("/proc")
_POLL_SECONDS = 0.05


def _stat_fields(pid: int, proc: Path = PROC) -> list[str] | None:
    """Fields 3.. of /proc/<pid>/stat (field 2, the command name, may hold spaces and parentheses)."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError, NotADirectoryError):
        return None
    return text[text.rindex(")") + 2 :].split()


def start_time(pid: int, proc: Path = PROC) -> int | None:
    """Field 22 of /proc/<pid>/stat: when the process started, in clock ticks after boot; None when
    there is no such process. A pid can be reused; (pid, start time) names one process for good."""
    fields = _stat_fields(pid, proc)
    return int(fields[19]) if fields else None


def running(pid: int, proc: Path = PROC) -> bool:
    """The process exists and is not a zombie (a zombie runs nothing; it waits for its parent)."""
    fields = _stat_fields(pid, proc)
    return fields is not None and fields[0] not in ("Z", "X")


def members(pgid: int, proc: Path = PROC) -> list[int]:
    """The running (non-zombie) processes whose process group is `pgid`."""
    found = []
    for entry in proc.iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name), proc)
            if fields and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
                found.append(int(entry.name))
    return sorted(found)


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to every process of the group; a group that already ended is not an error."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def wait_empty(pgid: int, timeout: float) -> bool:
    """Wait up to `timeout` seconds for the group to have no running member; True once it has none."""
    end = time.monotonic() + timeout
    while members(pgid):
        if time.monotonic() >= end:
            return False
        time.sleep(_POLL_SECONDS)
    return True


def stop_group(pgid: int, sig: int, grace: float, *, kill_wait: float) -> list[int]:
    """`sig` to the group, up to `grace` seconds for it to end, then SIGKILL and up to `kill_wait` more.

    Returns the members still running after all that (none, unless the kernel is stuck on them)."""
    signal_group(pgid, sig)
    if wait_empty(pgid, grace):
        return []
    signal_group(pgid, signal.SIGKILL)
    wait_empty(pgid, kill_wait)
    return members(pgid)


_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux prctl): a descendant whose parent ends is re-parented here
    rather than to init, so one that left its process group (`setsid`) can still be found, as ours, with
    `descendants`. False where the kernel or libc does not offer it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` that has the kernel SIGKILL the child when this process ends, however (a SIGKILL
    from the runner included), and ends the child at once if the parent is already gone. None where there
    is no prctl (not Linux). Hand-written with ctypes, like `become_subreaper`: the standard library has no
    prctl, and python-prctl needs a C build against libcap for two calls. It reaches the direct child only
    (the kernel clears it on fork): what left the group is stopped by the guard within its cancel window."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arm() -> None:  # runs in the child between fork and exec: no imports, no locks
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the guard died before the prctl took hold
            os._exit(137)

    return arm


def outside(pgid: int, since: int) -> list[int]:
    """This process's descendants started since `since` that are not in the group `pgid`: what left it."""
    return sorted(set(descendants(os.getpid(), since)) - set(members(pgid)))


def signal_pids(pids: list[int], sig: int) -> None:
    """Send `sig` to each of `pids`; one that already ended is not an error."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def descendants(root: int, since: int, proc: Path = PROC) -> list[int]:
    """The running descendants of `root` (by parent pid, through every level) started at or after `since`
    (clock ticks after boot, as `start_time`): what a command started, not what was there before it."""
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name), proc)
            if fields:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        fields = _stat_fields(pid, proc)
        if fields and fields[0] not in ("Z", "X") and int(fields[19]) >= since:
            found.append(pid)
    return sorted(found)


def reap(pids: list[int]) -> None:
    """Collect the exit status of those of `pids` that became our children (re-parented to a subreaper):
    each one only, never another child of ours."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def stop_leftovers(
    pgid: int, since: int, grace: float, *, kill_wait: float, by: list[float] | None = None
) -> tuple[list[int], list[int]]:
    """What a command left running once it ended: its group's members (`cmd &`) and, re-parented to this
    process (a subreaper), what left the group (`setsid cmd`); only processes started since `since`,
    nothing the caller had before. SIGTERM, SIGKILL after `grace`. Returns (found, still there).
    `by` (a cancel's deadline, monotonic, when it holds one): they got the signal and its grace with the
    group, so SIGKILL at once, and wait for them no later than it."""
    if by:
        grace, kill_wait = 0.0, min(kill_wait, max(0.0, by[0] - time.monotonic()))

    def left() -> list[int]:
        return sorted(set(members(pgid)) | set(descendants(os.getpid(), since)))

    found = pids = left()
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, kill_wait)):
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        end = time.monotonic() + wait
        while (pids := left()) and time.monotonic() < end:
            reap(found)
            time.sleep(_POLL_SECONDS)
    reap(found)
    return found, pids
