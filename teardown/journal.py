"""An append-only JSON-lines journal of a teardown: what was planned, started, deleted, failed.

Each line is flushed and fsynced as it is written, so a process killed at any point leaves a journal
that `resume` can read. The journal is a record, not the truth: resume always re-lists the account.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from teardown.model import Resource


class Journal:
    def __init__(self, path: str | Path):
        self.path = Path(path)

    def write(self, event: str, **data: Any) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"t": time.time(), "event": event, **data}, default=str)
        with self.path.open("a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def events(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        with self.path.open() as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    return  # a line cut short by a kill: everything before it stands

    def last_plan(self) -> list[Resource]:
        plan: list[Resource] = []
        for e in self.events():
            if e["event"] == "plan":
                plan = [Resource.from_dict(r) for r in e["resources"]]
        return plan

    def deleted(self) -> set[str]:
        return {e["key"] for e in self.events() if e["event"] == "deleted"}

    def finished(self) -> bool:
        """True when the last destroy or resume in the journal ran to its end."""
        state = False
        for e in self.events():
            if e["event"] in ("destroy-start", "resume-start"):
                state = False
            elif e["event"] in ("destroy-end", "resume-end"):
                state = True
        return state
