"""The observation types refuse a Workload history no clause could read truly: conditions that are not the
model's Conditions by type, and looks out of time order. Each refusal names the object and what is wrong."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from assertions.observed import WorkloadObs, WorkloadSnapshot
from gpu_finops.model.workload import condition

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def look(seconds: int, **conds: str) -> WorkloadSnapshot:
    raw = [{"type": t, "status": s, "lastTransitionTime": "2026-12-01T12:00:00Z"} for t, s in conds.items()]
    return WorkloadSnapshot(T0 + timedelta(seconds=seconds), {c["type"]: condition(c) for c in raw}, False)


def test_a_history_in_time_order_is_read():
    w = WorkloadObs(
        "w",
        "team-a",
        snapshots=(look(0, QuotaReserved="False"), look(5, QuotaReserved="True", Admitted="True")),
    )
    assert w.first("Admitted") is w.snapshots[1]


def test_a_history_with_a_look_before_the_one_seen_first_is_refused_naming_both_times():
    with pytest.raises(ValueError) as refused:
        WorkloadObs(
            "w",
            "team-a",
            snapshots=(look(5, QuotaReserved="True", Admitted="True"), look(0, QuotaReserved="False")),
        )
    assert str(refused.value) == (
        "WorkloadObs w: snapshots out of time order (2026-12-01T12:00:05+00:00 then 2026-12-01T12:00:00+00:00)"
    )


def test_two_looks_at_the_same_instant_are_in_order():
    WorkloadObs(
        "w",
        "team-a",
        snapshots=(look(0, QuotaReserved="False"), look(0, QuotaReserved="True", Admitted="True")),
    )


def test_conditions_as_the_apis_dicts_are_refused_not_crashed_on():
    raw = {"Admitted": {"type": "Admitted", "status": "True"}}
    with pytest.raises(ValueError) as refused:
        WorkloadSnapshot(T0, raw, True)  # type: ignore[arg-type]
    assert str(refused.value) == (
        "WorkloadSnapshot at 2026-12-01T12:00:00+00:00: conditions must map each type to its Condition "
        "(gpu_finops.model.workload.conditions reads status.conditions so); got [\"'Admitted': dict\"]"
    )


def test_a_condition_filed_under_another_type_is_refused():
    admitted = condition({"type": "Admitted", "status": "True"})
    with pytest.raises(ValueError, match=r"got \[\"'Finished': Condition\"\]"):
        WorkloadSnapshot(T0, {"Finished": admitted}, True)
