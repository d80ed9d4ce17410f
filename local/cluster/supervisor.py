"""Start, watch and stop the local target's processes, by pid, with one log file each.

A stored pid names our process only while that process lives: after it ends the kernel may give the
number to anything, and a `local down` days later would SIGTERM (then SIGKILL) that stranger's whole
process group. So each record keeps the process's start time (/proc/<pid>/stat field 22) from when it
was started, and a pid whose start time differs is someone else's: never signalled, reported as not
running. A record from before start times were kept is checked by its command line instead."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from harness import process_group
from harness.process_group import PROC, start_time

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Proc:
    name: str
    pid: int
    argv: list[str]
    log: str
    start_time: int | None = None  # /proc/<pid>/stat field 22 when started; None in older records


class Supervisor:
    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.logs = run_dir / "logs"
        self.state = run_dir / "processes.json"

    def _load(self) -> dict[str, Proc]:
        if not self.state.exists():
            return {}
        return {k: Proc(**v) for k, v in json.loads(self.state.read_text()).items()}

    def _save(self, procs: dict[str, Proc]) -> None:
        self.state.write_text(json.dumps({k: v.__dict__ for k, v in procs.items()}, indent=2))

    @staticmethod
    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        try:  # a zombie is not alive
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split(")")[-1].split()[0] != "Z"
        except OSError:
            return False

    @classmethod
    def ours(cls, proc: Proc) -> bool:
        """The pid still names the process we started (alive, same start time), not a later one."""
        if not cls.alive(proc.pid):
            return False
        if proc.start_time is not None:
            same = start_time(proc.pid) == proc.start_time
        else:  # a record from before start times were kept: the command line must be ours
            try:
                same = (PROC / str(proc.pid) / "cmdline").read_bytes().split(b"\0")[:-1] == [
                    os.fsencode(a) for a in proc.argv
                ]
            except OSError:
                same = False
        if not same:
            logger.warning(
                "%s: pid %d is now another process (started at a different time); not ours to signal",
                proc.name,
                proc.pid,
            )
        return same

    def start(
        self, name: str, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> Proc:
        procs = self._load()
        if name in procs and self.ours(procs[name]):
            return procs[name]
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{name}.log"
        with log.open("ab") as f:
            f.write(f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(argv)}\n".encode())
            p = subprocess.Popen(
                argv,
                stdout=f,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,
            )
        # Read at once: the child exists from fork on, and exec does not change its start time.
        proc = Proc(name, p.pid, argv, str(log), start_time(p.pid))
        procs[name] = proc
        self._save(procs)
        return proc

    def status(self) -> dict[str, tuple[Proc, bool]]:
        return {k: (p, self.ours(p)) for k, p in self._load().items()}

    def exited(self, name: str) -> str | None:
        """None while running; else the tail of its log."""
        proc = self._load().get(name)
        if proc is None:
            return "never started"
        if self.ours(proc):
            return None
        return Path(proc.log).read_text(errors="replace")[-3000:]

    def stop(self, name: str, grace: float = 10.0) -> bool:
        """Stop one process (SIGTERM, then SIGKILL after `grace`); True if it was running."""
        procs = self._load()
        proc = procs.get(name)
        if proc is None or not (self.ours(proc) or self._left_behind(proc)):
            return False
        self._kill(proc, grace)
        return True

    @classmethod
    def _left_behind(cls, proc: Proc) -> list[int]:
        """Members of the group our process led that outlived it (a child ignoring SIGTERM, say). While
        any member is left the kernel keeps the group's id from reuse, so they are the group we started,
        unless the id names a live leader that is not ours; and each must have started after ours."""
        if proc.start_time is None or cls.alive(proc.pid):
            return []  # a live leader is ours or a stranger (ours() decides); an old record tells no start
        return [pid for pid in process_group.members(proc.pid) if (start_time(pid) or -1) >= proc.start_time]

    def _kill(self, proc: Proc, grace: float) -> None:
        """SIGTERM the group, SIGKILL what is left of it after `grace`: the leader *and* every member."""
        ours = self.ours(proc)
        members = [] if ours else self._left_behind(proc)
        if not ours and not members:
            return
        if ours:
            process_group.signal_group(proc.pid, signal.SIGTERM)
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while (self.ours(proc) or self._left_behind(proc)) and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.ours(proc):  # checked again: the pid may have been reused while we waited
            process_group.signal_group(proc.pid, signal.SIGKILL)
        for pid in self._left_behind(proc):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        end = time.monotonic() + grace
        while self._left_behind(proc) and time.monotonic() < end:  # SIGKILL is not instant
            time.sleep(0.05)

    def stop_all(self, grace: float = 10.0) -> list[str]:
        """Stop every process this supervisor started (reverse start order), by pid and process group."""
        procs = self._load()
        stopped = []
        for name, proc in reversed(list(procs.items())):
            if not self.ours(proc) and not self._left_behind(proc):
                continue
            self._kill(proc, grace)
            stopped.append(name)
        self._save({})
        return stopped
