"""Shared builders for the claim checkers' table tests: times, the check helper, Kueue snapshots."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from assertions.observed import Interval, PodObs, WorkloadObs, WorkloadSnapshot
from gpu_finops.facts.conditions import Condition

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def t(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def check(verdict, holds: bool, why: str | None = None) -> None:
    """holds must match; a failing verdict must say `why` (the precise reason, not a word any failure has)."""
    assert verdict.holds is holds, verdict.render()
    if why is not None:
        assert why in verdict.observed, f"expected {why!r} in: {verdict.observed}"


def cond(
    ctype: str, status: str, reason: str = "", message: str = "", at: datetime | None = None
) -> Condition:
    return Condition(ctype, status, reason, message, at)


def admitted_snap(
    at: float,
    cq: str | None = "team-a",
    flavors: tuple[str, ...] = ("gpu-spot",),
    uid: str | None = None,
    admitted: tuple[tuple[str, str], ...] = (),
) -> WorkloadSnapshot:
    return WorkloadSnapshot(
        t(at),
        {
            "QuotaReserved": cond("QuotaReserved", "True", "QuotaReserved"),
            "Admitted": cond("Admitted", "True", "Admitted", at=t(at)),
        },
        True,
        False,
        cluster_queue=cq,
        flavors=flavors,
        uid=uid,
        admitted=admitted,
    )


def pending_snap(at: float, uid: str | None = None) -> WorkloadSnapshot:
    return WorkloadSnapshot(
        t(at),
        {"QuotaReserved": cond("QuotaReserved", "False", "Pending", "couldn't assign flavors")},
        False,
        True,
        uid=uid,
    )


def with_uid(w: WorkloadObs, uid: str | None = None) -> WorkloadObs:
    """The Workload with every snapshot carrying one metadata.uid (one object throughout)."""
    return replace(w, snapshots=tuple(replace(s, uid=uid or f"uid-{w.name}") for s in w.snapshots))


def running_wl(
    name: str, tenant: str, start: float = 10, end: float | None = None, device: str | None = None
) -> WorkloadObs:
    uuid = device or f"GPU-{name}"
    return WorkloadObs(
        name,
        tenant,
        snapshots=(admitted_snap(5, tenant, uid=f"uid-{name}"),),
        pods=(
            PodObs(
                f"{name}-pod",
                "gpu-a",
                "Running",
                Interval(t(start), t(end) if end else None),
                devices=(uuid,),
            ),
        ),
        job=name,
    )


def pending_wl(name: str, tenant: str) -> WorkloadObs:
    return WorkloadObs(name, tenant, snapshots=(pending_snap(5, uid=f"uid-{name}"),), job=name)


def seen_until(workloads, at: datetime) -> tuple[WorkloadObs, ...]:
    """Each Workload looked at once more at `at` (the act's last look), unchanged since its last look: a
    history that covers the window."""
    return tuple(
        replace(w, snapshots=(*w.snapshots, replace(w.snapshots[-1], at=at))) if w.snapshots else w
        for w in workloads
    )
