"""Acts 1's, 3's and 7's surviving mutants from the first mutation run over assertions/ (docs/claims.md,
mutation section): each row asserts the exact clause and what it says, at the edge the mutant moved."""

from __future__ import annotations

from dataclasses import replace

from assertions.clauses import Miss
from assertions.cold_start import (
    claim_came_before_its_node,
    node_is_new_and_launched_by_our_nodeclaim,
    node_is_spot_with_a_gpu,
    pod_ran_on_that_node_after_it_was_ready,
)
from assertions.diagnosis import (
    a_situation_for_every_cause_and_one_with_two,
    check_diagnosis,
    first_cause_agrees_with_the_findings,
    is_namespaced,
    names_nothing,
)
from assertions.observed import WorkloadSnapshot
from assertions.preemption import (
    made_room_for,
    preemptor_admitted_and_running,
    queues_fit_the_reason,
    victim_history_shows_eviction_then_requeue,
    victim_is_one_workload_throughout,
    victim_preempted_for_the_policy_reason,
)
from tests.assertions.tables import cond, t
from tests.assertions.test_cold_start import COLD, SPOT_NODE
from tests.assertions.test_diagnosis import DIAGNOSES, GOOD, SITUATIONS
from tests.assertions.test_preemption import MADE_ROOM_FOR_HIGH, PREEMPT, PREEMPTOR, VICTIM, evicted_snap


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


def test_a_failed_preemptor_pod_is_a_crash_and_one_that_exited_zero_ran():
    failed = replace(PREEMPTOR, pods=(replace(PREEMPTOR.pods[0], phase="Failed"),))
    assert preemptor_admitted_and_running(replace(PREEMPT, preemptor=failed)) == [
        Miss(
            "high-0 Admitted, its pod Running after that",
            "preemptor high-0 never had a Running pod that did not crash (crashed: ['high-0-pod (Failed, exit None)'])",
        )
    ]
    done = replace(PREEMPTOR, pods=(replace(PREEMPTOR.pods[0], phase="Succeeded", exit_code=0),))
    assert preemptor_admitted_and_running(replace(PREEMPT, preemptor=done)) == []


# --- act 7: diagnosis -----------------------------------------------------------------------------------
FIRST = "first_cause = the first explaining finding, also_explains = the later ones"


def test_a_target_with_two_slashes_is_not_namespace_slash_name():
    assert is_namespaced("team-a/job") and not is_namespaced("team-a/job/x")


def test_a_token_with_a_value_ending_in_a_colon_still_names_something():
    assert not names_nothing("node:gpu:")
    assert names_nothing("node:")


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
