"""What the report reads, each input on its own: the acts' JSON (acts/report.py writes it), the cost store
(opened read-only), a ledger month and its ladder (`gpu-finops ledger month|ladder --json`) and the
diagnosis (`gpu-finops diagnose --all --json`). Each comes back as its data, or as `Absent` saying why it
is missing and what makes it; a section is drawn only from data.

This is the one module of the report that imports the ledger (and would import diagnose): when those
packages move, only the imports here change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from gpu_finops.cost.cost_report import NodeSummary, summarize
from gpu_finops.cost.focus import FocusContext, focus_dataset
from gpu_finops.cost.records import CostRecord
from gpu_finops.cost.store import SqliteCostStore
from gpu_finops.facts import input_files
from gpu_finops.facts.errors import ConfigError, UsageError, excerpt, shown
from gpu_finops.ledger.render import RUNG_LABELS

__all__ = ["RUNG_LABELS", "Absent", "Act", "ActsRun", "CostData", "Span", "TenantCost", "load_json"]


@dataclass(frozen=True)
class Absent:
    """A section's data is missing: `reason` says what was looked for, where, and what writes it."""

    reason: str


@dataclass(frozen=True)
class Span:
    label: str
    start: float  # epoch seconds
    end: float | None  # None: the end was not observed


@dataclass(frozen=True)
class Act:
    name: str
    outcome: str  # passed | failed | skipped | not run
    claim: str
    verdict: dict[str, Any] | None
    timings: dict[str, Any]
    message: str
    evidence: str | None  # the folder a failing act's evidence was written to
    phases: list[Span] = field(default_factory=list)
    lifecycles: list[Span] = field(default_factory=list)

    @property
    def title(self) -> str:
        return self.name.removeprefix("test_")

    @property
    def watched_until(self) -> float | None:
        """The last moment the act was watching: its last phase's end."""
        return max((p.end for p in self.phases if p.end is not None), default=None)


@dataclass(frozen=True)
class ActsRun:
    target: str
    finished: str
    acts: list[Act]


def load_json(path: Path, what: str, how: str) -> Any | Absent:
    """The file's JSON; Absent when there is no file (saying `how` to make one); a file that is not JSON
    is a usage error naming it (exit 2), not a section quietly left out."""
    if not path.exists():
        return Absent(f"no {what}: {path} does not exist ({how})")
    try:
        return input_files.read_json(path, what)
    except ConfigError as exc:
        raise UsageError(f"{path}: not readable as {what} JSON: {exc.problem}") from None


def _spans(rows: Any, path: Path, act: str, what: str) -> list[Span]:
    try:
        spans = [Span(str(name), float(s), None if e is None else float(e)) for name, s, e in rows or []]
    except (TypeError, ValueError):
        raise UsageError(f"{path}: act {act}: {what} must be [name, start, end|null] rows") from None
    for span in spans:  # NaN and inf parse as floats (JSON's NaN) but are no moment; an end before its start
        if (
            not all(math.isfinite(t) for t in (span.start, span.end or 0.0))
            or (span.end or span.start) < span.start
        ):
            raise UsageError(f"{path}: act {act}: {what} row {excerpt(span.label, 60)!r} runs from {span.start} "
                             f"to {span.end}: expected finite epoch seconds, the end not before the start")  # fmt: skip
    return spans


def _timings(value: Any, path: Path, act: str) -> dict[str, Any]:
    """name -> seconds (a number) or null (not measured)."""
    timings = value or {}
    if not isinstance(timings, dict) or not all(
        v is None or (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v))
        for v in timings.values()
    ):
        raise UsageError(f"{path}: act {act}: timings must map names to seconds (finite numbers) or null, "
                         f"found {shown(timings)}")  # fmt: skip
    return dict(timings)


def acts_run(path: Path) -> ActsRun | Absent:
    data = load_json(path, "acts report", "`make acts` or `make demo` writes it")
    if isinstance(data, Absent):
        return data
    if not isinstance(data, dict) or not isinstance(data.get("acts"), list):
        raise UsageError(f"{path}: expected the acts report's JSON object with an 'acts' list")
    acts = []
    for i, a in enumerate(data["acts"]):
        if not isinstance(a, dict):
            raise UsageError(
                f"{path}: act {i + 1} is {shown(a)}; expected an object with 'act', 'outcome', ..."
            )
        if not isinstance(a.get("verdict"), dict | None):
            raise UsageError(
                f"{path}: act {i + 1}: verdict is {shown(a['verdict'])}; expected an object or null"
            )
        name = str(a.get("act", "?"))
        acts.append(
            Act(
                name=name,
                outcome=str(a.get("outcome", "not run")),
                claim=str(a.get("claim") or ""),
                verdict=a.get("verdict"),
                timings=_timings(a.get("timings"), path, name),
                message=str(a.get("message") or ""),
                evidence=a.get("evidence"),
                phases=_spans(a.get("phases"), path, name, "phases"),
                lifecycles=_spans(a.get("lifecycles"), path, name, "lifecycles"),
            )
        )
    if not acts:
        return Absent(f"{path} lists no act: the run collected none")
    return ActsRun(str(data.get("target", "?")), str(data.get("finished", "?")), acts)


