"""Each claim clause at the exact edge of its comparison, for every act: rows that pin the tolerance, the
count, the order or the identity a clause holds, so that moving any of them (a mutant of the checker) fails
a row naming the clause and what it says (docs/claims.md, mutation section)."""

from __future__ import annotations

import re
from collections import ChainMap
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta, tzinfo
from types import MappingProxyType, SimpleNamespace

import pytest

from assertions.admission import (
    admitted_pods_ran_healthy,
    admitted_ran_at_once,
    cards,
    check_admission,
    every_job_has_one_workload,
    healthy_runs,
    pods_start_only_after_admission,
    the_rest_never_held_quota_and_stayed_suspended,
)
from assertions.clauses import Miss, parse_iso, possible, require_aware
from assertions.cold_start import (
    claim_came_before_its_node,
    node_is_new_and_launched_by_our_nodeclaim,
    node_is_spot_with_a_gpu,
    pod_ran_on_that_node_after_it_was_ready,
)
from assertions.cost import (
    check_cost,
    cost_is_the_rate_times_seconds,
    enough_consecutive_records,
    gpu_util_seen_while_the_load_ran,
    idle_is_cost_times_unused_share,
    instance_seconds_match_the_node_life,
    sm_active_is_the_ratio_the_load_ran_at,
    sm_active_seen_while_the_load_ran,
    sm_active_within_gpu_util,
)
from assertions.cost_holdings import holdings_name_the_acts_pod
from assertions.cost_obs import HolderObs
from assertions.diagnosis import (
    DiagnosisObs,
    a_situation_for_every_cause_and_one_with_two,
    check_diagnosis,
    first_cause_agrees_with_the_findings,
    is_namespaced,
    names_nothing,
)
from assertions.interruption import (
    CLOCK_SKEW_SECONDS,
    node_cordoned_within_the_notice,
    ran_again,
    replacement_is_a_new_spot_node_of_ours,
    warning_was_delivered,
    workload_evicted_through_the_eviction_api,
    workload_ran_again_on_the_replacement,
)
from assertions.observed import Interval, PodObs, WorkloadObs, WorkloadSnapshot
from assertions.preemption import (
    made_room_for,
    preemptor_admitted_and_running,
    queues_fit_the_reason,
    victim_history_shows_eviction_then_requeue,
    victim_is_one_workload_throughout,
    victim_preempted_for_the_policy_reason,
)
from assertions.timeslicing import (
    admitted_as_the_tenant_on_the_flavor,
    all_pods_on_that_node,
    all_ran_at_once,
    each_pod_admitted_by_kueue_on_the_shared_flavor,
    node_advertises_one_gpu_as_n_replicas,
)
from gpu_finops.facts.conditions import Condition
from tests.assertions.tables import admitted_snap, cond, pending_wl, running_wl, seen_until, t
from tests.assertions.tables import t as ts
from tests.assertions.test_admission import ADMIT
from tests.assertions.test_cold_start import COLD, SPOT_NODE
from tests.assertions.test_cost import COST, HELD, HOLDER, POD, RECORDS_ONLY, record
from tests.assertions.test_diagnosis import DIAGNOSES, GOOD, SITUATIONS
from tests.assertions.test_interruption import AGAIN, HOLDS, NEW
from tests.assertions.test_interruption import VICTIM as EVICTED_POD
from tests.assertions.test_interruption import t as it
from tests.assertions.test_preemption import MADE_ROOM_FOR_HIGH, PREEMPT, PREEMPTOR, VICTIM, evicted_snap
from tests.assertions.test_timeslicing import TS, TS_NODE, TS_PODS, TS_WLS

RATIO = replace(COST, expected_sm_active=None)


def failures(v) -> list[tuple[str, str, str]]:
    return [(f.clause, f.expected, f.observed) for f in v.failures]


# --- act 6: the edges of the ranges and tolerances -------------------------------------------------------
def test_sm_active_of_exactly_one_is_a_ratio_and_just_above_is_not():
    assert check_cost(replace(RATIO, records=[record(0, sm=1.0), record(1)])).holds
    v = check_cost(replace(RATIO, records=[record(0, sm=1.01, idle=0.0), record(1)]))
    assert "sm_active_is_the_ratio_the_load_ran_at" in v.failed_clauses
    assert (
        "2026-11-30T12:00:00Z: SM_ACTIVE=1.01 is not a ratio in [0, 1] (a percentage stored as a ratio?)"
        in v.observed
    )


def test_gpu_util_of_zero_still_bounds_sm_active():
    v = sm_active_within_gpu_util(replace(RATIO, records=[record(0, sm=0.2, util=0.0), record(1)]))
    assert v == [
        Miss(
            "SM_ACTIVE <= GPU_UTIL/100 + 0.05",
            "2026-11-30T12:00:00Z: SM_ACTIVE=0.2 but GPU_UTIL=0.0%: SMs cannot be busier than the time any "
            "kernel ran",
        )
    ]


@pytest.mark.parametrize("sm", [0.548, 0.55])
def test_sm_active_up_to_gpu_util_plus_the_tolerance_is_consistent(sm):
    assert sm_active_within_gpu_util(replace(RATIO, records=[record(0, sm=sm, util=50.0), record(1)])) == []


def test_a_record_with_no_gpu_util_does_not_stop_the_next_from_being_checked():
    got = sm_active_within_gpu_util(
        replace(RATIO, records=[record(0, util=None), record(1, sm=0.9, util=10.0)])
    )
    assert [m.observed for m in got] == [
        "2026-11-30T12:01:00Z: SM_ACTIVE=0.9 but GPU_UTIL=10.0%: SMs cannot be busier than the time any kernel ran"
    ]


