"""A Workload's lifecycle: the one reader of its conditions, the predicates, and each invariant of an observed
history, with a world that holds it and worlds that break exactly it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from gpu_finops.facts.conditions import Condition
from gpu_finops.model import workload as w
from gpu_finops.model.violation import Violation

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def cond(ctype: str, status: str = "True", reason: str = "", t: float | None = None) -> Condition:
    return Condition(ctype, status, reason or ctype, "", at(t) if t is not None else None)


@dataclass(frozen=True)
class Look:
    at: datetime
    conditions: dict[str, Condition] = field(default_factory=dict)
    job_suspended: bool | None = None
    uid: str | None = "uid-w"


def test_the_api_shape_is_read_once_with_times_reasons_and_generation():
    raw = [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": "m",
            "lastTransitionTime": "2026-12-01T12:00:05Z",
            "observedGeneration": 2,
        },
        {
            "type": "Admitted",
            "status": "False",
            "reason": None,
            "lastTransitionTime": None,
            "observedGeneration": True,
        },
    ]
    got = w.conditions(raw)
    assert got[w.QUOTA_RESERVED] == Condition("QuotaReserved", "True", "QuotaReserved", "m", at(5), 2)
    # a null reason is empty, a boolean is no generation
    assert got[w.ADMITTED] == Condition("Admitted", "False", "", "", None, None)
    assert w.conditions(raw, with_times=False)[w.QUOTA_RESERVED].last_transition is None
    assert w.conditions(None) == {}


@pytest.mark.parametrize(
    "conds, expected",
    [
        ({}, set()),
        ({"QuotaReserved": cond("QuotaReserved")}, {"has_quota_reservation", "is_waiting"}),
        (
            {"QuotaReserved": cond("QuotaReserved"), "Admitted": cond("Admitted")},
            {"has_quota_reservation", "is_admitted", "is_active"},
        ),
        ({"Admitted": cond("Admitted", "False")}, {"is_waiting"}),
        ({"Admitted": cond("Admitted"), "Finished": cond("Finished")}, {"is_admitted", "is_finished"}),
        ({"Evicted": cond("Evicted", reason="Preempted")}, {"is_evicted", "is_preempted", "is_waiting"}),
        ({"Evicted": cond("Evicted", reason="PodsReadyTimeout")}, {"is_evicted", "is_waiting"}),
        ({"Preempted": cond("Preempted", reason="InClusterQueue")}, {"is_preempted", "is_waiting"}),
        ({"Requeued": cond("Requeued")}, {"is_requeued", "is_waiting"}),
        ({"QuotaReserved": cond("QuotaReserved", "False", "Pending")}, {"quota_released", "is_waiting"}),
        ({"Admitted": cond("Admitted", "Unknown")}, {"is_waiting"}),
    ],
)
def test_each_predicate_counts_only_a_true_condition(conds, expected):
    names = (
        "has_quota_reservation",
        "is_admitted",
        "is_evicted",
        "is_preempted",
        "is_requeued",
        "is_finished",
        "is_active",
        "is_waiting",
        "quota_released",
    )
    if not conds:
        expected = {"is_waiting"}
    assert {n for n in names if getattr(w, n)(conds)} == expected


def test_since_is_the_conditions_own_transition_time():
    conds = {"Admitted": cond("Admitted", t=7)}
    assert w.since(conds, w.ADMITTED) == at(7)
    assert w.since(conds, w.FINISHED) is None


# --- suspended_until_admitted ---------------------------------------------------------------------------
def test_a_job_unsuspended_only_once_admitted_holds_the_gate():
    history = [
        Look(at(0), {}, True),
        Look(at(1), {"QuotaReserved": cond("QuotaReserved")}, True),
        Look(at(2), {"QuotaReserved": cond("QuotaReserved"), "Admitted": cond("Admitted")}, False),
        Look(at(3), {"Admitted": cond("Admitted"), "Finished": cond("Finished")}, False),
        Look(at(4), {}, None),  # the Job not read: no evidence either way
    ]
    assert w.suspended_until_admitted(history) == []


@pytest.mark.parametrize(
    "conds",
    [
        {},
        {"QuotaReserved": cond("QuotaReserved")},
        {"Admitted": cond("Admitted", "False")},
        {"Evicted": cond("Evicted", reason="Preempted")},
    ],
)
def test_a_job_unsuspended_while_its_workload_waits_breaks_the_gate(conds):
    assert w.suspended_until_admitted([Look(at(9), conds, False)]) == [
        Violation(
            "suspended_until_admitted",
            at(9),
            "Job unsuspended at 2026-12-01T12:00:09Z while its Workload was not admitted",
        )
    ]


# --- transitions_not_before_creation --------------------------------------------------------------------
def test_conditions_changing_after_or_in_the_second_of_creation_hold():
    conds = {"QuotaReserved": cond("QuotaReserved", t=0.9), "Admitted": cond("Admitted", t=5)}
    assert w.transitions_not_before_creation(at(0.2), conds) == []
    assert w.transitions_not_before_creation(None, conds) == []  # creation not read


def test_a_condition_that_changed_before_the_object_existed_is_named():
    conds = {"Admitted": cond("Admitted", t=5), "Evicted": cond("Evicted", t=-30)}
    assert w.transitions_not_before_creation(at(0), conds) == [
        Violation(
            "transitions_not_before_creation",
            at(-30),
            "Evicted changed at 2026-12-01T11:59:30Z, before the Workload was created 2026-12-01T12:00:00Z",
        )
    ]


# --- quota_released_not_after ---------------------------------------------------------------------------
def released(t: float, look: float | None = None) -> Look:
    return Look(
        at(look if look is not None else t),
        {"QuotaReserved": cond("QuotaReserved", "False", "Pending", t)},
        True,
    )


def test_a_victim_that_gave_its_quota_back_before_the_preemptor_was_admitted_holds():
    victim = [Look(at(0), {"QuotaReserved": cond("QuotaReserved", t=0)}, False), released(10, look=12)]
    assert w.quota_released_not_after(victim, at(10.5)) == []  # the same second
    assert w.quota_released_not_after(victim, at(20)) == []


def test_a_victim_that_released_its_quota_after_the_preemptor_was_admitted_is_named():
    victim = [released(30)]
    assert w.quota_released_not_after(victim, at(10)) == [
        Violation(
            "quota_released_not_after",
            at(30),
            "the victim released its quota at 2026-12-01T12:00:30Z, after 2026-12-01T12:00:10Z",
        )
    ]


def test_a_victim_never_seen_releasing_its_quota_is_named():
    victim = [Look(at(0), {"QuotaReserved": cond("QuotaReserved", t=0)}, False)]
    assert w.quota_released_not_after(victim, at(10)) == [
        Violation("quota_released_not_after", None, "the victim was never seen releasing its quota")
    ]


def test_a_release_without_a_transition_time_counts_from_the_last_look_that_still_held_it():
    untimed = Look(at(40), {"QuotaReserved": Condition("QuotaReserved", "False", "Pending")}, True)
    held = Look(at(30), {"QuotaReserved": cond("QuotaReserved", t=0)}, False)
    assert w.quota_released_not_after([held, untimed], at(10)) == [
        Violation(
            "quota_released_not_after",
            at(30),
            "the victim was still seen holding its quota at 2026-12-01T12:00:30Z, after 2026-12-01T12:00:10Z",
        )
    ]
    assert w.quota_released_not_after([held, untimed], at(35)) == []  # released between 30 and 40: no verdict
    # seen released at 40, with no look before: when it changed is unknown, the look's time is no evidence
    assert w.quota_released_not_after([untimed], at(10)) == []


def test_a_victim_that_took_its_quota_back_before_the_preemptor_was_admitted_is_named():
    victim = [
        Look(at(0), {"QuotaReserved": cond("QuotaReserved", t=0)}, False),
        released(10, look=11),
        Look(at(16), {"QuotaReserved": cond("QuotaReserved", t=15)}, False),
    ]
    assert w.quota_released_not_after(victim, at(20)) == [
        Violation(
            "quota_released_not_after",
            at(15),
            "the victim released its quota, then held it again from 2026-12-01T12:00:15Z, by 2026-12-01T12:00:20Z",
        )
    ]
    assert w.quota_released_not_after(victim, at(12)) == []  # re-reserved after the preemptor's admission
    stale = [*victim[:2], Look(at(11), {"QuotaReserved": cond("QuotaReserved", t=0)}, False)]
    assert w.quota_released_not_after(stale, at(20)) == []  # the old reservation seen late is no new one


# --- ran_only_while_admitted ------------------------------------------------------------------------------
ADMITTED_AT_5 = Look(at(6), {w.ADMITTED: cond(w.ADMITTED, t=5)})
EVICTED_AT_20 = Look(
    at(21), {w.ADMITTED: cond(w.ADMITTED, "False", "NoReservation", t=20), w.EVICTED: cond(w.EVICTED, t=20)}
)
READMITTED_AT_40 = Look(at(41), {w.ADMITTED: cond(w.ADMITTED, t=40)})
HISTORY = (ADMITTED_AT_5, EVICTED_AT_20, READMITTED_AT_40)


def test_admitted_stretches_are_read_from_the_condition_times_in_order():
    assert w.admitted_intervals(HISTORY) == [(at(5), at(20)), (at(40), None)]
    # a look without the condition's time ends the stretch at the look (the later bound)
    late = Look(at(25), {w.ADMITTED: cond(w.ADMITTED, "False")})
    assert w.admitted_intervals((ADMITTED_AT_5, late)) == [(at(5), at(25))]
    assert w.admitted_intervals(()) == []


def test_pods_that_start_while_admitted_hold():
    assert (
        w.ran_only_while_admitted(HISTORY, [("p1", at(5)), ("p2", at(19)), ("p3", at(40)), ("p4", at(99))])
        == []
    )


@pytest.mark.parametrize(
    "start, shown",
    [
        (4, "2026-12-01T12:00:05Z..2026-12-01T12:00:20Z, 2026-12-01T12:00:40Z..now"),  # before the first
        (20, "2026-12-01T12:00:05Z..2026-12-01T12:00:20Z, 2026-12-01T12:00:40Z..now"),  # evicted that second
        (30, "2026-12-01T12:00:05Z..2026-12-01T12:00:20Z, 2026-12-01T12:00:40Z..now"),  # while evicted
    ],
)
def test_a_pod_that_starts_outside_every_admitted_stretch_breaks_it(start, shown):
    assert w.ran_only_while_admitted(HISTORY, [("p", at(start))]) == [
        Violation(
            "ran_only_while_admitted",
            at(start),
            f"pod p started {w.timestamps.iso(at(start))}, outside every stretch its Workload was admitted ({shown})",
        )
    ]


def test_a_pod_of_a_workload_never_admitted_breaks_it():
    (v,) = w.ran_only_while_admitted((Look(at(1)),), [("p", at(3))])
    assert v.observed.endswith("outside every stretch its Workload was admitted (never admitted)")


# --- looks agree with their conditions' change times ---------------------------------------------------------
def admitted(t: float) -> dict[str, Condition]:
    return {c.type: c for c in (cond(w.QUOTA_RESERVED, t=t), cond(w.ADMITTED, t=t))}


def waiting() -> dict[str, Condition]:
    return {w.QUOTA_RESERVED: cond(w.QUOTA_RESERVED, "False", "Pending", t=0)}


def test_looks_that_agree_with_the_change_times_hold():
    assert w.looks_agree_with_transitions((Look(at(5), waiting()), Look(at(12), admitted(10)))) == []


def test_a_look_showing_a_change_dated_after_it_is_refused_past_the_slack_only():
    assert w.looks_agree_with_transitions((Look(at(8), admitted(10)),)) == []  # within LOOK_SLACK: a race
    assert w.looks_agree_with_transitions((Look(at(7), admitted(10)),)) == [
        Violation(
            "looks_agree_with_transitions",
            at(7),
            "Admitted True since 2026-12-01T12:00:10Z, after the look at 2026-12-01T12:00:07Z that shows it",
        ),
        Violation(
            "looks_agree_with_transitions",
            at(7),
            "QuotaReserved True since 2026-12-01T12:00:10Z, after the look at 2026-12-01T12:00:07Z that shows it",
        ),
    ]


def test_an_earlier_look_taken_after_a_change_yet_not_showing_it_is_refused_naming_that_look():
    history = (Look(at(5), waiting()), Look(at(30), waiting()), Look(at(40), admitted(20)))
    (v, *_) = w.looks_agree_with_transitions(history)
    assert v == Violation(
        "looks_agree_with_transitions",
        at(30),
        "Admitted was not set at the look at 2026-12-01T12:00:30Z, though a later look says it has been True "
        "since 2026-12-01T12:00:20Z",
    )
    # a look inside the slack after the change may still show the earlier status
    assert (
        w.looks_agree_with_transitions(
            (Look(at(5), waiting()), Look(at(21), waiting()), Look(at(40), admitted(20)))
        )
        == []
    )


def test_looks_of_another_object_under_the_same_name_are_not_held_against_it():
    old = Look(at(30), waiting(), uid="uid-old")
    assert w.looks_agree_with_transitions((old, Look(at(40), admitted(20), uid="uid-new"))) == []


def test_admitted_without_the_quota_reserved_is_no_status_kueue_writes():
    assert w.admitted_without_reservation(admitted(1)) is None
    assert (
        w.admitted_without_reservation({w.ADMITTED: cond(w.ADMITTED)})
        == "Admitted True while QuotaReserved is not set"
    )
    said = w.admitted_without_reservation({**admitted(1), w.QUOTA_RESERVED: cond(w.QUOTA_RESERVED, "False")})
    assert said == "Admitted True while QuotaReserved is False"


# --- a pod runs only while its Workload stays admitted ---------------------------------------------------------
def evicted(t: float) -> dict[str, Condition]:
    return {
        w.QUOTA_RESERVED: cond(w.QUOTA_RESERVED, "False", "Preempted", t=t),
        w.ADMITTED: cond(w.ADMITTED, "False", "NoReservation", t=t),
        w.EVICTED: cond(w.EVICTED, "True", "Preempted", t=t),
    }


HELD = (Look(at(5), admitted(5), False), Look(at(50), admitted(5), False))


def test_a_run_inside_its_admission_holds_and_a_look_at_its_end_second_is_not_during_it():
    ran = [("p", at(10), at(40))]
    assert w.admitted_while_running(HELD, ran) == []
    done = (
        *HELD,
        Look(
            at(
                40,
            ),
            {**admitted(5), w.FINISHED: cond(w.FINISHED, t=40)},
            False,
        ),
    )
    assert w.admitted_while_running(done, ran) == []
    assert w.admitted_while_running((*HELD[:1], Look(at(40), evicted(39), True)), ran) == []


def test_a_run_going_on_through_an_eviction_is_named_with_the_look_and_the_reason():
    history = (HELD[0], Look(at(30), evicted(28), True), Look(at(60), admitted(55), False))
    assert w.admitted_while_running(history, [("p", at(10), None)]) == [
        Violation(
            "admitted_while_running",
            at(30),
            "pod p was Running (from 2026-12-01T12:00:10Z, not seen ending) at the look at 2026-12-01T12:00:30Z, "
            "which shows its Workload Evicted (Preempted)",
        )
    ]


def test_a_run_through_a_look_showing_its_job_suspended_is_named():
    history = (HELD[0], Look(at(30), admitted(5), True))
    (v,) = w.admitted_while_running(history, [("p", at(10), at(40))])
    assert v.observed.endswith("which shows its Workload admitted but its Job suspended")
