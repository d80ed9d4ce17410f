"""An append-only JSON-lines journal of a teardown: what was planned, started, deleted, failed.

Each entry is one whole line, written with a single append and fsynced, so a process killed at any point
leaves a journal that `resume` can read. Should a line still be torn (a kill mid-write, a full disk), it
is skipped with a warning and never hides the entries after it: the next write starts on a fresh line.
The journal is a record, not the truth: resume always re-lists the account.

With the state bucket (`state_backend: s3`), each process also keeps its own entries in one object of the
bucket (teardown/remote.py), rewritten whole after each entry, and a read merges the local file with every
part in the bucket: a runner whose disk was lost still finds what earlier runs planned and deleted. An entry
held in both places is read once; entries are read in the order they were written (their time).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_finops.facts import json_text
from gpu_finops.facts.errors import excerpt
from gpu_finops.facts.private_files import open_private, open_regular
from teardown.model import Resource
from teardown.remote import Remote, journal_part_name

MAX_PART_BYTES = (
    64 * 1024 * 1024
)  # one process's entries: a plan of every resource, then one line per deletion


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
    def __init__(self, path: str | Path, remote: Remote | None = None):
        self.path = Path(path)
        self.remote = remote
        self._warned: set[tuple[str, int]] = set()  # torn lines already reported, so each is said once
        self._mine: list[bytes] = []  # this process's entries, its part in the bucket
        self._part = journal_part_name() if remote is not None else ""

    def write(self, event: str, **data: Any) -> None:
        """Append one entry as one whole line (a single O_APPEND write), then fsync."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"t": time.time(), "event": event, **data}, default=str).encode() + b"\n"
        fd = open_private(self.path, os.O_RDWR | os.O_APPEND)  # account and resource ids: ours alone
        try:
            # A torn last line (no newline) would glue this entry onto it and lose both: start afresh.
            if _ends_torn(fd):
                line = b"\n" + line
            rest = line
            while rest:  # os.write may write less than asked (a signal, a nearly full disk)
                rest = rest[os.write(fd, rest) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if self.remote is not None:  # after the local line: a refused write leaves the local record whole
            self._mine.append(line.lstrip(b"\n"))
            self.remote.put(self._part, b"".join(self._mine))

    def _sources(self) -> Iterator[tuple[str, Iterable[bytes], bool]]:
        """Each place entries lie, as (where, its lines, whether it is written whole): the local file, then
        the bucket's parts (each put whole: a torn line there was written by someone else)."""
        if self.path.exists():
            with open_regular(self.path) as f:  # a FIFO put there would block teardown
                yield str(self.path), f, False
        if self.remote is not None:
            for where, body in self.remote.journal_parts(MAX_PART_BYTES):
                yield where, body.splitlines(), True

    def _entries(self) -> list[tuple[str, int, dict[str, Any]]]:
        """Every whole entry as (where, line number, entry), in the order written; an entry held both here
        and in the bucket once. A torn local line is skipped with a warning (a kill mid-write), the lines
        after it stand; a line of a bucket part that is no entry is a JournalError naming it."""
        entries: list[tuple[str, int, dict[str, Any]]] = []
        seen: set[str] = set()
        for where, lines, whole in self._sources():
            for line_no, raw in enumerate(lines, start=1):
                if not raw.strip():
                    continue
                try:
                    text = raw.decode("utf-8").strip()
                    entry = json_text.loads(text)
                except (UnicodeDecodeError, json_text.JSONTextError):
                    text, entry = repr(raw[:80]), None
                if not isinstance(entry, dict) or not isinstance(entry.get("event"), str):
                    if whole:
                        raise JournalError(
                            f"journal part {where}: line {line_no} is not an entry teardown writes ({excerpt(text, 80)}); "
                            "each part is put whole, so it was written by someone else: look at it, and move it away"
                        )
                    if (where, line_no) not in self._warned:
                        self._warned.add((where, line_no))
                        log.warning(
                            "journal %s: line %d is torn or not an entry (%r); skipped, later lines kept",
                            where,
                            line_no,
                            raw[:80],
                        )
                    continue
                if text in seen:  # the same entry, here and in the bucket: once
                    continue
                seen.add(text)
                entries.append((where, line_no, entry))
        if self.remote is not None:  # merged: in the order written (an entry without a time first)
            entries.sort(key=lambda w: _time(w[2].get("t")))
        return entries

    def events(self) -> Iterator[dict[str, Any]]:
        """Every whole entry, in order (see _entries)."""
        for _, _, entry in self._entries():
            yield entry

    def _plans(self) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
        """Every plan entry with its resources; one without a list of resources each with a type and an id
        (a hand edit, another tool's line) is a JournalError naming where it lies."""
        for where, line_no, e in self._entries():
            if e["event"] != "plan":
                continue
            rows = e.get("resources")
            if not isinstance(rows, list) or not all(
                isinstance(r, dict) and isinstance(r.get("type"), str) and isinstance(r.get("id"), str)
                for r in rows
            ):
                raise JournalError(
                    f"journal {where}: plan entry (line {line_no}) has no list of resources each with a type and an "
                    "id; it was not written by teardown: move the journal away (or remove that line) and run "
                    "`teardown plan` again"
                )
            yield e, rows

    def last_plan(self) -> list[Resource]:
        """The resources of the last plan entry (see _plans)."""
        plan: list[Resource] = []
        for _, rows in self._plans():
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
        for e, rows in self._plans():
            if (e.get("account"), e.get("region"), e.get("cluster")) != (account, region, cluster):
                continue
            for r in rows:
                if not r.get("provenance"):
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


def _time(t: Any) -> float:
    """An entry's time for ordering: a finite number, else before every other."""
    try:
        ok = isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t)
        return float(t) if ok else float("-inf")
    except OverflowError:  # an integer past a float's range
        return float("-inf")


def _ends_torn(fd: int) -> bool:
    """True when the file is not empty and its last byte is not a newline."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"
