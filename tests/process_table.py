"""What the kernel says is still running, read from /proc for tests that start real processes, written
apart from the product's harness/process_group.py so a test does not vouch for the code with the code."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, process group) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2])


def running(pid: int) -> bool:
    """Exists and is not a zombie (a zombie runs nothing)."""
    stat = _stat(pid)
    return stat is not None and stat[0] not in "ZX"


def group(pgid: int) -> list[int]:
    """The running processes of process group `pgid`."""
    pids = (int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit())
    return sorted(p for p in pids if (s := _stat(p)) and s[0] not in "ZX" and s[2] == pgid)


def descendants(pid: int) -> list[int]:
    """Every running process below `pid` by parent links, as a process-tree kill finds them."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (s := _stat(int(entry.name))) and s[0] not in "ZX":
            children.setdefault(s[1], []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def wait_for_file(path: Path, timeout: float = 15.0) -> str:
    """The file's text once a process has written it (a line ending in a newline)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and (text := path.read_text()).endswith("\n"):
            return text
        time.sleep(0.02)
    raise AssertionError(f"{path} was not written within {timeout}s")


def kill_group(pgid: int) -> None:
    """Clean up after a failed test: nothing it started may outlive it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