def test_missing_sm_active_quotes_the_collectors_status_and_message():
    r = record(1, sm=None) | {"x_Message": "no samples for GPU-1 in the window"}
    v = check_cost(replace(RATIO, records=[record(0), r]))
    assert (
        "2026-11-30T12:01:00Z: SM_ACTIVE missing (the collector said: missing-sm-active: "
        "no samples for GPU-1 in the window)" in v.observed
    )


@pytest.mark.parametrize(
    "log, said",
    [
        (["started", "ERROR prometheus down", "no samples for gpu-a", "exiting"], "'no samples for gpu-a'"),
        (["started", "ERROR prometheus down", "exiting"], "'ERROR prometheus down'"),
        (["started", "exiting"], "'exiting'"),  # nothing that explains: its last word
    ],
)
def test_too_few_records_quote_the_collectors_explanation_else_its_last_word(log, said):
    got = enough_consecutive_records(replace(RATIO, records=[record(0)], collector_log=log))
    assert got == [
        Miss(
            ">= 2 consecutive records, one per interval",
            f"1 record(s) for gpu-a, expected at least 2 consecutive; the collector said: {said}",
        )
    ]


# --- act 2: a crashed pod's run, and a card's replicas --------------------------------------------------
def pod(phase: str, exit_code: int | None, devices: tuple[str, ...] = ()) -> PodObs:
    return PodObs("p", "gpu-a", phase, Interval(t(0), t(10)), exit_code=exit_code, devices=devices)


@pytest.mark.parametrize(
    "p, healthy",
    [
        (pod("Succeeded", 0), True),
        (pod("Running", None), True),
        (pod("Failed", None), False),  # failed without an exit code (evicted, OOM-killed)
        (pod("Succeeded", 1), False),  # an exit code that is not 0
        (replace(pod("Running", None), running=None), False),
    ],
)
def test_a_run_is_healthy_only_running_not_failed_and_exiting_0(p, healthy):
    assert healthy_runs(WorkloadObs("w", "team-a", pods=(p,))) == ([p.running] if healthy else [])


def test_the_replicas_of_one_card_are_one_card():
    w = WorkloadObs("w", "team-a", pods=(pod("Running", None, ("GPU-a::0", "GPU-a::1", "GPU-b")),))
    assert cards(w) == {"GPU-a", "GPU-b"}


# --- act 3: a condition with a reason --------------------------------------------------------------------
def test_first_with_a_reason_skips_the_condition_with_another():
    other = replace(VICTIM.snapshots[2], at=VICTIM.snapshots[0].at - timedelta(seconds=1),
                    conditions={"Evicted": cond("Evicted", "True", "PodsReadyTimeout")})  # fmt: skip
    w = replace(VICTIM, snapshots=(other, *VICTIM.snapshots))
    assert w.first("Evicted", "Preempted") is VICTIM.snapshots[2]
    assert w.first("Evicted") is other


# --- act 7: the diagnosis's JSON ------------------------------------------------------------------------
def test_from_dict_reads_not_checked_and_a_first_cause_without_its_finding():
    d = DiagnosisObs.from_dict(
        {"target": "a/p", "first_cause": "memory", "not_checked": ["placement"],
         "findings": [{"check": "admission", "explains": False}]}
    )  # fmt: skip
    assert d == DiagnosisObs(
        target="a/p", first_cause="memory", key_evidence=(), checks=("admission",), also_explains=(),
        not_checked=("placement",), explaining=(),
    )  # fmt: skip


# --- act 2: no last look, and a crash in either form ----------------------------------------------------
@pytest.mark.parametrize("world", [ADMIT, COLD, PREEMPT, HOLDS], ids=lambda w: type(w).__name__)
def test_an_observation_without_the_acts_last_look_is_refused_naming_it(world):
    """Without the last look no recorded time can be held to anything, and a run still going has no end."""
    with pytest.raises(
        ValueError, match=rf"^{type(world).__name__}\.observed_at is not given: the act's last look"
    ):
        replace(world, observed_at=None)


@pytest.mark.parametrize(
    "phase, exit_code, shown",
    [
        ("Failed", None, "a-0-pod (Failed, exit None, reason None)"),
        ("Succeeded", 1, "a-0-pod (Succeeded, exit 1, reason None)"),
        ("Unknown", None, "a-0-pod (Unknown, exit None, reason None)"),
        ("Pending", None, "a-0-pod (Pending, exit None, reason None)"),  # yet a run was recorded
    ],
)
def test_a_pod_that_failed_exited_non_zero_or_ran_in_no_running_phase_is_named_crashed(
    phase, exit_code, shown
):
    w = ADMIT.workloads[0]
    crashed = replace(w, pods=(replace(w.pods[0], phase=phase, exit_code=exit_code),))
    got = admitted_pods_ran_healthy(replace(ADMIT, workloads=(crashed, *ADMIT.workloads[1:])))
    assert got == [
        Miss(
            "a-0 Running without crashing",
            f"admitted workload a-0's pod crashed or was ended by the platform, not run: ['{shown}']",
        ),
        Miss("a-0 Running without crashing", "admitted workload a-0 never had a healthy Running pod"),
    ]


