"""Act 3's checker: the holding case and each way a preemption could look right while it was not."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assertions.observed import Interval, PodObs, WorkloadObs, WorkloadSnapshot
from assertions.preemption import PreemptionObs, check_preemption
from tests.assertions.tables import admitted_snap, check, cond, pending_snap, t, with_uid

# --- act 3: preemption -----------------------------------------------------------------------------------
# Kueue names the preemptor's Workload UID in the victim's Evicted/Preempted message
MADE_ROOM_FOR_HIGH = (
    "Preempted to accommodate a workload (UID: uid-high-0, JobUID: UNKNOWN) due to prioritization"
)


def evicted_snap(at: float, reason: str = "InClusterQueue") -> WorkloadSnapshot:
    return WorkloadSnapshot(
        t(at),
        {
            "QuotaReserved": cond("QuotaReserved", "True", "QuotaReserved"),
            "Admitted": cond("Admitted", "True"),
            "Evicted": cond("Evicted", "True", "Preempted", MADE_ROOM_FOR_HIGH, at=t(at)),
            "Preempted": cond("Preempted", "True", reason),
        },
        True,
        False,
    )


def requeued_snap(at: float, evicted_reason: str = "Preempted", preempted: bool = True) -> WorkloadSnapshot:
    conditions = {
        "QuotaReserved": cond("QuotaReserved", "False", "Pending"),
        "Admitted": cond("Admitted", "False", "NoReservation"),
        "Evicted": cond("Evicted", "True", evicted_reason, MADE_ROOM_FOR_HIGH),
        "Requeued": cond("Requeued", "True", evicted_reason),
    }
    if preempted:
        conditions["Preempted"] = cond("Preempted", "True", "InClusterQueue")
    return WorkloadSnapshot(t(at), conditions, False, True)


VICTIM = with_uid(
    WorkloadObs(
        "low-0",
        "team-a",
        "low",
        100,
        snapshots=(admitted_snap(5), admitted_snap(25), evicted_snap(31), requeued_snap(33)),
        pods=(PodObs("low-0-pod", "gpu-a", "Failed", Interval(t(6), t(32)), evicted=True),),
    )
)
PREEMPTOR = with_uid(
    WorkloadObs(
        "high-0",
        "team-a",
        "high",
        1000,
        snapshots=(pending_snap(30), admitted_snap(34)),
        pods=(PodObs("high-0-pod", "gpu-a", "Running", Interval(t(36))),),
    )
)
PREEMPT = PreemptionObs(VICTIM, PREEMPTOR, t(30), observed_at=t(600))


def victim_seen(*snapshots: WorkloadSnapshot) -> PreemptionObs:
    """The holding preemption, but the victim's Workload observed as `snapshots`."""
    return replace(PREEMPT, victim=replace(VICTIM, snapshots=snapshots))


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "victim Failed instead of requeued",
            victim_seen(
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
            "Finished",
        ),
        (
            "before and after identical",
            victim_seen(admitted_snap(5), admitted_snap(40)),
            "no eviction window",
        ),
        (
            "evicted for another reason",
            victim_seen(
                admitted_snap(5),
                WorkloadSnapshot(
                    t(31), {"Evicted": cond("Evicted", "True", "PodsReadyTimeout")}, False, True
                ),
                requeued_snap(33, "PodsReadyTimeout", preempted=False),
            ),
            "no eviction window",
        ),
        (
            "evicted but never requeued",
            victim_seen(admitted_snap(5), evicted_snap(31)),
            "was not requeued",
        ),
        (
            "the preemptor's priority is not higher",
            replace(PREEMPT, preemptor=replace(PREEMPTOR, priority_class="low", priority=100)),
            "the preemptor's priority 100 (low) is not higher than the victim's 100 (low)",
        ),
        (
            "priorities not resolved by Kueue",
            replace(PREEMPT, preemptor=replace(PREEMPTOR, priority=None)),
            "priorities not observed (victim 100, preemptor None)",
        ),
        (
            "the preemptor was admitted before the victim was evicted (the quota was free)",
            replace(PREEMPT, preemptor=replace(PREEMPTOR, snapshots=(pending_snap(30), admitted_snap(30)))),
            "preemptor high-0 was admitted at 2026-11-30T12:00:30+00:00, before low-0 was evicted at "
            "2026-11-30T12:00:31+00:00",
        ),
        (
            "preempted across tenants where the policy says within the ClusterQueue",
            victim_seen(
                admitted_snap(5),
                evicted_snap(31, "InCohortReclamation"),
                requeued_snap(33, preempted=False),
            ),
            "was preempted ['InCohortReclamation'], but the config's policy for this pair implies InClusterQueue",
        ),
        (
            "queue not full before",
            victim_seen(*VICTIM.snapshots[2:]),
            "precondition",
        ),
        (
            "preemptor never ran",
            replace(PREEMPT, preemptor=replace(PREEMPTOR, pods=())),
            "never had a Running pod",
        ),
        (
            "Preempted condition missing",
            victim_seen(
                admitted_snap(5),
                WorkloadSnapshot(t(31), {"Evicted": cond("Evicted", "True", "Preempted")}, True, False),
                requeued_snap(33, preempted=False),
            ),
            "Preempted was never True",
        ),
    ],
)
def test_preemption_adjacent_cases_fail(case, obs, why):
    check(check_preemption(obs), False, why)


def test_preemption_holds():
    check(check_preemption(PREEMPT), True)


def test_a_failed_victim_pod_without_disruption_target_is_not_a_kill_when_the_workload_requeued():
    """A real Job controller deletes the suspended Job's pod with no DisruptionTarget: the Workload decides."""
    victim = replace(
        VICTIM, pods=(PodObs("low-0-pod", "gpu-a", "Failed", Interval(t(6), t(32)), exit_code=137),)
    )
    check(check_preemption(replace(PREEMPT, victim=victim)), True)


def test_a_victim_deleted_and_recreated_fresh_is_not_requeued():
    """A look-alike victim: the victim Workload deleted and re-created fresh, with no eviction or requeue in its history."""
    fresh = WorkloadSnapshot(
        t(33), {"QuotaReserved": cond("QuotaReserved", "False", "Pending")}, False, True, uid="uid-2"
    )
    victim = replace(VICTIM, snapshots=(*VICTIM.snapshots[:2], fresh))
    v = check_preemption(replace(PREEMPT, victim=victim))
    check(v, False, "victim low-0 was seen with uids ['uid-low-0', 'uid-2']: deleted and re-created")
    assert v.failed_clauses[:2] == (
        "victim_is_one_workload_throughout",
        "victim_history_shows_eviction_then_requeue",
    )
