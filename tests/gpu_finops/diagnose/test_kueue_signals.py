"""Wrong worlds against Kueue's signals in the diagnosis (gpu_finops/diagnose/kueue_visibility.py and its callers).

Each test builds one wrong world (a malformed or inconsistent answer of the visibility API, a look-alike
workload, a stale or empty condition) and asserts what the finding must say: a stated fallback with the
precise reason, never a traceback, a zero, a silently chosen entry, or Kueue quoted for another workload.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_finops.diagnose.admission import check_admission
from gpu_finops.diagnose.kube_observer import KubeObserver, workload_facts
from gpu_finops.diagnose.kueue_visibility import (
    position_text,
    read_pending,
    read_signals,
    reason_text,
)
from gpu_finops.diagnose.model import Cluster, PodFacts
from gpu_finops.diagnose.view import build_view
from gpu_finops.facts.conditions import Condition
from tests.gpu_finops.diagnose import kube_shapes as ks
from tests.gpu_finops.diagnose.kueue_signal_worlds import (
    LQ,
    NS,
    entry,
    getter,
    signal,
    summary,
    waiting,
)


# --- malformed answers: a traceback is never the answer ----------------------------------------------------
@pytest.mark.parametrize(
    "items",
    [
        [None, entry("job-train-abcde", 1, 1)],
        ["job-other", entry("job-train-abcde", 1, 1)],
        [{"metadata": "job-other"}, entry("job-train-abcde", 1, 1)],
    ],
    ids=["null-item", "string-item", "string-metadata"],
)
def test_a_malformed_item_is_a_stated_fallback_not_a_crash(items):
    s = signal(items)
    assert s.position is None
    assert "malformed" in (s.fallback or "") and "item 0" in (s.fallback or "")


def test_a_status_with_details_not_an_object_is_a_stated_fallback_not_a_crash():
    body = json.dumps(
        {"kind": "Status", "status": "Failure", "message": "boom", "details": "boom", "code": 404}
    )
    _api, items, why = read_pending(getter((404, body)), NS, LQ)
    assert items is None and why and "boom" in why


def test_a_local_queue_answer_that_is_no_object_does_not_crash_or_claim_no_cluster_queue():
    w = waiting()
    for lq_answer in [(200, '{"spec": "gpu-cq"}'), (200, "<html>proxy login</html>")]:
        s = read_signals(getter((200, summary([entry(w.name, 0, 0)])), lq_answer), [w])[w.key]
        assert s.position is not None and s.position.cluster_queue is None
        assert "names no spec.clusterQueue" not in (s.position.cluster_queue_unknown or "")
        assert "not a LocalQueue" in (s.position.cluster_queue_unknown or "")


# --- count: Kueue's positions are non-negative integers, and the LocalQueue's is never past the ClusterQueue's
@pytest.mark.parametrize(
    "cq,lq,what",
    [
        (-1, 0, "positionInClusterQueue -1"),
        (2, -3, "positionInLocalQueue -3"),
        (True, 0, "positionInClusterQueue True"),
        (1.0, 0, "positionInClusterQueue 1.0"),
        ("3", 0, "positionInClusterQueue '3'"),
    ],
    ids=["negative-cq", "negative-lq", "bool", "float", "string"],
)
def test_a_position_that_is_not_a_count_is_named_not_quoted(cq, lq, what):
    s = signal([entry("job-train-abcde", cq, lq)])
    assert s.position is None
    assert what in (s.fallback or ""), s.fallback


def test_a_local_queue_position_past_the_cluster_queue_one_is_inconsistent():
    # the LocalQueue's pending workloads are a subsequence of its ClusterQueue's, in the same order: its
    # position there can never be ahead of (bigger than) the one in the ClusterQueue
    s = signal([entry("job-train-abcde", 1, 4)])
    assert s.position is None
    assert "inconsistent" in (s.fallback or "") and "4" in (s.fallback or "")


def test_the_same_workload_listed_twice_is_not_silently_the_first():
    s = signal([entry("job-train-abcde", 0, 0), entry("x", 1, 1), entry("job-train-abcde", 5, 2)])
    assert s.position is None
    assert "twice" in (s.fallback or "") or "2 times" in (s.fallback or "")


def test_a_list_cut_at_kueues_default_limit_does_not_claim_the_workload_left_the_queue():
    # Kueue's visibility API returns at most `limit` items, 1000 by default (constants.DefaultPendingWorkloadsLimit):
    # a workload at position 1000 or later is absent from the first page, and still queued
    items = [entry(f"job-{i}-aaaaa", i, i) for i in range(1000)]
    s = signal(items)
    assert s.position is None
    assert "does not queue it now" not in (s.fallback or "")
    assert "1000" in (s.fallback or "") and "limit" in (s.fallback or "")


# --- identity: a look-alike in the list is not the workload -----------------------------------------------
def _raw_workload(created: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "train-manual",
            "namespace": NS,
            "creationTimestamp": created,
            "uid": "new-uid",
        },
        "spec": {"queueName": LQ, "podSets": []},
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "False", "reason": "WaitingForQuota", "message": "m"}
            ]
        },
    }


def test_a_re_created_workload_of_the_same_name_is_not_quoted_for_this_one():
    # the Workload was deleted and created again (same name) between the two reads: the entry Kueue lists
    # is the other incarnation (its creationTimestamp says so); its position is not this workload's
    w = workload_facts(_raw_workload("2026-12-02T13:50:10Z"), job_suspended=None)
    s = signal([entry("train-manual", 7, 7, creationTimestamp="2026-12-02T13:40:00Z")], w)
    assert s.position is None
    assert "2026-12-02T13:40:00Z" in (s.fallback or "") and "2026-12-02T13:50:10Z" in (s.fallback or "")


def test_the_same_incarnation_is_still_quoted():
    w = workload_facts(_raw_workload("2026-12-02T13:50:10Z"), job_suspended=None)
    s = signal([entry("train-manual", 7, 3, creationTimestamp="2026-12-02T13:50:10Z")], w)
    assert s.position is not None and s.position.in_cluster_queue == 7


def test_a_pod_of_a_re_created_job_gets_its_own_workload_not_the_old_ones():
    # Job `train` was deleted with --cascade=orphan and created again: Kueue names Workloads by the Job's
    # name and UID, so the old Workload (of the old Job's UID) lingers beside the new one, both owned by a
    # Job named `train`. The pod belongs to the new Job (UID new-uid) and so to the new Workload.
    def wl(name: str, uid: str, reason: str) -> dict[str, Any]:
        w = ks.workload(name, "train", admitted=False)
        w["metadata"]["ownerReferences"][0]["uid"] = uid
        w["status"]["conditions"][0]["reason"] = reason
        return w

    old, new = (
        wl("job-train-0ld00", "old-uid", "ExceedsMaxQuota"),
        wl("job-train-new00", "new-uid", "WaitingForQuota"),
    )
    p = ks.pod("train-xyz", job="train")
    p.metadata.owner_references[0].uid = "new-uid"
    kube = ks.FakeKube(pods=[p], workloads=[old, new], jobs=[ks.job("train", suspend=True)])
    obs = KubeObserver(kube)
    assert obs.pod(NS, "train-xyz").workload == "job-train-new00"
    pods, *_ = obs.observe(None)
    assert [x.workload for x in pods if x.name == "train-xyz"] == ["job-train-new00"]


# --- conditions: an empty or unranked reason is not "Kueue's reason" --------------------------------------
def test_an_empty_reason_is_a_fallback_not_kueue_reason_blank():
    w = waiting(conditions={"QuotaReserved": Condition("QuotaReserved", "False", "", "")})
    text, keys = reason_text(w)
    assert text.startswith("fallback:"), text
    assert "kueue-reason:" not in keys


def test_a_deactivated_workload_is_not_told_to_wait_for_quota():
    # recorded (served.json, job-off-21c79): spec.active=false gives QuotaReserved False reason Deactivated;
    # no amount of waiting or quota admits it
    w = waiting(
        "job-off-21c79",
        conditions={
            "QuotaReserved": Condition(
                "QuotaReserved", "False", "Deactivated", "The workload is deactivated"
            ),
            "Evicted": Condition("Evicted", "True", "Deactivated", "The workload is deactivated"),
            "Admitted": Condition("Admitted", "False", "NoReservation", "The workload has no reservation"),
        },
    )
    pod = PodFacts(NS, "off-pod", workload=w.name, gpu_requests={"nvidia.com/gpu": 1})
    f = check_admission(build_view(pod, Cluster(workloads=(w,))), w)
    assert "quota" not in f.next_action.lower(), f.next_action
    assert "active" in f.next_action


def test_quota_reserved_but_not_listed_is_not_said_to_have_left_the_queue_between_reads():
    # QuotaReserved True, Admitted False (admission checks pending): Kueue does not list a workload that
    # holds a quota reservation among its pending ones; that is why it is absent, not a race or a stop
    w = waiting(
        conditions={
            "QuotaReserved": Condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved"),
            "Admitted": Condition("Admitted", "False", "UnsatisfiedAdmissionChecks", "check prov pending"),
        }
    )
    s = signal([entry("someone-else", 0, 0)], w)
    text, _ = position_text(s)
    assert "left the queue between the reads" not in text
    assert "quota reserved" in text.lower() or "QuotaReserved" in text


# --- time order: a reason written for an older spec, a workload already past the queue --------------------
def test_a_reason_written_for_an_older_generation_is_said_to_be_stale():
    # the Workload's spec changed (generation 3: a new priority, queue or spec.active) after Kueue wrote the
    # QuotaReserved reason (observedGeneration 1): the reason describes the old spec, not necessarily this one
    raw = _raw_workload("2026-12-02T13:50:10Z")
    raw["metadata"]["generation"] = 3
    raw["status"]["conditions"][0]["observedGeneration"] = 1
    w = workload_facts(raw, job_suspended=True)
    text, keys = reason_text(w)
    assert "kueue-reason:WaitingForQuota" in keys
    assert "generation 1" in text and "generation 3" in text, text


def test_a_current_reason_carries_no_staleness_note():
    raw = _raw_workload("2026-12-02T13:50:10Z")
    raw["metadata"]["generation"] = 2
    raw["status"]["conditions"][0]["observedGeneration"] = 2
    text, _ = reason_text(workload_facts(raw, job_suspended=True))
    assert "generation" not in text, text


def test_an_admitted_workload_with_its_job_still_suspended_is_not_said_to_be_held_by_admitted():
    # Admitted True while the Job is still suspended (the moment before Kueue unsuspends it): it is not in the
    # pending list because it is admitted, and the Admitted condition holds nothing back
    w = waiting(
        conditions={
            "QuotaReserved": Condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved"),
            "Admitted": Condition("Admitted", "True", "Admitted", "The workload is admitted"),
        }
    )
    text, _ = position_text(signal([], w))
    assert "what holds it is the Admitted condition" not in text
    assert "admitted" in text.lower() and "suspended" in text, text
