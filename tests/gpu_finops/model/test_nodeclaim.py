"""A NodeClaim's lifecycle: when each condition became true, and the order an observed history must keep."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpu_finops.model import nodeclaim as nc
from gpu_finops.model.violation import Violation

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


RAW = [
    {"type": "Launched", "status": "True", "lastTransitionTime": "2026-12-01T12:00:03Z"},
    {"type": "Registered", "status": "False", "lastTransitionTime": "2026-12-01T12:00:04Z"},
]


def test_a_condition_counts_as_became_true_only_when_true():
    assert nc.became_true(RAW, nc.LAUNCHED) == "2026-12-01T12:00:03Z"
    assert nc.became_true(RAW, nc.REGISTERED) is None
    assert nc.became_true(None, nc.LAUNCHED) is None
    assert nc.statuses(RAW) == {"Launched": "True", "Registered": "False"}


def test_a_claim_created_then_launched_registered_and_initialized_in_order_holds():
    steps = {nc.LAUNCHED: at(3), nc.REGISTERED: at(3.5), nc.INITIALIZED: at(9)}
    assert nc.in_lifecycle_order("gpu-x", at(0), steps) == []
    assert nc.in_lifecycle_order("gpu-x", None, {nc.LAUNCHED: at(3)}) == []  # creation not read
    assert nc.in_lifecycle_order("gpu-x", at(0), {nc.INITIALIZED: at(9)}) == []  # steps not seen skip


@pytest.mark.parametrize(
    "steps, observed",
    [
        (
            {nc.LAUNCHED: at(-5)},
            "NodeClaim gpu-x Launched 2026-12-01T11:59:55Z before it was created 2026-12-01T12:00:00Z",
        ),
        (
            {nc.LAUNCHED: at(10), nc.REGISTERED: at(4)},
            "NodeClaim gpu-x Registered 2026-12-01T12:00:04Z before it was Launched 2026-12-01T12:00:10Z",
        ),
        (
            {nc.LAUNCHED: at(1), nc.REGISTERED: at(10), nc.INITIALIZED: at(8)},
            "NodeClaim gpu-x Initialized 2026-12-01T12:00:08Z before it was Registered 2026-12-01T12:00:10Z",
        ),
    ],
)
def test_a_step_before_the_one_it_follows_is_named(steps, observed):
    bad = next(t for s, t in steps.items() if observed.split()[2] == s)
    assert nc.in_lifecycle_order("gpu-x", at(0), steps) == [Violation("in_lifecycle_order", bad, observed)]
