"""Act 2: of twelve jobs, exactly two admitted, one per tenant, both running at once on different cards; the
rest queued. Decided over the whole observation window, never from the last snapshot alone."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from assertions.decide import decide
from assertions.observed import Interval, WorkloadObs
from assertions.verdict import Verdict

CLAIM = (
    "two of twelve admitted, one per tenant, both running at once on different GPUs; the other ten wait in "
    "Kueue"
)


@dataclass(frozen=True)
class AdmissionObs:
    workloads: tuple[WorkloadObs, ...]
    tenants: tuple[str, ...]  # the tenants' ClusterQueues (one per tenant, named as the tenant)
    expected_total: int = 12
    expected_admitted: int = 2
    observed_at: datetime | None = None


def _healthy_runs(w: WorkloadObs) -> tuple[list[Interval], list[str]]:
    """Running intervals of pods that did not crash, and the crashes."""
    runs, crashed = [], []
    for p in w.pods:
        if p.running is None:
            continue
        if p.phase == "Failed" or (p.exit_code not in (None, 0)):
            crashed.append(f"{p.name} ({p.phase}, exit {p.exit_code}, {p.reason})")
        else:
            runs.append(p.running)
    return runs, crashed


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
    # Ever admitted, in any snapshot of the window: an admission that came and went still counts.
    admitted = [w for w in wls if any(s.is_("QuotaReserved") and s.is_("Admitted") for s in w.snapshots)]
    waiting = [w for w in wls if w not in admitted]
    if len(admitted) != o.expected_admitted:
        f.append(
            f"{len(admitted)} admitted during the observation ({[w.name for w in admitted]}), expected exactly "
            f"{o.expected_admitted}"
        )
    # The tenant is the ClusterQueue Kueue charged, not the namespace the job was submitted from.
    charged = sorted(w.admitted_by or "<no clusterQueue in status.admission>" for w in admitted)
    if sorted(set(charged)) != sorted(o.tenants) or len(set(charged)) != len(charged):
        f.append(f"admitted per ClusterQueue {charged}, expected one each of {sorted(o.tenants)}")
    runs: list[tuple[str, list[Interval]]] = []
    for w in admitted:
        good, crashed = _healthy_runs(w)
        if crashed:
            f.append(f"admitted workload {w.name}'s pod crashed, which is not running: {crashed}")
        if not good:
            f.append(f"admitted workload {w.name} never had a healthy Running pod")
        runs.append((w.name, good))
    if len(runs) == 2 and all(iv for _, iv in runs) and o.observed_at is not None:
        (a, ia), (b, ib) = runs
        if not any(x.overlaps(y, o.observed_at) for x in ia for y in ib):
            f.append(f"{a} and {b} were admitted but never Running at the same time")
    cards: dict[str, set[str]] = {}
    for w in admitted:
        devices = {d.split("::", 1)[0] for p in w.pods for d in p.devices}
        if not devices:
            f.append(f"no GPU device was observed for {w.name}'s pod: which card it ran on is unproven")
        cards[w.name] = devices
    shared = sorted(set.intersection(*cards.values())) if len(cards) >= 2 and all(cards.values()) else []
    if shared:
        f.append(f"the admitted workloads ran on the same physical GPU {shared}: one card, not two")
    for w in waiting:
        if not w.snapshots:
            f.append(f"workload {w.name} was never observed")
            continue
        for s in w.snapshots:
            if s.is_("QuotaReserved") or s.has_admission:
                f.append(f"{w.name} held quota at {s.at.isoformat()} (QuotaReserved or status.admission) "
                         "without being Admitted")  # fmt: skip
                break
        # Kueue sets QuotaReserved=False only on workloads it tried to admit; those queued behind them have
        # no such condition yet. Both are pending; any other state is not.
        qr = w.snapshots[-1].conditions.get("QuotaReserved")
        if qr is not None and qr.status != "False":
            f.append(
                f"{w.name} is not pending in Kueue: QuotaReserved is {qr.status}, expected False or not set"
            )
        if any(s.job_suspended is False for s in w.snapshots) or w.pods:
            f.append(f"{w.name} reached the scheduler (Job unsuspended or pods exist) without admission")
    return decide(
        CLAIM,
        f"exactly {o.expected_admitted} of {o.expected_total} admitted over the window, one per ClusterQueue "
        f"{sorted(o.tenants)}, Running concurrently without crashing on different GPU UUIDs; the rest never "
        "held quota (QuotaReserved False or not set), Jobs suspended",
        f,
        f"admitted {[w.name for w in admitted]} by {charged}, running concurrently on "
        f"{[sorted(c) for c in cards.values()]}; {len(waiting)} pending",
        admitted=[w.name for w in admitted],
        cluster_queues=charged,
        cards={k: sorted(v) for k, v in cards.items()},
        pending=[w.name for w in waiting],
    )
