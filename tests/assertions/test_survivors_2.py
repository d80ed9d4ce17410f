"""Rows for the mutants that survived the first mutation run over assertions/ (docs/claims.md, mutation
section): each asserts the exact clause and what it says, at the edge the mutant moved."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from assertions.clauses import Miss, parse_iso, possible, require_aware
from assertions.interruption import (
    ran_again,
    replacement_is_a_new_spot_node_of_ours,
    warning_was_delivered,
    workload_evicted_through_the_eviction_api,
    workload_ran_again_on_the_replacement,
)
from assertions.observed import Interval
from assertions.timeslicing import (
    admitted_as_the_tenant_on_the_flavor,
    all_pods_on_that_node,
    all_ran_at_once,
    each_pod_admitted_by_kueue_on_the_shared_flavor,
    node_advertises_one_gpu_as_n_replicas,
)
from tests.assertions.tables import admitted_snap
from tests.assertions.tables import t as ts
from tests.assertions.test_interruption import AGAIN, HOLDS, NEW, VICTIM
from tests.assertions.test_interruption import t as it
from tests.assertions.test_timeslicing import TS, TS_NODE, TS_PODS, TS_WLS

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


WANT = "the workload's pods on gpu-int evicted (EvictionByEvictionAPI)"
EARLY = replace(VICTIM, name="w-0", running=Interval(it(-200), it(-5)))
GC = replace(VICTIM, name="w-3", disruption="DeletionByPodGC")


def test_a_pod_stopped_before_the_warning_is_named_and_the_next_still_checked():
    assert workload_evicted_through_the_eviction_api(replace(HOLDS, pods=(EARLY, GC, AGAIN))) == [
        Miss(
            WANT + " after the warning",
            "pod w-0 stopped 2026-11-30T11:59:55.400000+00:00, before the warning "
            "2026-11-30T12:00:00.400000+00:00: not evicted because of it",
        ),
        Miss(WANT, "pod w-3 was deleted by PodGC after its node vanished, not evicted: no graceful drain"),
    ]


def test_an_evicted_pod_does_not_stop_the_next_from_being_checked():
    assert workload_evicted_through_the_eviction_api(replace(HOLDS, pods=(VICTIM, GC, AGAIN))) == [
        Miss(WANT, "pod w-3 was deleted by PodGC after its node vanished, not evicted: no graceful drain"),
    ]


def test_a_failed_pod_on_the_replacement_did_not_run_again():
    assert ran_again(replace(HOLDS, pods=(VICTIM, replace(AGAIN, phase="Failed")))) == []


def test_a_pod_that_exited_zero_on_the_replacement_ran_again():
    done = replace(AGAIN, phase="Succeeded", exit_code=0)
    assert ran_again(replace(HOLDS, pods=(VICTIM, done))) == [done]


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
    o = replace(HOLDS, pods=(VICTIM, replace(AGAIN, running=None, phase="Pending")))
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
        )
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
        TS_WLS[0], snapshots=(admitted_snap(5, cq="team-b", flavors=("gpu-shared",), uid="uid-ts-0"),)
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
