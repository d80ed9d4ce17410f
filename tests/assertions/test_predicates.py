"""The checkers' small predicates at their edges, which the table rows and generated near-misses do not
reach (mutation testing found them): requeued needs every one of its parts, and intervals that only
touch do not overlap."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assertions.clauses import Miss
from assertions.cost_obs import HolderObs
from assertions.observed import Interval, WorkloadSnapshot
from assertions.preemption import PreemptionObs, check_preemption, is_requeued
from assertions.timeslicing import all_ran_at_once, physical
from tests.assertions.tables import check, cond, t
from tests.assertions.test_preemption import PREEMPT, VICTIM, requeued_snap
from tests.assertions.test_timeslicing import TS, TS_PODS


def snap(*, suspended: bool | None = True, admission: bool = False, reserved: str | None = "False"):
    conditions = {} if reserved is None else {"QuotaReserved": cond("QuotaReserved", reserved, "Pending")}
    return WorkloadSnapshot(t(33), conditions, admission, suspended)


@pytest.mark.parametrize(
    "s, requeued",
    [
        (snap(), True),
        (snap(suspended=False), False),  # the Job runs again: not waiting in the queue
        (snap(suspended=None), False),  # the Job's suspend not observed
        (snap(admission=True), False),  # status.admission still set: still admitted
        (snap(reserved="True"), False),  # quota still reserved
        (snap(reserved=None), False),  # QuotaReserved not observed
        (snap(reserved="Unknown"), False),
        (snap(suspended=False, admission=True), False),
        (snap(admission=True, reserved="True"), False),
    ],
    ids=[
        "requeued",
        "running",
        "suspend-unseen",
        "admission",
        "reserved",
        "no-condition",
        "unknown",
        "running-admitted",
        "admitted-reserved",
    ],
)
def test_requeued_needs_suspended_no_admission_and_quota_reserved_false(s, requeued):
    assert is_requeued(s) is requeued


@pytest.mark.parametrize(
    "case, after",
    [
        ("suspended while status.admission is still set", replace(requeued_snap(33), has_admission=True)),
        ("suspended with QuotaReserved True", replace(
            requeued_snap(33),
            conditions={**requeued_snap(33).conditions, "QuotaReserved": cond("QuotaReserved", "True")},
        )),
    ],
    ids=["admission-kept", "quota-kept"],
)  # fmt: skip
def test_a_victim_that_keeps_its_admission_or_quota_is_not_requeued(case, after):
    victim = replace(VICTIM, snapshots=(*VICTIM.snapshots[:-1], replace(after, uid=VICTIM.snapshots[0].uid)))
    v = check_preemption(replace(PREEMPT, victim=victim))
    check(v, False, "low-0 was not requeued: never seen with its Job suspended, no status.admission and")
    assert "victim_history_shows_eviction_then_requeue" in v.failed_clauses, case


def test_the_holding_world_is_requeued():
    assert isinstance(PREEMPT, PreemptionObs) and check_preemption(PREEMPT).holds


@pytest.mark.parametrize(
    "a, b, overlap",
    [
        (Interval(t(0), t(10)), Interval(t(10), t(20)), False),  # touching at one instant
        (Interval(t(10), t(20)), Interval(t(0), t(10)), False),
        (Interval(t(0), t(10)), Interval(t(9), t(20)), True),
        (Interval(t(9), t(20)), Interval(t(0), t(10)), True),
        (Interval(t(0), t(10)), Interval(t(0), t(10)), True),
        (Interval(t(0)), Interval(t(30)), False),  # still running, the other starts at `now`
        (Interval(t(0)), Interval(t(29)), True),
        (Interval(t(30)), Interval(t(0)), False),
    ],
)
def test_intervals_overlap_only_when_they_share_more_than_an_instant(a, b, overlap):
    assert a.overlaps(b, t(30)) is overlap


@pytest.mark.parametrize(
    "held_until, start, end, overlap",
    [
        (t(10), t(10), t(20), False),  # the pod ended as the record began
        (t(10), t(9), t(20), True),
        (t(10), t(-10), t(0), False),  # the record ended as the pod started
        (t(10), t(-10), t(1), True),
        (None, t(100), t(200), True),  # still running: any later record overlaps
        (None, t(-10), t(0), False),
    ],
)
def test_a_holding_overlaps_a_record_only_when_they_share_more_than_an_instant(
    held_until, start, end, overlap
):
    h = HolderObs("team-a", "pod", "team-a", held_from=t(0), held_until=held_until, submitted_at=t(-10))
    assert h.overlaps(start, end) is overlap


@pytest.mark.parametrize("device, card", [("GPU-a::1", "GPU-a"), ("GPU-a", "GPU-a"), ("GPU-a::0", "GPU-a")])
def test_a_replica_id_names_its_card_before_the_separator(device, card):
    assert physical(device) == card


def test_a_pod_never_running_is_named_and_nothing_else_is_judged():
    pods = (replace(TS_PODS[0], running=None), *TS_PODS[1:])
    assert all_ran_at_once(replace(TS, pods=pods)) == [
        Miss("every pod Running", "pods never Running: ['ts-0']")
    ]


def test_unobserved_end_without_an_observation_time_is_missing_data_not_an_overlap():
    """A pod still running with no observed_at: when it ended cannot be known, so the observation is refused
    (missing data is a failure, never a guess)."""
    pods = (*TS_PODS[:3], replace(TS_PODS[3], running=Interval(t(13))))
    with pytest.raises(ValueError, match=r"^TimeSlicingObs\.observed_at is not given"):
        replace(TS, pods=pods, observed_at=None)