@dataclass(frozen=True)
class TenantCost:
    tenant: str
    cost: Decimal
    idle_cost: Decimal | None  # over the intervals whose SM_ACTIVE was measured
    measured_cost: Decimal

    @property
    def idle_share(self) -> float | None:
        return (
            float(self.idle_cost / self.measured_cost)
            if self.idle_cost is not None and self.measured_cost
            else None
        )


@dataclass(frozen=True)
class CostData:
    store: str
    records: list[CostRecord]
    nodes: list[NodeSummary]
    tenants: list[TenantCost] | Absent


def tenants(records: list[CostRecord], holdings: dict) -> list[TenantCost] | Absent:
    """Each tenant's cost and idle cost, split by GPU-seconds held exactly as the FOCUS export splits it
    (gpu_finops.cost.focus), from the holdings the collector recorded per interval."""
    if not holdings:
        return Absent(
            "no GPU holdings were recorded in the store, so no cost can be split per tenant (the collector "
            "records them with --holdings kube)"
        )
    rows = focus_dataset(records, holdings, FocusContext("report", "report")).rows
    out: dict[str, list[Decimal | None]] = {}
    for r in rows:
        cost, idle, measured = out.setdefault(r["x_Tenant"], [Decimal(0), None, Decimal(0)])
        idle_part = r["x_IdleCost"]
        out[r["x_Tenant"]] = [
            cost + r["EffectiveCost"],  # type: ignore[operator]
            idle if idle_part is None else (idle or Decimal(0)) + idle_part,
            measured + (r["EffectiveCost"] if idle_part is not None else 0),  # type: ignore[operator]
        ]
    return sorted(
        (TenantCost(t, c, i, m) for t, (c, i, m) in out.items()),  # type: ignore[arg-type]
        key=lambda t: (-t.cost, t.tenant),
    )


def cost_data(path: Path) -> CostData | Absent:
    if not path.is_file():
        return Absent(
            f"no cost store at {path}: no cost was recorded in this run (act 6 leaves its store there; "
            "elsewhere give --store with the collector's SQLite file)"
        )
    store = SqliteCostStore(path, read_only=True)
    try:
        records = store.records()
        holdings = store.holdings()
    finally:
        store.close()
    if not records:
        return Absent(f"the cost store {path} holds no cost record: the collector wrote none")
    return CostData(str(path), records, summarize(records), tenants(records, holdings))


def _command_output(path: Path, what: str, how: str, key: str, expected: str) -> dict[str, Any] | Absent:
    """A command's --json output: Absent when there is no file; a usage error naming the file when it is
    not an object with a list under `key` (`expected` says what it should be)."""
    data = load_json(path, what, how)
    if not isinstance(data, Absent) and not isinstance(
        data.get(key) if isinstance(data, dict) else None, list
    ):
        raise UsageError(f"{path}: expected {expected}")
    return data


def ledger_month(path: Path) -> dict[str, Any] | Absent:
    return _command_output(
        path,
        "ledger month",
        "`gpu-finops ledger month --month YYYY-MM --json > FILE` writes it",
        "lines",
        "`gpu-finops ledger month --json` output (an object with 'lines')",
    )


def ladder(path: Path) -> dict[str, Any] | Absent:
    return _command_output(
        path,
        "allocation ladder",
        "`gpu-finops ledger ladder --json > FILE` writes it",
        "rungs",
        "`gpu-finops ledger ladder --json` output (an object with 'rungs')",
    )


def diagnosis(path: Path) -> dict[str, Any] | Absent:
    return _command_output(
        path,
        "diagnosis",
        "`gpu-finops diagnose --all --json > FILE` writes it; act 7 leaves one there",
        "diagnoses",
        "`gpu-finops diagnose --all --json` output (with 'diagnoses')",
    )