# --- act 5: cordoned exactly at the edges of the notice -------------------------------------------------
def test_cordoned_exactly_at_the_notice_or_exactly_the_clock_skew_early_is_within_it():
    at_notice = replace(HOLDS, taint_seen_at=HOLDS.warned_at + timedelta(seconds=HOLDS.notice_seconds))
    assert node_cordoned_within_the_notice(at_notice) == []
    skew_early = replace(HOLDS, taint_seen_at=HOLDS.warned_at - timedelta(seconds=CLOCK_SKEW_SECONDS))
    assert node_cordoned_within_the_notice(skew_early) == []
    late = replace(HOLDS, taint_seen_at=HOLDS.warned_at + timedelta(seconds=HOLDS.notice_seconds + 1))
    assert [m.observed for m in node_cordoned_within_the_notice(late)] == [
        f"{HOLDS.node.name} was cordoned {HOLDS.notice_seconds + 1:.0f}s after the warning, past the "
        f"{HOLDS.notice_seconds:.0f}s notice: the instance would have been reclaimed with the workload on it"
    ]


A = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
B = datetime(2026, 11, 30, 12, 1, tzinfo=UTC)


# --- clauses: the shared helpers ------------------------------------------------------------------------
@dataclass(frozen=True)
class Stamped:
    at: datetime


def test_a_naive_timestamp_is_refused_in_one_exact_line():
    with pytest.raises(ValueError) as e:
        require_aware(Stamped(datetime(2026, 11, 30, 12, 0)))
    assert str(e.value) == (
        "Stamped.at is timezone-naive (2026-11-30T12:00:00): give it in UTC "
        "(datetime.now(UTC), or the API server's own timestamp)"
    )


def test_a_naive_timestamp_inside_a_condition_a_dict_or_a_tuple_is_refused_naming_its_path():
    naive = datetime(2026, 11, 30, 12, 0)
    snap = dict(at=A, has_admission=True)
    with pytest.raises(
        ValueError,
        match=re.escape("WorkloadSnapshot.conditions['Admitted'].last_transition is timezone-naive"),
    ):
        WorkloadSnapshot(
            conditions={"Admitted": Condition("Admitted", "True", last_transition=naive)}, **snap
        )
    with pytest.raises(ValueError, match=re.escape("Stamps.ats[1] is timezone-naive")):
        require_aware(Stamps((A, naive)))
    require_aware(Stamps((A, B)))


@dataclass(frozen=True)
class Stamps:
    ats: object


class NoOffset(tzinfo):
    """A tzinfo that knows no offset: Python calls such a datetime naive."""

    def utcoffset(self, dt):
        return None


@pytest.mark.parametrize(
    "ats, path",
    [
        (frozenset({datetime(2026, 11, 30, 12, 0)}), "Stamps.ats[0]"),
        ({datetime(2026, 11, 30, 12, 0): "x"}, "Stamps.ats key"),
        (MappingProxyType({"a": datetime(2026, 11, 30, 12, 0)}), "Stamps.ats['a']"),
        (ChainMap({"a": (datetime(2026, 11, 30, 12, 0),)}), "Stamps.ats['a'][0]"),
        (datetime(2026, 11, 30, 12, 0, tzinfo=NoOffset()), "Stamps.ats"),
    ],
)
def test_a_naive_timestamp_in_any_mapping_set_key_or_offsetless_tzinfo_is_refused(ats, path):
    with pytest.raises(ValueError, match=re.escape(path) + ".* is timezone-naive"):
        require_aware(Stamps(ats))


@pytest.mark.parametrize("start", [date(2026, 11, 30), "2026-11-30T12:00:00Z", 0, None])
def test_an_interval_that_does_not_start_at_a_datetime_is_refused(start):
    with pytest.raises(ValueError, match="start must be a datetime and end a datetime or None"):
        Interval(start)


def test_a_run_that_ended_the_second_it_started_is_possible():
    assert possible(SimpleNamespace(start=A, end=A), B) is None


def test_a_run_that_ended_before_it_started_names_both_stamps():
    assert possible(SimpleNamespace(start=B, end=A), None) == (
        "ended 2026-11-30T12:00:00+00:00 before it started 2026-11-30T12:01:00+00:00"
    )


def test_a_run_ending_at_the_last_look_is_possible():
    assert possible(SimpleNamespace(start=A, end=B), B) is None


def test_a_run_after_the_last_look_names_its_start_end_and_the_look():
    assert possible(SimpleNamespace(start=A, end=B), A) == (
        "ran 2026-11-30T12:00:00+00:00 to 2026-11-30T12:01:00+00:00, after the act's last look "
        "2026-11-30T12:00:00+00:00"
    )


def test_parse_iso_takes_a_capital_z_and_refuses_a_lowercase_one():
    assert parse_iso("2026-11-30T12:00:00Z") == A
    with pytest.raises(ValueError):
        parse_iso("2026-11-30T12:00:00z")


# --- act 5: interruption --------------------------------------------------------------------------------
def test_an_undelivered_sqs_put_is_named_with_its_state_and_no_reason():
    assert warning_was_delivered(replace(HOLDS, delivery_state="failed")) == [
        Miss(
            "the warning delivered (fis: completed, sqs: delivered)",
            "the SQS put ended 'failed': no reason given",
        )
    ]


def test_an_unknown_sender_is_named_by_its_repr():
    assert warning_was_delivered(replace(HOLDS, delivery="pigeon", delivery_reason="lost")) == [
        Miss(
            "the warning delivered (fis: completed, sqs: delivered)",
            "'pigeon' ended 'delivered': lost",
        )
    ]


WANT_EVICTED = "the workload's pods on gpu-int evicted (EvictionByEvictionAPI)"
EARLY = replace(EVICTED_POD, name="w-0", running=Interval(it(-200), it(-5)))
GC = replace(EVICTED_POD, name="w-3", disruption="DeletionByPodGC")


