"""Provenance: our tag alone never makes a resource ours, since whoever may tag a resource could set it.
A resource tagged as ours is deleted only when something we hold, and no tagger can write, shows that we
made it (docs/teardown.md, "Ownership that a tag alone cannot forge"):

- **our Terraform state**: its id, ARN or name is in a state file under the state directory;
- **our journal**: an earlier teardown of ours planned it, with its provenance then;
- **this run**: AWS says it was created at or after the start in our run record (`teardown begin`,
  written by `make up` before anything is created): Karpenter's nodes, launch templates and profiles;
- **inside something of ours**: every resource holding it (its VPC, its subnet) is proven ours.

A resource with our tag and none of these is reported as looking like ours, with the reason, and left.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from facts.timestamps import iso, parse
from teardown.journal import Journal
from teardown.model import Resource

RUN_FORMAT = "gpu-finops-teardown-run/1"


class EvidenceError(ValueError):
    """A run record or a state file that cannot be read (teardown refuses: exit 2)."""


@dataclass(frozen=True)
class Sources:
    """Where the evidence lies: read again at every survey (never cached)."""

    state_dir: Path
    run_record: Path
    journal: Path = Path("reports/teardown-journal.jsonl")


def run_record_path(cluster: str) -> Path:
    """The run record's default place: one per cluster, so two clusters' runs never share one."""
    return Path(f"reports/teardown-run-{cluster}.json")


@dataclass(frozen=True)
class Evidence:
    sources: Sources
    terraform: frozenset[str] = frozenset()  # every id, ARN and name in our state files
    started_at: datetime | None = None  # the run record's start
    journal: Mapping[str, str] = field(default_factory=dict)  # key -> provenance when it was planned


def write_run_record(path: Path, account: str, region: str, cluster: str, now: datetime) -> tuple[str, bool]:
    """Record that a run for this target begins now (whole seconds, rounded down), unless a record for
    the same target exists: the earliest start is kept. The start and whether it was written."""
    if path.exists():
        doc = _run_doc(path)
        for what, want in (("account", account), ("region", region), ("cluster", cluster)):
            if doc[what] != want:
                raise EvidenceError(
                    f"run record {path} is for {what} {doc[what]}, not {want}: move it away to begin a run "
                    "for this target"
                )
        return doc["started_at"], False
    started = iso(now.astimezone(UTC).replace(microsecond=0))
    doc = {
        "format": RUN_FORMAT,
        "account": account,
        "region": region,
        "cluster": cluster,
        "started_at": started,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=2)
    return started, True


def _run_doc(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvidenceError(
            f"run record {path}: not readable JSON ({exc}); move it away and run `teardown begin`"
        ) from None
    missing = [
        k for k in ("account", "region", "cluster", "started_at") if not isinstance(doc, dict) or k not in doc
    ]
    if not isinstance(doc, dict) or doc.get("format") != RUN_FORMAT or missing:
        raise EvidenceError(f"run record {path}: expected format {RUN_FORMAT!r} with {missing or 'its keys'}; "
                            "was it written by `teardown begin`?")  # fmt: skip
    return doc


def _state_ids(state_dir: Path) -> frozenset[str]:
    ids: set[str] = set()
    for path in sorted(state_dir.glob("*.tfstate")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise EvidenceError(f"Terraform state {path}: not readable JSON ({exc})") from None
        for res in doc.get("resources", []) if isinstance(doc, dict) else []:
            for inst in res.get("instances", []):
                attrs = inst.get("attributes") or {}
                ids.update(str(attrs[k]) for k in ("id", "arn", "name") if attrs.get(k))
    return frozenset(ids)


def gather(sources: Sources, account: str, region: str, cluster: str) -> Evidence:
    """Read the evidence now. A run record for another target is refused, not ignored."""
    started = None
    if sources.run_record.exists():
        doc = _run_doc(sources.run_record)
        for what, want in (("account", account), ("region", region), ("cluster", cluster)):
            if doc[what] != want:
                raise EvidenceError(f"run record {sources.run_record} is for {what} {doc[what]}, but this "
                                    f"run is for {what} {want}; nothing deleted")  # fmt: skip
        started = parse(doc["started_at"])
    journal = Journal(sources.journal).proven() if sources.journal.exists() else {}
    return Evidence(sources, _state_ids(sources.state_dir), started, journal)


def _direct(r: Resource, ev: Evidence) -> str:
    if r.provenance:  # the lister's own record (the spot SLR's)
        return r.provenance
    if r.id in ev.terraform or (r.name and r.name in ev.terraform):
        return f"in our Terraform state ({ev.sources.state_dir})"
    if r.key in ev.journal:
        return f"planned by an earlier teardown of ours ({ev.journal[r.key]})"
    created = r.details.get("created")
    if ev.started_at and created and parse(created) >= ev.started_at:
        return f"created {created}, after this run began ({iso(ev.started_at)})"
    return ""


def _unproven(r: Resource, ev: Evidence, inside: list[str]) -> str:
    created = r.details.get("created")
    if ev.started_at is None:
        when = f"and there is no run record ({ev.sources.run_record}) to compare its creation time with"
    elif not created:
        when = "and AWS gives no creation time to compare with this run's start"
    else:
        when = f"and it was created {created}, before this run began ({iso(ev.started_at)})"
    held = f"; it is inside {', '.join(inside)}, which is not ours" if inside else ""
    return (
        f"tagged {r.owned_by}, but nothing shows we made it: not in our Terraform state "
        f"({ev.sources.state_dir}) or journal, {when}{held}"
    )


def prove(found: Iterable[Resource], ev: Evidence) -> list[Resource]:
    """Each resource tagged as ours with its provenance; one without becomes a lookalike saying why."""
    found = list(found)
    proven = {r.key: why for r in found if r.ours and (why := _direct(r, ev))}
    changed = True
    while changed:  # containment: a subnet inside a proven VPC, then an ENI inside that subnet
        changed = False
        for r in found:
            inside = list(r.details.get("inside") or [])
            if r.ours and r.key not in proven and inside and all(k in proven for k in inside):
                proven[r.key] = f"inside {', '.join(inside)}, which is ours"
                changed = True
    out = []
    for r in found:
        if not r.ours:
            out.append(r)
        elif r.key in proven:
            out.append(replace(r, provenance=proven[r.key]))
        else:
            why = _unproven(r, ev, list(r.details.get("inside") or []))
            out.append(replace(r, owned_by="", lookalike=why))
    return out
