"""Shared observations for the claim tables: a time base, the verdict check, and the recorded shapes
more than one act's table starts from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from assertions.observed import Condition, NodeObs, WorkloadSnapshot

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def t(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def check(verdict, holds: bool, why: str | None = None) -> None:
    assert verdict.holds is holds, verdict.render()
    if why is not None:
        assert why in verdict.observed, f"expected {why!r} in: {verdict.observed}"


SPOT_NODE = NodeObs(
    "gpu-a",
    created=t(40),
    labels={"karpenter.sh/capacity-type": "spot"},
    allocatable_gpu=1,
    capacity_gpu=1,
    ready_at=t(90),
    nodeclaim="gpu-spot-x1",
    nodeclaim_nodepool="gpu-spot",
    nodeclaim_launched_at=t(30),
)


def cond(ctype: str, status: str, reason: str = "", message: str = "") -> Condition:
    return Condition(ctype, status, reason, message)


def admitted_snap(at: float) -> WorkloadSnapshot:
    return WorkloadSnapshot(
        t(at),
        {
            "QuotaReserved": cond("QuotaReserved", "True", "QuotaReserved"),
            "Admitted": cond("Admitted", "True", "Admitted"),
        },
        True,
        False,
    )


def pending_snap(at: float) -> WorkloadSnapshot:
    return WorkloadSnapshot(
        t(at),
        {"QuotaReserved": cond("QuotaReserved", "False", "Pending", "couldn't assign flavors")},
        False,
        True,
    )