def test_a_pod_stopped_before_the_warning_is_named_and_the_next_still_checked():
    assert workload_evicted_through_the_eviction_api(replace(HOLDS, pods=(EARLY, GC, AGAIN))) == [
        Miss(
            WANT_EVICTED + " after the warning",
            "pod w-0 stopped 2026-11-30T11:59:55.400000+00:00, before the warning "
            "2026-11-30T12:00:00.400000+00:00: not evicted because of it",
        ),
        Miss(
            WANT_EVICTED,
            "pod w-3 was deleted by PodGC after its node vanished, not evicted: no graceful drain",
        ),
    ]


def test_an_evicted_pod_does_not_stop_the_next_from_being_checked():
    assert workload_evicted_through_the_eviction_api(replace(HOLDS, pods=(EVICTED_POD, GC, AGAIN))) == [
        Miss(
            WANT_EVICTED,
            "pod w-3 was deleted by PodGC after its node vanished, not evicted: no graceful drain",
        ),
    ]


def test_a_failed_pod_on_the_replacement_did_not_run_again():
    assert ran_again(replace(HOLDS, pods=(EVICTED_POD, replace(AGAIN, phase="Failed")))) == []


def test_a_pod_that_exited_zero_on_the_replacement_ran_again():
    done = replace(AGAIN, phase="Succeeded", exit_code=0)
    assert ran_again(replace(HOLDS, pods=(EVICTED_POD, done))) == [done]


NEW_WANT = "a new Ready spot GPU node of NodePool gpu-spot, not gpu-int"


def test_a_replacement_under_the_interrupted_nodes_claim_is_not_another_node():
    o = replace(HOLDS, replacement=replace(NEW, nodeclaim="gpu-spot-int"))
    assert replacement_is_a_new_spot_node_of_ours(o) == [
        Miss(
            NEW_WANT,
            "'replacement' gpu-new (uid uid-new, NodeClaim gpu-spot-int) is not another node than the "
            "interrupted gpu-int (uid uid-int, NodeClaim gpu-spot-int)",
        )
    ]


def test_a_replacement_claimed_before_the_warning_names_the_claims_stamp():
    o = replace(HOLDS, replacement=replace(NEW, nodeclaim_created=it(-10)))
    assert replacement_is_a_new_spot_node_of_ours(o) == [
        Miss(
            NEW_WANT,
            "'replacement' gpu-new's NodeClaim gpu-spot-new was created 2026-11-30T11:59:50.400000+00:00, not "
            "after the warning 2026-11-30T12:00:00.400000+00:00: not launched to replace the interrupted node",
        )
    ]


def test_a_pod_never_running_is_listed_without_a_start():
    o = replace(HOLDS, pods=(EVICTED_POD, replace(AGAIN, running=None, phase="Pending")))
    assert workload_ran_again_on_the_replacement(o) == [
        Miss(
            "a pod other than the evicted ones Running on gpu-new after the warning and its Ready",
            "the workload never ran again on the replacement gpu-new (pods seen: [('w-1', 'gpu-int', "
            "'2026-11-30T11:56:40.400000+00:00'), ('w-2', 'gpu-new', None)])",
        )
    ]


# --- act 4: time-slicing --------------------------------------------------------------------------------
def test_a_pod_started_after_the_node_was_deleted_ran_on_another_node_of_that_name():
    o = replace(TS, node=replace(TS_NODE, deleted_at=ts(12)))
    assert all_pods_on_that_node(o) == [
        Miss(
            "every pod Running while node gpu-ts (created 2026-11-30T12:00:00+00:00) existed",
            "pods ['ts-3'] ran outside node gpu-ts's life (created 2026-11-30T12:00:00+00:00, deleted "
            "2026-11-30T12:00:12+00:00): another node of that name",
        ),
        # the others started before the deletion, yet ran on past it
        Miss(
            "every pod's run over before node gpu-ts was deleted",
            "pods ['ts-0', 'ts-1', 'ts-2'] ran until after node gpu-ts was deleted at 2026-11-30T12:00:12+00:00",
        ),
    ]


def test_a_failed_pod_with_no_finish_time_is_an_unrecorded_run():
    o = replace(TS, pods=(*TS_PODS[:3], replace(TS_PODS[3], phase="Failed", running=Interval(ts(13)))))
    assert all_ran_at_once(o) == [
        Miss(
            "recorded runs that really happened, each finished pod with its finish time",
            "finished pods with no finish time ['ts-3']; impossible runs []",
        )
    ]


def test_the_last_start_in_the_second_the_first_ended_is_not_at_once():
    o = replace(TS, pods=(*TS_PODS[:3], replace(TS_PODS[3], phase="Running", running=Interval(ts(50)))))
    assert all_ran_at_once(o) == [
        Miss(
            "all Running at one moment",
            "the pods never ran all at once: the last started 2026-11-30T12:00:50+00:00, the first ended "
            "2026-11-30T12:00:50+00:00",
        )
    ]


TS_WANT = "GFD count 1, replicas 4, time-slicing; nvidia.com/gpu.shared = 4"


def test_a_gpu_count_that_is_no_number_counts_no_card():
    n = replace(TS_NODE, labels={**TS_NODE.labels, "nvidia.com/gpu.count": "two"})
    assert node_advertises_one_gpu_as_n_replicas(replace(TS, node=n)) == [
        Miss(TS_WANT, "node gpu-ts has two physical GPUs (GFD nvidia.com/gpu.count), expected 1"),
        Miss(TS_WANT, "nvidia.com/gpu.shared capacity is 4, expected 4 = 0 physical x 4 replicas"),
    ]


