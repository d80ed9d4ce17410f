"""Red-team worlds against Kueue's signals in the diagnosis (diagnose/kueue_visibility.py and its callers).

Each test builds one wrong world (a malformed or inconsistent answer of the visibility API, a look-alike
workload, a stale or empty condition) and asserts what the finding must say: a stated fallback with the
precise reason, never a traceback, a zero, a silently chosen entry, or Kueue quoted for another workload.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from diagnose.admission import check_admission
from diagnose.kube_observer import KubeObserver, workload_facts
from diagnose.kueue_visibility import (
    local_queue_path,
    pending_path,
    position_text,
    read_pending,
    read_signals,
    reason_text,
)
from diagnose.model import Cluster, PodFacts, WorkloadFacts
from diagnose.view import build_view
from facts.conditions import Condition
from tests.diagnose import kube_shapes as ks

NS, LQ, CQ = "team-a", "main", "gpu-cq"
V2 = "v1beta2"


def entry(name: str, cq: int, lq: int, *, ns: str = NS, priority: Any = 0, **meta: Any) -> dict[str, Any]:
    """One item of a PendingWorkloadsSummary, shaped as Kueue v0.19.2 serves it (tests/diagnose/recorded)."""
    return {
        "metadata": {"name": name, "namespace": ns, **meta},
        "priority": priority,
        "localQueueName": LQ,
        "positionInClusterQueue": cq,
        "positionInLocalQueue": lq,
    }


def summary(items: Any) -> str:
    return json.dumps(
        {"kind": "PendingWorkloadsSummary", "apiVersion": f"visibility.kueue.x-k8s.io/{V2}", "items": items}
    )


LQ_BODY = json.dumps(
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "spec": {"clusterQueue": CQ}}
)


def getter(pending: tuple[int, str], lq: tuple[int, str] = (200, LQ_BODY)):
    answers = {pending_path(V2, NS, LQ): pending, local_queue_path(NS, LQ): lq}
    return lambda path: answers.get(path, (404, "404 page not found\n"))


def waiting(name: str = "job-train-abcde", **kw: Any) -> WorkloadFacts:
    conditions = kw.pop(
        "conditions",
        {
            "QuotaReserved": Condition(
                "QuotaReserved", "False", "WaitingForQuota", "insufficient unused quota for nvidia.com/gpu"
            )
        },
    )
    return WorkloadFacts(NS, name, queue=LQ, conditions=conditions, job_suspended=True, **kw)


def signal(items: Any, w: WorkloadFacts | None = None):
    w = w or waiting()
    return read_signals(getter((200, summary(items))), [w])[w.key]


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


# --- transport: what Kube.get_raw hands over, and a version that is down while the other answers -----------
class _Resp:
    def __init__(self, status: int, data: bytes):
        self.status, self.data = status, data


class _ApiClient:
    def __init__(self, status: int, data: bytes):
        self.status, self.data = status, data

    def call_api(self, path, method, **kw):
        from kubernetes.client.exceptions import ApiException

        if self.status >= 400:
            raise ApiException(
                http_resp=SimpleNamespace(status=self.status, reason="x", data=self.data, getheaders=dict)
            )
        return _Resp(self.status, self.data)


@pytest.mark.parametrize("status", [200, 503])
def test_a_body_that_is_not_utf8_is_an_answer_not_a_traceback(status):
    # a proxy's or a broken aggregated server's error page in latin-1: get_raw promises (status, text) for
    # every HTTP status, so a decoding error (UnicodeDecodeError, exit 4) breaks that promise
    from clients.kube import Kube

    got_status, text = Kube(_ApiClient(status, "Dienst nicht verfügbar".encode("latin-1"))).get_raw("/x")
    assert got_status == status and "Dienst nicht verf" in text


def test_a_version_that_is_down_does_not_hide_the_other_that_answers():
    # v1beta2 and v1beta1 are two APIService objects, each with its own service and availability: one can be
    # unavailable (503) while the other serves the same list
    w = waiting()
    answers = {
        pending_path("v1beta2", NS, LQ): (503, "error trying to reach service: dial tcp: connect: refused\n"),
        pending_path("v1beta1", NS, LQ): (200, summary([entry(w.name, 2, 1)])),
        local_queue_path(NS, LQ): (200, LQ_BODY),
    }
    s = read_signals(lambda path: answers.get(path, (404, "404 page not found\n")), [w])[w.key]
    assert s.position is not None and s.position.in_cluster_queue == 2
    assert s.position.api == "visibility.kueue.x-k8s.io/v1beta1"


def test_both_versions_down_still_say_503():
    answers = {pending_path(v, NS, LQ): (503, "service unavailable\n") for v in ("v1beta2", "v1beta1")}
    _api, items, why = read_pending(lambda path: answers.get(path, (404, "")), NS, LQ)
    assert items is None and "503" in (why or "") and "VisibilityOnDemand" in (why or "")


def test_an_orphaned_workload_does_not_read_the_suspend_state_of_a_new_job_of_the_same_name():
    # the old Workload's Job (UID old-uid) is gone; a new Job `train` (UID new-uid, not suspended) runs. The
    # old Workload's job_suspended is unknown (None), not the new Job's False
    old = ks.workload("job-train-0ld00", "train", admitted=False)
    old["metadata"]["ownerReferences"][0]["uid"] = "old-uid"
    new_job = ks.job("train", suspend=False)
    new_job.metadata.uid = "new-uid"
    [w] = KubeObserver(ks.FakeKube(workloads=[old], jobs=[new_job])).workloads(NS)
    assert w.job_suspended is None


# --- the finding's own claim: "Kueue has not admitted" only when Kueue has not ------------------------------
def _finding(w: WorkloadFacts):
    pod = PodFacts(NS, "p", workload=w.name, gpu_requests={"nvidia.com/gpu": 1})
    return check_admission(build_view(pod, Cluster(workloads=(w,))), w)


def test_an_admitted_workload_whose_job_is_still_suspended_is_not_said_to_be_unadmitted():
    # Admitted True, its Job still suspended (Kueue's job controller has not unsuspended it yet, or cannot):
    # the finding said "Kueue has not admitted ... not Admitted yet (admission checks pending)"
    w = waiting(
        conditions={
            "QuotaReserved": Condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved"),
            "Admitted": Condition("Admitted", "True", "Admitted", "The workload is admitted"),
        }
    )
    f = _finding(w)
    assert "has not admitted" not in f.summary and "not Admitted yet" not in f.summary, f.summary
    assert "admitted" in f.summary and "suspended" in f.summary
    assert "admissionChecks" not in f.next_action, f.next_action


def test_contradicting_conditions_are_said_to_contradict_not_quoted_as_the_reason():
    # Admitted True with QuotaReserved False: Kueue admits only with quota reserved, so one of them is stale
    # (a status written mid-way, or by hand); neither the quota reason nor "not admitted" is Kueue's word now
    w = waiting(
        conditions={
            "QuotaReserved": Condition("QuotaReserved", "False", "WaitingForQuota", "old"),
            "Admitted": Condition("Admitted", "True", "Admitted", "The workload is admitted"),
        }
    )
    text, keys = reason_text(w)
    assert text.startswith("fallback:") and "contradict" in text, text
    assert not any(k.startswith("kueue-reason:") for k in keys)
    f = _finding(w)
    assert "has not admitted" not in f.summary and "contradict" in f.summary, f.summary
    assert "quota for it" not in f.next_action, f.next_action


def test_a_position_shared_with_another_workload_is_not_quoted():
    # positions in a ClusterQueue are unique: two workloads at 1 is an inconsistent answer
    s = signal([entry("other-a", 1, 0), entry("job-train-abcde", 1, 1)])
    assert s.position is None
    assert "other-a" in (s.fallback or "") and "positionInClusterQueue 1" in (s.fallback or "")


def test_an_entry_for_another_local_queue_is_not_this_queues_position():
    e = entry("job-train-abcde", 3, 0)
    e["localQueueName"] = "other"
    s = signal([e])
    assert s.position is None
    assert "other" in (s.fallback or "") and LQ in (s.fallback or "")


# --- the derivation with the reasons gate off (recorded: gates_off.json, Kueue v0.19.2's own conditions) -----
def _recorded_workload(world: str, name: str) -> WorkloadFacts:
    from pathlib import Path

    doc = json.loads((Path(__file__).parent / "recorded" / f"{world}.json").read_text())
    [raw] = [w for w in doc["workloads"] if w["metadata"]["name"] == name]
    return workload_facts(raw, job_suspended=True)


def test_legacy_inadmissible_for_a_missing_local_queue_is_not_told_to_wait_for_quota():
    # QuotaReserved False, reason Inadmissible, "LocalQueue nope doesn't exist": the legacy reason for every
    # cause that is not quota; the derived action said "no free quota ... wait for its running workloads"
    f = _finding(_recorded_workload("gates_off", "job-lost-a47bf"))
    assert "no free quota" not in f.next_action and "wait for its running" not in f.next_action, f.next_action
    assert "LocalQueue nope doesn't exist" in f.next_action or "message" in f.next_action


def test_legacy_pending_over_the_maximum_capacity_is_not_told_to_wait():
    # QuotaReserved False, reason Pending, "... > maximum capacity (1)": what ExceedsMaxQuota says with the gate
    # on; the derived action said "wait for its running workloads", and waiting never admits it
    f = _finding(_recorded_workload("gates_off", "job-too-big-64751"))
    assert "wait for its running" not in f.next_action, f.next_action
    assert "waiting will not admit it" in f.next_action


def test_legacy_pending_for_unused_quota_still_says_wait():
    f = _finding(_recorded_workload("gates_off", "job-second-e6be7"))
    assert "wait for its running workloads" in f.next_action


# --- ownership beyond batch/v1 Jobs: Kueue's plain-Pod integration, and a JobSet's Jobs ---------------------
def test_a_plain_pod_kueue_manages_is_linked_to_its_workload_not_said_unmanaged():
    # Kueue's pod integration: the Workload is owned by the Pod itself (kind Pod, its name and UID), and the
    # pod waits behind the kueue.x-k8s.io/admission scheduling gate. The finding said "not managed by Kueue
    # (no Workload owns it): the pod is the scheduler's to place"
    wl = ks.workload("pod-solo-1a2b3", "unused", admitted=False)
    wl["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "solo", "uid": "pod-uid"}
    ]
    p = ks.pod("solo")
    p.metadata.uid = "pod-uid"
    obs = KubeObserver(ks.FakeKube(pods=[p], workloads=[wl]))
    assert obs.pod(NS, "solo").workload == "pod-solo-1a2b3"
    pods, *_ = obs.observe(None)
    assert [x.workload for x in pods] == ["pod-solo-1a2b3"]


def test_a_pod_of_another_pod_of_the_same_name_is_not_linked():
    wl = ks.workload("pod-solo-1a2b3", "unused", admitted=False)
    wl["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "solo", "uid": "old-uid"}
    ]
    p = ks.pod("solo")
    p.metadata.uid = "new-uid"
    assert KubeObserver(ks.FakeKube(pods=[p], workloads=[wl])).pod(NS, "solo").workload is None


@pytest.mark.xfail(
    strict=True,
    reason="a JobSet's (or Kubeflow job's) Workload is owned by the JobSet, its pods by a child Job: linking "
    "them needs the Job's own ownerReferences, which the observer does not read; the pod is said unmanaged",
)
def test_a_pod_of_a_jobset_child_job_is_linked_to_the_jobsets_workload():
    wl = ks.workload("jobset-train-1a2b3", "unused", admitted=False)
    wl["metadata"]["ownerReferences"] = [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "train", "uid": "js-uid"}
    ]
    child = ks.job("train-workers-0", suspend=False)
    child.metadata.owner_references = [
        ks.k.V1OwnerReference(
            api_version="jobset.x-k8s.io/v1alpha2", kind="JobSet", name="train", uid="js-uid"
        )
    ]
    p = ks.pod("train-workers-0-0-abcde", job="train-workers-0")
    assert (
        KubeObserver(ks.FakeKube(pods=[p], workloads=[wl], jobs=[child]))
        .pod(NS, "train-workers-0-0-abcde")
        .workload
        == "jobset-train-1a2b3"
    )
