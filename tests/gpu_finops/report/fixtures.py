"""Small inputs in the shapes a run records: acts.json as acts/report.py writes it, a SQLite cost store
written through gpu_finops/cost/store.py, `ledger month|ladder --json` and `diagnose --all --json` output."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from assertions.verdict import ClauseFailure, Verdict
from gpu_finops.cost.holdings_record import IntervalHoldings
from gpu_finops.cost.store import SqliteCostStore
from tests.gpu_finops.cost.focus_fixtures import hold, iso, record

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
E0 = T0.timestamp()


def verdict(claim: str, holds: bool, observed: str) -> dict:
    """A verdict as acts/report.py records it: the checker's own Verdict, as a dict."""
    failures = () if holds else (ClauseFailure("requeued_on_a_new_node", "requeued", observed),)
    return Verdict(claim, holds, "as claimed", observed, {"nodes": ["gpu-a"], "timings": {"cold_start": 41.2}},
                   failures).to_dict()  # fmt: skip


def passing_acts() -> list[dict]:
    return [
        {"act": "test_01_cold_start", "outcome": "passed",
         "claim": "a GPU job on an empty pool starts within the cold-start budget",
         "verdict": verdict("a GPU job on an empty pool starts within the cold-start budget", True, "41 s"),
         "timings": {"cold_start": 41.2, "skew": -0.2}, "message": "", "evidence": None,
         "phases": [["submit the job", E0, E0 + 5], ["wait for a node", E0 + 5, E0 + 46]],
         "lifecycles": [["node gpu-a", E0 + 8, None], ["pod tenant-a/job-1", E0 + 40, E0 + 70]]},
        {"act": "test_02_quota_admits_one_job_per_tenant", "outcome": "passed",
         "claim": "the quota admits one job per tenant",
         "verdict": verdict("the quota admits one job per tenant", True, "one admitted each"),
         "timings": {"admit": 12.0}, "message": "", "evidence": None,
         "phases": [["admit", E0 + 80, E0 + 92]], "lifecycles": [["pod tenant-b/job-2", E0 + 85, E0 + 120]]},
    ]  # fmt: skip


def failing_act(evidence: Path) -> dict:
    return {"act": "test_05_spot_interruption", "outcome": "failed", "claim": "",
            "verdict": verdict("an interrupted spot node's job is requeued", False, "the job was killed"),
            "timings": {}, "message": "AssertionError:\nclaim: requeued\nobserved: the job was killed",
            "evidence": str(evidence),
            "phases": [["interrupt", E0 + 130, E0 + 160]], "lifecycles": [["pod tenant-a/job-3", E0 + 131, None]]}  # fmt: skip


def write_acts(folder: Path, acts: list[dict]) -> Path:
    path = folder / "acts.json"
    path.write_text(json.dumps({"target": "local", "finished": iso(T0 + timedelta(minutes=5)), "acts": acts}))
    return path


@dataclass(frozen=True)
class Rec:
    node: str
    start: float  # seconds after T0
    end: float
    util: float
    sm: float
    cost: float


def write_store(path: Path) -> list[Rec]:
    """Two nodes, 10-second records; gpu-a held by tenant-a, gpu-b half by tenant-b. Returns what it wrote."""
    store = SqliteCostStore(path)
    recs, held = [], []
    for node, sm, util in (("gpu-a", 0.45, 100.0), ("gpu-b", 0.2, 60.0)):
        for i in range(3):
            start = T0 + timedelta(seconds=10 * i)
            r = record(node, start=start, seconds=10, cost=0.005 + 0.001 * i, sm_active=sm)
            r.x_GpuUtilPercent = util
            recs.append(r)
            tenant = "tenant-a" if node == "gpu-a" else "tenant-b"
            h = hold(tenant, node=node, start=start if node == "gpu-a" else start + timedelta(seconds=5),
                     end=start + timedelta(seconds=10))  # fmt: skip
            held.append(IntervalHoldings(node, f"i-{node}", r.ChargePeriodStart, r.ChargePeriodEnd, "kube",
                                         r.ChargePeriodStart, (h,)))  # fmt: skip
    store.upsert(recs, held)
    store.close()
    return [Rec(r.ResourceName, 10 * (i % 3), 10 * (i % 3) + 10, r.x_GpuUtilPercent, r.x_SmActive, r.EffectiveCost)
            for i, r in enumerate(recs)]  # fmt: skip


LEDGER = {"start": "2026-11-01T00:00:00+00:00", "end": "2026-12-01T00:00:00+00:00", "step_seconds": 60,
          "installed_gpu_hours": "5760", "installed_gpu_hours_shown": 5760, "observed_samples": 43200,
          "expected_samples": 43200, "warnings": [],
          "lines": [{"line": "free_placeable", "label": "free, placeable", "owner": "platform",
                     "gpu_hours": "1440", "gpu_hours_shown": 1440, "share_percent": "25.0"},
                    {"line": "allocated_training_stepping", "label": "allocated: training, stepping",
                     "owner": "ml-training", "gpu_hours": "4320", "gpu_hours_shown": 4320, "share_percent": "75.0"}]}  # fmt: skip
LADDER = {"start": "2026-11-29T10:00:00+00:00", "end": "2026-11-30T10:00:00+00:00",
          "rungs": [{"rung": "installed", "now": "8", "mean_gpus": "8", "gpu_hours": "192"},
                    {"rung": "schedulable", "now": "8", "mean_gpus": "7.5", "gpu_hours": "180"},
                    {"rung": "allocated", "now": "6", "mean_gpus": "6", "gpu_hours": "144"}],
          "largest_placeable": "2", "largest_placeable_trend": {"points": 0}, "warnings": []}  # fmt: skip
DIAGNOSE = {"order": ["admission", "allocation", "memory", "placement", "application"], "window_s": 60,
            "dcgm": "read",
            "diagnoses": [{"target": "tenant-a/waits-memory", "kind": "pod", "first_cause": "memory",
                           "also_explains": [], "not_checked": [], "order": [],
                           "findings": [{"check": "admission", "explains": False, "summary": "admitted",
                                         "next_action": "", "evidence": {}, "key_evidence": []},
                                        {"check": "memory", "explains": True,
                                         "summary": "every card's VRAM is resident (98 %)",
                                         "next_action": "free a card or wait for the holder",
                                         "evidence": {"cards": ["GPU-1"]},
                                         "key_evidence": ["vram-full:gpu-a/GPU-1"]}]}]}  # fmt: skip


def write_all(folder: Path, acts: list[dict], *, cost: bool = True) -> dict[str, Path]:
    """Every input in `folder`, as the report's defaults name them; `cost` False: no store at all."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"acts": write_acts(folder, acts), "store": folder / "act-6-cost.sqlite",
             "ledger": folder / "ledger-month.json", "ladder": folder / "ledger-ladder.json",
             "diagnose": folder / "act-7-diagnose.json", "out": folder / "index.html"}  # fmt: skip
    if cost:
        write_store(paths["store"])
    paths["ledger"].write_text(json.dumps(LEDGER))
    paths["ladder"].write_text(json.dumps(LADDER))
    paths["diagnose"].write_text(json.dumps(DIAGNOSE))
    return paths