def test_admitted_by_another_tenants_cluster_queue_is_named_with_its_stamp():
    w = replace(
        TS_WLS[0],
        snapshots=(
            admitted_snap(
                5,
                cq="team-b",
                flavors=("gpu-shared",),
                uid="uid-ts-0",
                admitted=TS_WLS[0].snapshots[0].admitted,
            ),
        ),
    )
    assert admitted_as_the_tenant_on_the_flavor(w, "gpu-shared", "w") == [
        Miss(
            "w",
            "job-ts-0 of tenant team-a admitted at 2026-11-30T12:00:05+00:00 by ClusterQueue team-b, not its "
            "tenant's",
        )
    ]


def test_a_pod_of_no_workload_does_not_stop_the_next_pod_from_being_checked():
    want = "4 pods, each of its own Workload admitted on gpu-shared before it ran"
    assert each_pod_admitted_by_kueue_on_the_shared_flavor(replace(TS, workloads=TS_WLS[2:])) == [
        Miss(want, "2 Kueue Workloads observed for the pods, expected 4"),
        Miss(want, "pod ts-0 belongs to 0 of the act's Workloads, expected one"),
        Miss(want, "pod ts-1 belongs to 0 of the act's Workloads, expected one"),
    ]


WANT_COST = "cost = $1.861/h x seconds > 0"
WANT_SECS = "instance-seconds = the node's life inside each interval (1 s)"
WANT_IDLE = "idle = cost x (1 - SM_ACTIVE)"


def one(**changes) -> dict:
    return {**record(0), **changes}


# --- enough_consecutive_records -------------------------------------------------------------------------
def test_one_record_is_enough_when_one_is_asked_for():
    assert enough_consecutive_records(replace(COST, min_records=1, records=[record(0)])) == []


def test_asking_for_no_records_is_named():
    assert enough_consecutive_records(replace(COST, min_records=0)) == [
        Miss(
            ">= 0 consecutive records, one per interval",
            "min_records 0: a claim about no records proves nothing",
        )
    ]


def test_too_few_records_quote_the_collectors_last_word():
    o = replace(COST, records=[record(0)], collector_log=("starting", "scraped gpu-a", "sleeping 60s"))
    assert enough_consecutive_records(o) == [
        Miss(
            ">= 2 consecutive records, one per interval",
            "1 record(s) for gpu-a, expected at least 2 consecutive; the collector said: 'sleeping 60s'",
        )
    ]


# --- instance_seconds_match_the_node_life ---------------------------------------------------------------
def test_zero_seconds_before_the_node_existed_is_right():
    o = replace(COST, records=[record(0, seconds=0)], node_created=t(120))
    assert instance_seconds_match_the_node_life(o) == []


def test_seconds_one_over_the_node_life_from_a_fractional_creation_are_within_tolerance():
    o = replace(COST, records=[record(0, seconds=31)], node_created=t(30.7))
    assert instance_seconds_match_the_node_life(o) == []


def test_a_record_out_of_its_interval_does_not_stop_the_next_from_being_checked():
    o = replace(COST, records=[record(0, seconds=-1), record(1, seconds=30)])
    assert instance_seconds_match_the_node_life(o) == [
        Miss(WANT_SECS, "2026-11-30T12:00:00Z: instance-seconds -1 do not fit inside the 60s interval"),
        Miss(
            WANT_SECS,
            "2026-11-30T12:01:00Z: 30s charged, but the node lived 60s of this interval (created "
            "2026-11-30T11:50:00+00:00, deleted None)",
        ),
    ]


# --- SM_ACTIVE ------------------------------------------------------------------------------------------
def test_sm_active_exactly_the_tolerance_away_is_the_load():
    o = replace(COST, records=[record(0, sm=0.75)], expected_sm_active=0.5, sm_tolerance=0.25)
    assert sm_active_is_the_ratio_the_load_ran_at(o) == []


def test_a_load_span_outside_every_record_is_named_with_its_end():
    holder = HolderObs(
        "act-1-team-a", "cost-1-x", "team-a", held_from=t(600), held_until=t(700), submitted_at=t(590)
    )
    assert sm_active_seen_while_the_load_ran(replace(COST, compute_load=True, holder=holder)) == [
        Miss(
            "SM_ACTIVE recorded in some interval the compute load ran",
            "no record's interval overlaps the load's span (2026-11-30T12:10:00+00:00 to "
            "2026-11-30T12:11:40+00:00): whether SM_ACTIVE was there while it ran is unobserved",
        )
    ]


def test_gpu_util_zero_under_load_is_refused_though_sm_active_is_within_its_tolerance_above_it():
    recs = [record(i, sm=0.02, util=0.0) for i in range(3)]
    o = replace(COST, records=recs, expected_sm_active=0.02, compute_load=True)
    assert sm_active_within_gpu_util(o) == []  # 0.02 <= 0/100 + 0.05: the tolerance lets it through
    assert gpu_util_seen_while_the_load_ran(o) == [
        Miss(
            "GPU_UTIL above zero in some interval the compute load ran",
            "GPU_UTIL was 0 in all 3 interval(s) the compute load ran (2026-11-30T12:00:00Z to "
            "2026-11-30T12:03:00Z): the metric was never there",
        )
    ]
    # zero in an interval the load ran throughout is a gap, though others show it; in one it ran only part of,
    # the load may have started after the interval's activity was sampled
    some = [record(0, sm=0.02, util=0.0), record(1, sm=0.02, util=3.0), record(2, sm=0.02, util=0.0)]
    assert gpu_util_seen_while_the_load_ran(replace(o, records=some)) == [
        Miss(
            "GPU_UTIL above zero in every interval the compute load ran throughout",
            "GPU_UTIL was 0 in interval(s) ['2026-11-30T12:00:00Z', '2026-11-30T12:02:00Z'], which the compute "
            "load ran from start to end: the metric was missing there",
        )
    ]
    partly = replace(o.holder, held_from=t(30), held_until=t(150))
    assert gpu_util_seen_while_the_load_ran(replace(o, records=some, holder=partly)) == []
    assert gpu_util_seen_while_the_load_ran(replace(o, compute_load=False)) == []


