"""Start, watch and stop the local target's processes, by pid, with one log file each."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Proc:
    name: str
    pid: int
    argv: list[str]
    log: str


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

    def start(
        self, name: str, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> Proc:
        procs = self._load()
        if name in procs and self.alive(procs[name].pid):
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
        proc = Proc(name, p.pid, argv, str(log))
        procs[name] = proc
        self._save(procs)
        return proc

    def status(self) -> dict[str, tuple[Proc, bool]]:
        return {k: (p, self.alive(p.pid)) for k, p in self._load().items()}

    def exited(self, name: str) -> str | None:
        """None while running; else the tail of its log."""
        proc = self._load().get(name)
        if proc is None:
            return "never started"
        if self.alive(proc.pid):
            return None
        return Path(proc.log).read_text(errors="replace")[-3000:]

    def stop(self, name: str, grace: float = 10.0) -> bool:
        """Stop one process (SIGTERM, then SIGKILL after `grace`); True if it was running."""
        procs = self._load()
        proc = procs.get(name)
        if proc is None or not self.alive(proc.pid):
            return False
        self._kill(proc, grace)
        return True

    def _kill(self, proc: Proc, grace: float) -> None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while self.alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)

    def stop_all(self, grace: float = 10.0) -> list[str]:
        """Stop every process this supervisor started (reverse start order), by pid and process group."""
        procs = self._load()
        stopped = []
        for name, proc in reversed(list(procs.items())):
            if not self.alive(proc.pid):
                continue
            self._kill(proc, grace)
            stopped.append(name)
        self._save({})
        return stopped
