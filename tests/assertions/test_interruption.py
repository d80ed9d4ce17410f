"""Act 5, spot interruption: the case where the claim holds and each way it could look true while false.

Every adjacent case must give holds=False with a message that says why (the `why` column)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assertions.interruption import InterruptionObs, check_interruption
from assertions.observed import EventObs, Interval, NodeObs, PodObs
from tests.assertions.observations import SPOT_NODE, check, t

INT_NODE = replace(SPOT_NODE, name="gpu-int", nodeclaim="gpu-spot-int")
INT = InterruptionObs(
    experiment_started=t(0),
    node=INT_NODE,
    events=(
        EventObs("SpotInterrupted", "NodeClaim", "gpu-spot-int", t(5)),
        EventObs("TerminatingOnInterruption", "Node", "gpu-int", t(6)),
    ),
    taint_seen_at=t(8),
    pods=(
        PodObs("w-1", "gpu-int", "Failed", Interval(t(-100), t(10)), reason="Evicted", evicted=True),
        PodObs("w-2", "gpu-new", "Running", Interval(t(120))),
    ),
    replacement=NodeObs("gpu-new", t(30), ready_at=t(100)),
)


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "node deleted with no interruption signal",
            replace(INT, events=(), taint_seen_at=None),
            "no SpotInterrupted",
        ),
        ("events but never tainted", replace(INT, taint_seen_at=None), "never observed"),
        (
            "pods hard-killed",
            replace(INT, pods=(replace(INT.pods[0], evicted=False), INT.pods[1])),
            "hard kill",
        ),
        ("no replacement", replace(INT, replacement=None), "no replacement"),
        (
            "old events from before the experiment",
            replace(INT, events=tuple(replace(e, at=t(-50)) for e in INT.events)),
            "no SpotInterrupted",
        ),
        ("pods not rescheduled", replace(INT, pods=INT.pods[:1]), "no pod was rescheduled"),
    ],
)
def test_interruption_adjacent_cases_fail(case, obs, why):
    check(check_interruption(obs), False, why)


def test_interruption_holds_and_reports_seconds_to_taint():
    v = check_interruption(INT)
    check(v, True)
    assert v.evidence["seconds_to_taint"] == 8
