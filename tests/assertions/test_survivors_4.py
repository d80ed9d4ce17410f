"""Acts 2's and 6's (holdings) surviving mutants from the first mutation run over assertions/
(docs/claims.md, mutation section): each row asserts the exact clause and what it says, at the edge the
mutant moved."""

from __future__ import annotations

from dataclasses import replace

from assertions.admission import (
    admitted_ran_at_once,
    cards,
    check_admission,
    every_job_has_one_workload,
    pods_start_only_after_admission,
    the_rest_never_held_quota_and_stayed_suspended,
)
from assertions.clauses import Miss
from assertions.cost_holdings import holdings_name_the_acts_pod
from assertions.observed import PodObs, WorkloadObs
from tests.assertions.tables import admitted_snap, pending_wl, running_wl, t
from tests.assertions.test_admission import ADMIT
from tests.assertions.test_cost import HELD, HOLDER, POD


# --- act 2: admission -----------------------------------------------------------------------------------
def gpus_of(*devices: str) -> set[str]:
    return cards(WorkloadObs("w", "team-a", pods=(PodObs("p", "gpu-a", "Running", devices=devices),)))


def test_cards_take_the_id_before_the_first_separator_and_skip_empty_ones():
    assert gpus_of("GPU-1::0::1") == {"GPU-1"}
    assert gpus_of("::x::y", "::0") == set()


def test_no_jobs_submitted_is_named_even_with_tenants():
    assert every_job_has_one_workload(replace(ADMIT, expected_total=0))[0] == Miss(
        "0 Workloads, one uid each", "0 jobs for tenants ['team-a', 'team-b']: nothing was submitted to check"
    )


def test_one_job_submitted_is_something_to_check():
    o = replace(ADMIT, workloads=(running_wl("a-0", "team-a"),), expected_total=1)
    assert every_job_has_one_workload(o) == []


def test_pods_of_a_job_never_seen_unsuspended_are_not_its_admitted_pods():
    a0 = running_wl("a-0", "team-a")
    a0 = replace(a0, snapshots=tuple(replace(s, job_suspended=None) for s in a0.snapshots))
    o = replace(ADMIT, workloads=(a0, *ADMIT.workloads[1:]))
    assert pods_start_only_after_admission(o) == [
        Miss(
            "a-0's Job unsuspended by Kueue before its pods ran",
            "a-0's Job was never seen unsuspended, yet pods ran: they are not this Job's admitted pods",
        )
    ]


def test_an_impossible_admitted_run_is_named():
    o = replace(ADMIT, workloads=(running_wl("a-0", "team-a", 30, 20), *ADMIT.workloads[1:]))
    assert admitted_ran_at_once(o) == [
        Miss(
            "runs that really happened, before the act's last look",
            "impossible runs: ['a-0: ended 2026-11-30T12:00:20+00:00 before it started "
            "2026-11-30T12:00:30+00:00']",
        )
    ]


def test_a_run_starting_the_moment_the_other_ended_is_not_at_once():
    o = replace(
        ADMIT,
        workloads=(
            running_wl("a-0", "team-a", 10, 20),
            running_wl("b-0", "team-b", 20),
            *ADMIT.workloads[2:],
        ),
    )
    assert admitted_ran_at_once(o) == [
        Miss(
            "all Running at once",
            "['a-0', 'b-0'] were admitted but never Running at the same time (all at once)",
        )
    ]


def test_a_never_observed_waiting_workload_does_not_stop_the_next_from_being_checked():
    held = replace(pending_wl("a-2", "team-a"), snapshots=(admitted_snap(5, cq=None),))
    held = replace(held, snapshots=(replace(held.snapshots[0], conditions={}),))
    o = replace(ADMIT, workloads=(*ADMIT.workloads[:2], WorkloadObs("a-1", "team-a"), held))
    got = the_rest_never_held_quota_and_stayed_suspended(o)
    assert got[0] == Miss(
        "a-1 pending: never holding quota, its Job suspended, no pods", "workload a-1 was never observed"
    )
    assert [m.expected for m in got[1:]] and all(
        m.expected == "a-2 pending: never holding quota, its Job suspended, no pods" for m in got[1:]
    )


# --- act 6: holdings ------------------------------------------------------------------------------------
WHO = "act-1-team-a/cost-1-x"
WANT = f"GPU holdings naming {WHO} for tenant team-a in each interval it ran"


def test_an_interval_beginning_one_second_after_the_pod_finished_is_misattributed():
    o = replace(HELD, holder=replace(HOLDER, held_until=t(119)))
    assert holdings_name_the_acts_pod(o) == [
        Miss(
            WANT,
            f"the act's pod {WHO} is recorded holding the GPU in intervals ['2026-11-30T12:02:00Z'], which "
            "began after it finished 2026-11-30T12:01:59+00:00",
        )
    ]


def test_a_pod_that_ended_the_second_it_started_has_a_possible_span():
    holder = replace(HOLDER, held_from=t(30), held_until=t(30))
    o = replace(HELD, holder=holder, holdings={"2026-11-30T12:00:00Z": [POD]})
    assert holdings_name_the_acts_pod(o) == []


def test_a_pod_that_ended_before_it_started_has_an_impossible_span():
    o = replace(HELD, holder=replace(HOLDER, held_from=t(30), held_until=t(20)))
    assert holdings_name_the_acts_pod(o) == [
        Miss(
            WANT,
            f"the act's pod {WHO} ended 2026-11-30T12:00:20+00:00 before it started 2026-11-30T12:00:30+00:00: "
            "its span is impossible",
        )
    ]


def test_a_pod_span_outside_every_record_is_named_with_its_end():
    o = replace(HELD, holder=replace(HOLDER, held_from=t(600), held_until=t(700)))
    assert holdings_name_the_acts_pod(o) == [
        Miss(
            WANT,
            f"no record's interval overlaps the act's pod {WHO} (2026-11-30T12:10:00+00:00 to "
            "2026-11-30T12:11:40+00:00): its holding cannot be checked",
        )
    ]


def test_a_holding_counted_twice_does_not_stop_the_next_interval_from_being_checked():
    other = {**POD, "pod": "other"}
    holdings = {**HELD.holdings, "2026-11-30T12:00:00Z": [POD, POD], "2026-11-30T12:01:00Z": [other]}
    assert holdings_name_the_acts_pod(replace(HELD, holdings=holdings)) == [
        Miss(
            WANT, f"2026-11-30T12:00:00Z: the act's pod {WHO} is recorded 2 times: one holding counted twice"
        ),
        Miss(
            WANT,
            f"2026-11-30T12:01:00Z: the holdings recorded for gpu-a name ['act-1-team-a/other'], not the act's "
            f"pod {WHO}",
        ),
    ]


def test_an_admitted_workload_with_no_cluster_queue_is_charged_to_a_question_mark_in_the_evidence():
    a0 = replace(running_wl("a-0", "team-a"), snapshots=(admitted_snap(5, cq=None, uid="uid-a-0"),))
    v = check_admission(replace(ADMIT, workloads=(a0, *ADMIT.workloads[1:])))
    assert not v.holds
    assert v.evidence["cluster_queues"] == ["?", "team-b"]