def test_a_load_span_outside_every_record_is_named_once_by_the_sm_active_clause():
    holder = HolderObs(
        "act-1-team-a", "cost-1-x", "team-a", held_from=t(600), held_until=t(700), submitted_at=t(590)
    )
    o = replace(COST, compute_load=True, holder=holder)
    assert gpu_util_seen_while_the_load_ran(o) == [] and len(sm_active_seen_while_the_load_ran(o)) == 1


# --- cost_is_the_rate_times_seconds ---------------------------------------------------------------------
def test_each_record_without_a_cost_is_named_under_the_plain_rate():
    o = replace(COST, records=[one(EffectiveCost=0), record(1, cost=-1.0)])
    assert cost_is_the_rate_times_seconds(o) == [
        Miss(WANT_COST, "2026-11-30T12:00:00Z: interval cost 0, expected > 0"),
        Miss(WANT_COST, "2026-11-30T12:01:00Z: interval cost -1.0, expected > 0"),
    ]


def test_the_wrong_rate_source_quotes_the_collectors_message():
    o = replace(
        COST,
        records=[one(x_RateSource="catalog", x_Message="spot price API denied")],
        expected_rate_source="spot",
    )
    assert cost_is_the_rate_times_seconds(o) == [
        Miss(
            WANT_COST + ", rate source spot",
            "2026-11-30T12:00:00Z: charged from rate source 'catalog', expected 'spot' (spot price API denied)",
        )
    ]


def test_a_record_with_no_seconds_is_checked_against_no_cost():
    o = replace(COST, records=[one(x_InstanceSeconds=None)])
    assert cost_is_the_rate_times_seconds(o) == [
        Miss(WANT_COST, "2026-11-30T12:00:00Z: cost 0.031017 != rate 1.861000/h x Nones = 0.000000")
    ]


def test_a_cost_exactly_the_tolerance_off_is_right():
    o = replace(COST, records=[one(x_InstanceSeconds=0, EffectiveCost=1e-6)])
    assert cost_is_the_rate_times_seconds(o) == []


# --- idle_is_cost_times_unused_share --------------------------------------------------------------------
def test_idle_of_a_fully_busy_gpu_is_zero_within_the_tolerance():
    assert (
        idle_is_cost_times_unused_share(replace(COST, records=[one(x_SmActive=1.0, x_IdleCost=1e-6)])) == []
    )


def test_idle_of_a_fully_busy_gpu_is_checked():
    o = replace(COST, records=[one(x_SmActive=1.0, EffectiveCost=1.0, x_IdleCost=0.5)])
    assert idle_is_cost_times_unused_share(o) == [
        Miss(WANT_IDLE, "2026-11-30T12:00:00Z: idle cost 0.5 != cost x (1 - SM_ACTIVE) = 0.000000")
    ]


def test_sm_active_above_one_leaves_idle_to_the_ratio_clause():
    assert idle_is_cost_times_unused_share(replace(COST, records=[record(0, sm=1.5)])) == []


def test_a_record_without_sm_active_does_not_stop_the_next_from_being_checked():
    o = replace(
        COST,
        records=[
            record(0, sm=None),
            one(ChargePeriodStart="x", EffectiveCost=1.0, x_SmActive=0.5, x_IdleCost=0.1),
        ],
    )
    assert idle_is_cost_times_unused_share(o) == [
        Miss(WANT_IDLE, "x: idle cost 0.1 != cost x (1 - SM_ACTIVE) = 0.500000")
    ]


# --- check_cost -----------------------------------------------------------------------------------------
def test_the_plain_claim_says_no_rate_source_load_or_holdings():
    assert check_cost(RECORDS_ONLY).expected == (
        ">= 2 consecutive records, each with GPU_UTIL and SM_ACTIVE (ratio, <= GPU_UTIL/100 + 0.05), cost = "
        "$1.861/h x seconds > 0, idle = cost x (1 - SM_ACTIVE)"
    )


def test_the_totals_count_a_zero_idle_and_a_missing_cost_as_nothing():
    busy = replace(COST, records=[record(0, sm=1.0), record(1, sm=1.0)], expected_sm_active=None)
    v = check_cost(busy)
    assert v.holds, v.render()
    assert v.observed == "2 records, $0.062033 of which $0.000000 idle"
    v = check_cost(replace(COST, records=[one(EffectiveCost=None), record(1)]))
    assert v.evidence["cost"] == record(1)["EffectiveCost"]


# --- act 2: admission -----------------------------------------------------------------------------------
def gpus_of(*devices: str) -> set[str]:
    return cards(
        WorkloadObs("w", "team-a", pods=(PodObs("p", "gpu-a", "Running", Interval(t(1)), devices=devices),))
    )


def test_cards_take_the_id_before_the_separator_and_a_malformed_id_is_refused():
    assert gpus_of("GPU-1::0", "GPU-1::1", "GPU-2") == {"GPU-1", "GPU-2"}
    for bad, why in (
        ("GPU-1::0::1", "replica index '0::1'"),
        ("::0", "names no card"),
        ("", "names no card"),
    ):
        with pytest.raises(ValueError, match=re.escape(f"device id {bad!r}") + ".*" + re.escape(why)):
            gpus_of(bad)


