"""Act 2: of twelve jobs, exactly two admitted, one per tenant, both running at once; the rest queued."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from assertions.decide import decide
from assertions.observed import WorkloadObs
from assertions.verdict import Verdict

CLAIM = "two of twelve admitted, both running at once, one per tenant; the other ten wait in Kueue"


@dataclass(frozen=True)
class AdmissionObs:
    workloads: tuple[WorkloadObs, ...]
    tenants: tuple[str, ...]
    expected_total: int = 12
    expected_admitted: int = 2
    observed_at: datetime | None = None


def check_admission(o: AdmissionObs) -> Verdict:
    f: list[str] = []
    wls = list(o.workloads)
    if len(wls) != o.expected_total:
        f.append(f"observed {len(wls)} workloads, expected {o.expected_total}")
    finished = [w.name for w in wls if any(s.is_("Finished") for s in w.snapshots)]
    if finished:
        f.append(
            f"workloads Finished during the observation ({finished}): their quota was handed on, so the "
            "admissions seen are not one steady state"
        )
    admitted = [
        w
        for w in wls
        if w.last and w.last.is_("QuotaReserved") and w.last.is_("Admitted") and not w.last.is_("Finished")
    ]
    waiting = [w for w in wls if w not in admitted]
    if len(admitted) != o.expected_admitted:
        f.append(f"{len(admitted)} admitted ({[w.name for w in admitted]}), expected {o.expected_admitted}")
    tenants = sorted(w.tenant for w in admitted)
    if sorted(set(tenants)) != sorted(o.tenants) or len(set(tenants)) != len(tenants):
        f.append(f"admitted per tenant {tenants}, expected one each of {sorted(o.tenants)}")
    running = []
    for w in admitted:
        intervals = [p.running for p in w.pods if p.running is not None]
        if not intervals:
            f.append(f"admitted workload {w.name} never had a Running pod")
        running.append((w.name, intervals))
    if len(running) == 2 and all(iv for _, iv in running) and o.observed_at is not None:
        (a, ia), (b, ib) = running
        if not any(x.overlaps(y, o.observed_at) for x in ia for y in ib):
            f.append(f"{a} and {b} were admitted but never Running at the same time")
    for w in waiting:
        s = w.last
        if s is None:
            f.append(f"workload {w.name} was never observed")
            continue
        if s.is_("QuotaReserved") or s.has_admission:
            f.append(f"{w.name} holds quota (QuotaReserved True or status.admission set) but is not Admitted")
        # Kueue sets QuotaReserved=False only on workloads it tried to admit; those queued behind them have
        # no such condition yet. Both are pending; any other state is not.
        qr = s.conditions.get("QuotaReserved")
        if qr is not None and qr.status != "False":
            f.append(
                f"{w.name} is not pending in Kueue: QuotaReserved is {qr.status}, expected False or not set"
            )
        if s.job_suspended is False or w.pods:
            f.append(f"{w.name} reached the scheduler (Job unsuspended or pods exist) without admission")
    return decide(
        CLAIM,
        f"{o.expected_admitted} of {o.expected_total} admitted, one per tenant "
        f"{sorted(o.tenants)}, Running concurrently; the rest without quota (QuotaReserved False or not set), "
        "Jobs suspended",
        f,
        f"admitted {[w.name for w in admitted]} from {tenants}, running concurrently; {len(waiting)} pending",
        admitted=[w.name for w in admitted],
        pending=[w.name for w in waiting],
    )
