"""Rows for the mutants that survived tests/assertions (docs/claims.md, mutation section): each asserts the
exact clause and what it says, at the edge the mutant moved."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from assertions.admission import admitted_pods_ran_healthy, admitted_ran_at_once, cards, healthy_runs
from assertions.clauses import Miss
from assertions.cost import check_cost, enough_consecutive_records, sm_active_within_gpu_util
from assertions.diagnosis import DiagnosisObs
from assertions.interruption import CLOCK_SKEW_SECONDS, node_cordoned_within_the_notice
from assertions.observed import Interval, PodObs, WorkloadObs
from tests.assertions.tables import cond, t
from tests.assertions.test_admission import ADMIT
from tests.assertions.test_cost import COST, record
from tests.assertions.test_interruption import HOLDS
from tests.assertions.test_preemption import VICTIM

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
    other = replace(VICTIM.snapshots[2], conditions={"Evicted": cond("Evicted", "True", "PodsReadyTimeout")})
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
def test_without_the_acts_last_look_overlap_is_not_decided():
    assert admitted_ran_at_once(replace(ADMIT, observed_at=None)) == [
        Miss("the act's last look at the cluster", "observed_at not given: overlap cannot be decided")
    ]


@pytest.mark.parametrize(
    "phase, exit_code, shown",
    [
        ("Failed", None, "a-0-pod (Failed, exit None, None)"),
        ("Succeeded", 1, "a-0-pod (Succeeded, exit 1, None)"),
    ],
)
def test_a_pod_that_failed_or_exited_non_zero_is_named_crashed(phase, exit_code, shown):
    w = ADMIT.workloads[0]
    crashed = replace(w, pods=(replace(w.pods[0], phase=phase, exit_code=exit_code),))
    got = admitted_pods_ran_healthy(replace(ADMIT, workloads=(crashed, *ADMIT.workloads[1:])))
    assert got == [
        Miss(
            "a-0 Running without crashing",
            f"admitted workload a-0's pod crashed, which is not running: ['{shown}']",
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
