"""An append-only JSON-lines journal of a teardown: what was planned, started, deleted, failed.

Each entry is one whole line, written with a single append and fsynced, so a process killed at any point
leaves a journal that `resume` can read. Should a line still be torn (a kill mid-write, a full disk), it
is skipped with a warning and never hides the entries after it: the next write starts on a fresh line.
The journal is a record, not the truth: resume always re-lists the account.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_finops.facts.private_files import open_private, open_regular
from teardown.model import Resource


class JournalError(ValueError):
    """A journal entry of the right event whose content teardown never writes (exit 2, naming it)."""


log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Planned:
    """A resource as an earlier plan of ours for this account, region and cluster held it."""

    provenance: str  # shown, never trusted: a hand-edited string proves nothing by itself
    unique_id: str  # AWS's unique id then (IAM's RoleId, ...), or ""
    created: str  # AWS's creation time then (ISO), or ""
    run: str  # the run record's start then, or "" (no run record)


class Journal:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._warned: set[int] = set()  # torn lines already reported, so each is said once

    def write(self, event: str, **data: Any) -> None:
        """Append one entry as one whole line (a single O_APPEND write), then fsync."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"t": time.time(), "event": event, **data}, default=str).encode() + b"\n"
        fd = open_private(self.path, os.O_RDWR | os.O_APPEND)  # account and resource ids: ours alone
        try:
            # A torn last line (no newline) would glue this entry onto it and lose both: start afresh.
            if _ends_torn(fd):
                line = b"\n" + line
            while line:  # os.write may write less than asked (a signal, a nearly full disk)
                line = line[os.write(fd, line) :]
            os.fsync(fd)
        finally:
            os.close(fd)

    def events(self) -> Iterator[dict[str, Any]]:
        """Every whole entry, in order; a torn line is skipped with a warning, the lines after it stand."""
        if not self.path.exists():
            return
        with open_regular(self.path) as f:  # a FIFO put there would block teardown
            for line_no, raw in enumerate(f, start=1):
                if not raw.strip():
                    continue
                try:
                    entry = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                    entry = None
                if not isinstance(entry, dict) or not isinstance(entry.get("event"), str):
                    if line_no not in self._warned:
                        self._warned.add(line_no)
                        log.warning(
                            "journal %s: line %d is torn or not an entry (%r); skipped, later lines kept",
                            self.path,
                            line_no,
                            raw[:80],
                        )
                    continue
                yield entry

    def last_plan(self) -> list[Resource]:
        """The resources of the last plan entry; a plan entry without a list of resources each with a type
        and an id (a hand edit, another tool's line) is a JournalError naming it."""
        plan: list[Resource] = []
        for n, e in enumerate(self.events(), start=1):
            if e["event"] == "plan":
                rows = e.get("resources")
                if not isinstance(rows, list) or not all(
                    isinstance(r, dict) and isinstance(r.get("type"), str) and isinstance(r.get("id"), str)
                    for r in rows
                ):
                    raise JournalError(
                        f"journal {self.path}: plan entry (entry {n}) has no list of resources each with a type and "
                        "an id; it was not written by teardown: move the journal away (or remove that line) and "
                        "run `teardown plan` again"
                    )
                plan = [Resource.from_dict(r) for r in rows]
        return plan

    def proven(self, account: str, region: str, cluster: str) -> dict[str, Planned]:
        """Every key an earlier plan of ours *for this account, region and cluster* held, with what
        identified it then. The journal is kept forever and shared by every cluster, region and account: a
        plan entry without its account, region and cluster (older ones), or for another, proves nothing
        (another cluster's plan is its own: a resource of it with its cluster tag removed is still not
        ours). The provenance string is only shown: what proves is the identity check in
        teardown.provenance."""
        out: dict[str, Planned] = {}
        for e in self.events():
            if e["event"] != "plan" or (e.get("account"), e.get("region"), e.get("cluster")) != (
                account,
                region,
                cluster,
            ):
                continue
            resources = e.get("resources")
            for r in resources if isinstance(resources, list) else []:
                if not (isinstance(r, dict) and r.get("provenance") and "type" in r and "id" in r):
                    continue
                details = r.get("details") if isinstance(r.get("details"), dict) else {}
                out[f"{r['type']}/{r['id']}"] = Planned(
                    str(r["provenance"]),
                    str(details.get("unique_id") or ""),
                    str(details.get("created") or ""),
                    str(e.get("run") or ""),
                )
        return out

    def deleted(self) -> set[str]:
        return {e["key"] for e in self.events() if e["event"] == "deleted" and isinstance(e.get("key"), str)}

    def finished(self) -> bool:
        """True when the last destroy or resume in the journal ran to its end."""
        state = False
        for e in self.events():
            if e["event"] in ("destroy-start", "resume-start"):
                state = False
            elif e["event"] in ("destroy-end", "resume-end"):
                state = True
        return state


def _ends_torn(fd: int) -> bool:
    """True when the file is not empty and its last byte is not a newline."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"