def test_no_jobs_submitted_is_named_even_with_tenants():
    assert every_job_has_one_workload(replace(ADMIT, expected_total=0, submitted={}))[0] == Miss(
        "0 Workloads, one uid each", "0 jobs for tenants ['team-a', 'team-b']: nothing was submitted to check"
    )


def test_one_job_submitted_is_something_to_check():
    o = replace(
        ADMIT,
        workloads=seen_until((running_wl("a-0", "team-a"),), ADMIT.observed_at),
        expected_total=1,
        submitted={"a-0": "team-a"},
    )
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


def test_a_run_that_ends_before_it_starts_is_refused_where_it_is_recorded():
    with pytest.raises(ValueError) as refused:
        running_wl("a-0", "team-a", 30, 20)
    assert str(refused.value) == (
        "Interval 2026-11-30T12:00:30+00:00 to 2026-11-30T12:00:20+00:00: ends before it starts, which no run does "
        "(a start or an end misread)"
    )
    running_wl("a-0", "team-a", 30, 30.5)  # within one second: the API server's grain cannot order them


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
WANT_HOLDINGS = f"GPU holdings naming {WHO} for tenant team-a in each interval it ran"


def test_an_interval_beginning_one_second_after_the_pod_finished_is_misattributed():
    o = replace(HELD, holder=replace(HOLDER, held_until=t(119)))
    assert holdings_name_the_acts_pod(o) == [
        Miss(
            WANT_HOLDINGS,
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
            WANT_HOLDINGS,
            f"the act's pod {WHO} ended 2026-11-30T12:00:20+00:00 before it started 2026-11-30T12:00:30+00:00: "
            "its span is impossible",
        )
    ]


def test_a_pod_span_outside_every_record_is_named_with_its_end():
    o = replace(HELD, holder=replace(HOLDER, held_from=t(600), held_until=t(700)))
    assert holdings_name_the_acts_pod(o) == [
        Miss(
            WANT_HOLDINGS,
            f"no record's interval overlaps the act's pod {WHO} (2026-11-30T12:10:00+00:00 to "
            "2026-11-30T12:11:40+00:00): its holding cannot be checked",
        )
    ]


def test_a_holding_counted_twice_does_not_stop_the_next_interval_from_being_checked():
    other = {**POD, "pod": "other"}
    holdings = {**HELD.holdings, "2026-11-30T12:00:00Z": [POD, POD], "2026-11-30T12:01:00Z": [other]}
    assert holdings_name_the_acts_pod(replace(HELD, holdings=holdings)) == [
        Miss(
            WANT_HOLDINGS,
            f"2026-11-30T12:00:00Z: the act's pod {WHO} is recorded 2 times: one holding counted twice",
        ),
        Miss(
            WANT_HOLDINGS,
            f"2026-11-30T12:01:00Z: the holdings recorded for gpu-a name ['act-1-team-a/other'], not the act's "
            f"pod {WHO}",
        ),
    ]


def test_an_admitted_workload_with_no_cluster_queue_is_charged_to_a_question_mark_in_the_evidence():
    a0 = replace(running_wl("a-0", "team-a"), snapshots=(admitted_snap(5, cq=None, uid="uid-a-0"),))
    v = check_admission(replace(ADMIT, workloads=(a0, *ADMIT.workloads[1:])))
    assert not v.holds
    assert v.evidence["cluster_queues"] == ["?", "team-b"]


# --- act 1: cold start ----------------------------------------------------------------------------------
def test_no_node_is_named_under_the_new_node_claim():
    assert node_is_new_and_launched_by_our_nodeclaim(replace(COLD, node=None)) == [
        Miss(
            "a node created after 2026-11-30T12:00:00+00:00 by a new NodeClaim of NodePool gpu-spot",
            "no GPU node was observed for the job",
        )
    ]


def test_a_claim_launched_before_it_was_created_names_both_stamps():
    assert claim_came_before_its_node(replace(SPOT_NODE, nodeclaim_launched_at=t(20)), "w") == [
        Miss(
            "w",
            "NodeClaim gpu-spot-x1 Launched 2026-11-30T12:00:20+00:00 before it was created "
            "2026-11-30T12:00:25+00:00: the timestamps contradict each other",
        )
    ]


def test_more_allocatable_gpus_than_capacity_is_named():
    assert node_is_spot_with_a_gpu(replace(COLD, node=replace(SPOT_NODE, allocatable_gpu=2))) == [
        Miss(
            "allocatable nvidia.com/gpu <= capacity",
            "node gpu-a has 2 allocatable nvidia.com/gpu but a capacity of 1: the GPU count contradicts itself",
        )
    ]


def test_a_pod_started_after_its_node_was_deleted_ran_on_another_node_of_that_name():
    o = replace(COLD, node=replace(SPOT_NODE, deleted_at=t(100)))
    assert pod_ran_on_that_node_after_it_was_ready(o) == [
        Miss(
            "the pod Running on gpu-a once it was Ready",
            "node gpu-a was deleted 2026-11-30T12:01:40+00:00, before pod vectoradd-1 started "
            "2026-11-30T12:02:00+00:00: the pod ran on another node of that name",
        )
    ]


# --- act 3: preemption ----------------------------------------------------------------------------------
def test_the_preemptor_named_only_in_the_preempted_message_made_room():
    preempted = cond("Preempted", "True", "InClusterQueue", MADE_ROOM_FOR_HIGH)
    assert made_room_for([WorkloadSnapshot(t(31), {"Preempted": preempted}, False, True)]) == {"uid-high-0"}


def test_a_cohort_preemption_inside_one_cluster_queue_is_named():
    assert queues_fit_the_reason(replace(PREEMPT, expected_reason="InCohortReclamation"), "w") == [
        Miss(
            "w",
            "preempted InCohortReclamation, but both were admitted by team-a: a cohort preemption needs two "
            "ClusterQueues",
        )
    ]


