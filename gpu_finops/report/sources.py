"""What the report reads, each input on its own: the acts' JSON (acts/report.py writes it), the cost store
(opened read-only), a ledger month and its ladder (`gpu-finops ledger month|ladder --json`) and the
diagnosis (`gpu-finops diagnose --all --json`). Each comes back as its data, or as `Absent` saying why it
is missing and what makes it; a section is drawn only from data.

This is the one module of the report that imports the ledger (and would import diagnose): when those
packages move, only the imports here change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from gpu_finops.cost.cost_report import NodeSummary, summarize
from gpu_finops.cost.focus import FocusContext, focus_dataset
from gpu_finops.cost.records import CostRecord
from gpu_finops.cost.store import SqliteCostStore
from gpu_finops.facts import file_schema, input_files
from gpu_finops.facts.errors import UsageError, excerpt
from gpu_finops.facts.file_schema import FileModel
from gpu_finops.ledger.render import RUNG_LABELS
from gpu_finops.report import schemas

M = TypeVar("M", bound=FileModel)

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
    return input_files.read_json(path, what)


def load(path: Path, what: str, how: str, model: type[M]) -> M | Absent:
    """The file as `model` (gpu_finops/report/schemas.py); Absent when there is none; exit 2 naming the
    place inside it when its shape is wrong."""
    data = load_json(path, what, how)
    if isinstance(data, Absent):
        return data
    return file_schema.validate(model, data, str(path), input_files.kind(what))


def _spans(rows: list[tuple[str, float, float | None]], path: Path, act: str, what: str) -> list[Span]:
    spans = [Span(name, start, end) for name, start, end in rows]
    for span in spans:  # an end before its start is no span
        if span.end is not None and span.end < span.start:
            raise UsageError(f"{path}: act {act}: {what} row {excerpt(span.label, 60)!r} runs from {span.start} "
                             f"to {span.end}: expected the end not before the start")  # fmt: skip
    return spans


def acts_run(path: Path) -> ActsRun | Absent:
    data = load(path, "acts report", "`make acts` or `make demo` writes it", schemas.ActsReportFile)
    if isinstance(data, Absent):
        return data
    acts = [
        Act(
            name=a.act,
            outcome=a.outcome,
            claim=a.claim,
            verdict=None if a.verdict is None else a.verdict.model_dump(),
            timings=dict(a.timings),
            message=a.message,
            evidence=a.evidence,
            phases=_spans(a.phases, path, a.act, "phases"),
            lifecycles=_spans(a.lifecycles, path, a.act, "lifecycles"),
        )
        for a in data.acts
    ]
    if not acts:
        return Absent(f"{path} lists no act: the run collected none")
    return ActsRun(data.target, data.finished, acts)


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
    if (
        path.exists() and not path.is_file()
    ):  # a directory, a FIFO or a device named as the store is a mistake
        raise UsageError(
            f"--store {path}: not a regular file (a directory, FIFO or device); name the SQLite store"
        )
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


def _command_output(path: Path, what: str, how: str, model: type[FileModel]) -> dict[str, Any] | Absent:
    """A command's --json output, checked against its schema: Absent when there is no file."""
    data = load(path, what, how, model)
    return data if isinstance(data, Absent) else data.model_dump()


def ledger_month(path: Path) -> dict[str, Any] | Absent:
    return _command_output(
        path,
        "ledger month",
        "`gpu-finops ledger month --month YYYY-MM --json > FILE` writes it",
        schemas.LedgerMonthFile,
    )


def ladder(path: Path) -> dict[str, Any] | Absent:
    return _command_output(
        path, "allocation ladder", "`gpu-finops ledger ladder --json > FILE` writes it", schemas.LadderFile
    )


def diagnosis(path: Path) -> dict[str, Any] | Absent:
    return _command_output(
        path,
        "diagnosis",
        "`gpu-finops diagnose --all --json > FILE` writes it; act 7 leaves one there",
        schemas.DiagnosisFile,
    )
