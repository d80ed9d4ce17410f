"""Act 3, preemption: the case where the claim holds and each way it could look true while false.

Every adjacent case must give holds=False with a message that says why (the `why` column)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assertions.observed import Interval, PodObs, WorkloadObs, WorkloadSnapshot
from assertions.preemption import PreemptionObs, check_preemption
from tests.assertions.observations import admitted_snap, check, cond, pending_snap, t


def evicted_snap(at: float) -> WorkloadSnapshot:
    return WorkloadSnapshot(
        t(at),
        {
            "QuotaReserved": cond("QuotaReserved", "True", "QuotaReserved"),
            "Admitted": cond("Admitted", "True"),
            "Evicted": cond("Evicted", "True", "Preempted", "Preempted to accommodate a workload"),
            "Preempted": cond("Preempted", "True", "InClusterQueue"),
        },
        True,
        False,
    )


def requeued_snap(at: float, evicted_reason: str = "Preempted", preempted: bool = True) -> WorkloadSnapshot:
    conditions = {
        "QuotaReserved": cond("QuotaReserved", "False", "Pending"),
        "Admitted": cond("Admitted", "False", "NoReservation"),
        "Evicted": cond("Evicted", "True", evicted_reason),
        "Requeued": cond("Requeued", "True", evicted_reason),
    }
    if preempted:
        conditions["Preempted"] = cond("Preempted", "True", "InClusterQueue")
    return WorkloadSnapshot(t(at), conditions, False, True)


VICTIM = WorkloadObs(
    "low-0",
    "team-a",
    "low",
    snapshots=(admitted_snap(5), admitted_snap(25), evicted_snap(31), requeued_snap(33)),
    pods=(PodObs("low-0-pod", "gpu-a", "Failed", Interval(t(6), t(32)), evicted=True),),
)
PREEMPTOR = WorkloadObs(
    "high-0",
    "team-a",
    "high",
    snapshots=(pending_snap(30), admitted_snap(34)),
    pods=(PodObs("high-0-pod", "gpu-a", "Running", Interval(t(36))),),
)
PREEMPT = PreemptionObs(VICTIM, PREEMPTOR, t(30))


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "victim Failed instead of requeued",
            replace(
                PREEMPT,
                victim=replace(
                    VICTIM,
                    snapshots=(
                        admitted_snap(5),
                        evicted_snap(31),
                        WorkloadSnapshot(
                            t(33),
                            {
                                "QuotaReserved": cond("QuotaReserved", "False"),
                                "Evicted": cond("Evicted", "True", "Preempted"),
                                "Preempted": cond("Preempted", "True", "InClusterQueue"),
                                "Finished": cond("Finished", "True", "Failed", "Job failed"),
                            },
                            False,
                            True,
                        ),
                    ),
                ),
            ),
            "Finished",
        ),
        (
            "before and after identical",
            replace(PREEMPT, victim=replace(VICTIM, snapshots=(admitted_snap(5), admitted_snap(40)))),
            "no eviction window",
        ),
        (
            "evicted for another reason",
            replace(
                PREEMPT,
                victim=replace(
                    VICTIM,
                    snapshots=(
                        admitted_snap(5),
                        WorkloadSnapshot(
                            t(31), {"Evicted": cond("Evicted", "True", "PodsReadyTimeout")}, False, True
                        ),
                        requeued_snap(33, "PodsReadyTimeout", preempted=False),
                    ),
                ),
            ),
            "no eviction window",
        ),
        (
            "evicted but never requeued",
            replace(PREEMPT, victim=replace(VICTIM, snapshots=(admitted_snap(5), evicted_snap(31)))),
            "was not requeued",
        ),
        (
            "victim pod killed, not evicted",
            replace(
                PREEMPT,
                victim=replace(
                    VICTIM,
                    pods=(PodObs("low-0-pod", "gpu-a", "Failed", Interval(t(6), t(32)), evicted=False),),
                ),
            ),
            "killed",
        ),
        (
            "queue not full before",
            replace(PREEMPT, victim=replace(VICTIM, snapshots=VICTIM.snapshots[2:])),
            "precondition",
        ),
        (
            "preemptor never ran",
            replace(PREEMPT, preemptor=replace(PREEMPTOR, pods=())),
            "never had a Running pod",
        ),
        (
            "Preempted condition missing",
            replace(
                PREEMPT,
                victim=replace(
                    VICTIM,
                    snapshots=(
                        admitted_snap(5),
                        WorkloadSnapshot(
                            t(31), {"Evicted": cond("Evicted", "True", "Preempted")}, True, False
                        ),
                        requeued_snap(33, preempted=False),
                    ),
                ),
            ),
            "Preempted was never True",
        ),
    ],
)
def test_preemption_adjacent_cases_fail(case, obs, why):
    check(check_preemption(obs), False, why)


def test_preemption_holds():
    check(check_preemption(PREEMPT), True)