def test_a_re_created_preemptor_is_named_as_the_preemptor():
    p = replace(
        PREEMPTOR,
        snapshots=(replace(PREEMPTOR.snapshots[0], uid="u1"), replace(PREEMPTOR.snapshots[1], uid="u2")),
    )
    assert victim_is_one_workload_throughout(replace(PREEMPT, preemptor=p)) == [
        Miss(
            "the preemptor one Workload (one uid) in every snapshot",
            "preemptor high-0 was seen with uids ['u1', 'u2']: deleted and re-created (or its uid not "
            "observed), so its history is not one object's",
        )
    ]


def test_an_eviction_dated_before_the_preemptor_names_the_first_evicted_snapshot():
    s = evicted_snap(31)
    early = replace(
        s, conditions={**s.conditions, "Evicted": replace(s.conditions["Evicted"], last_transition=t(20))}
    )
    v = replace(VICTIM, snapshots=(*VICTIM.snapshots[:2], early, VICTIM.snapshots[3]))
    assert victim_history_shows_eviction_then_requeue(replace(PREEMPT, victim=v)) == [
        Miss(
            "Evicted(Preempted) after the preemptor came, then Job suspended, no admission, QuotaReserved False",
            "low-0's Evicted condition dates from 2026-11-30T12:00:20+00:00, before the preemptor was submitted "
            "2026-11-30T12:00:30+00:00: another eviction",
        )
    ]


def test_a_preemptor_never_observed_has_no_uid_to_match():
    assert victim_preempted_for_the_policy_reason(
        replace(PREEMPT, preemptor=replace(PREEMPTOR, snapshots=()))
    ) == [
        Miss(
            "Preempted True with reason InClusterQueue, to accommodate the preemptor (UID None)",
            "low-0's Preempted/Evicted messages name preemptor UID(s) ['uid-high-0'], not high-0's None: it made "
            "room for another workload, or for one unobserved",
        )
    ]


@pytest.mark.parametrize(
    "change, failed",
    [
        ({"phase": "Failed"}, "high-0-pod (Failed, exit None, reason None)"),
        (
            {"disruption": "EvictionByEvictionAPI"},
            "high-0-pod (Running, exit None, reason None: disrupted: EvictionByEvictionAPI)",
        ),
    ],
)
def test_a_failed_or_disrupted_preemptor_pod_is_no_run(change, failed):
    pod = replace(PREEMPTOR, pods=(replace(PREEMPTOR.pods[0], **change),))
    assert preemptor_admitted_and_running(replace(PREEMPT, preemptor=pod)) == [
        Miss(
            "high-0 Admitted, its pod Running after that",
            "preemptor high-0 never had a Running pod that did not crash and was not ended by the platform "
            f"(failed: ['{failed}'])",
        )
    ]


def test_a_preemptor_pod_that_exited_zero_ran():
    done = replace(PREEMPTOR, pods=(replace(PREEMPTOR.pods[0], phase="Succeeded", exit_code=0),))
    assert preemptor_admitted_and_running(replace(PREEMPT, preemptor=done)) == []


# --- act 7: diagnosis -----------------------------------------------------------------------------------
FIRST = "first_cause = the first explaining finding, also_explains = the later ones"


def test_a_target_with_two_slashes_is_not_namespace_slash_name():
    assert is_namespaced("team-a/job") and not is_namespaced("team-a/job/x")


def test_a_token_names_something_only_with_every_part_of_its_value():
    assert not names_nothing("offers:gpu-a:nvidia.com/gpu") and not names_nothing("holder:team-a/server-0")
    assert names_nothing("node:")
    assert (
        names_nothing("offers:gpu-a:")
        and names_nothing("holder:team-a/")
        and names_nothing("holder:/server-0")
    )


def test_a_target_without_its_namespace_is_named():
    sits = (*SITUATIONS[:5], replace(SITUATIONS[5], target="job-both"))
    assert a_situation_for_every_cause_and_one_with_two(replace(GOOD, situations=sits)) == [
        Miss(
            "one situation per cause ['admission', 'allocation', 'memory', 'placement', 'application'], one "
            "with two causes, each target once",
            "targets not namespace/name: ['job-both']: which object was diagnosed is unproven",
        )
    ]


def test_an_unobserved_explaining_list_does_not_stop_the_next_diagnosis_from_being_checked():
    d = (
        replace(DIAGNOSES[0], explaining=None),
        replace(DIAGNOSES[1], first_cause="placement"),
        *DIAGNOSES[2:],
    )
    assert first_cause_agrees_with_the_findings(replace(GOOD, diagnoses=d)) == [
        Miss(FIRST, "team-a/alloc: which findings explain the wait was not observed"),
        Miss(
            FIRST, "team-a/mem: first cause placement, also [], but the findings that explain are ['memory']"
        ),
    ]


def test_no_explaining_finding_agrees_with_no_first_cause():
    d = (replace(DIAGNOSES[0], explaining=(), first_cause=None), *DIAGNOSES[1:])
    assert first_cause_agrees_with_the_findings(replace(GOOD, diagnoses=d)) == []


def test_the_claim_lists_every_later_cause_and_says_what_no_situation_means():
    sits = (*SITUATIONS[:5], replace(SITUATIONS[5], also_holds=("placement", "memory")))
    assert check_diagnosis(replace(GOOD, situations=sits)).expected.endswith(
        "; team-b/job-both: admission (also placement, memory)"
    )
    assert check_diagnosis(replace(GOOD, situations=())).expected == (
        "one situation per cause, one with two causes at once"
    )
