"""Wrong worlds against Kueue's signals in diagnose, part two: the transport (Kube.get_raw, a version
that is down), the finding's own claim ("Kueue has not admitted" only when it has not), the derivation with the
reasons gate off, and ownership beyond batch/v1 Jobs. Part one: test_kueue_signals.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from gpu_finops.diagnose.admission import check_admission
from gpu_finops.diagnose.kube_observer import KubeObserver, workload_facts
from gpu_finops.diagnose.kueue_visibility import (
    local_queue_path,
    pending_path,
    read_pending,
    read_signals,
    reason_text,
)
from gpu_finops.diagnose.model import Cluster, PodFacts, WorkloadFacts
from gpu_finops.diagnose.view import build_view
from gpu_finops.facts.conditions import Condition
from tests.gpu_finops.diagnose import kube_shapes as ks
from tests.gpu_finops.diagnose.kueue_signal_worlds import (
    LQ,
    LQ_BODY,
    NS,
    entry,
    signal,
    summary,
    waiting,
)


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
    from gpu_finops.clients.kube import Kube

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
def _pod_owned_world(workload_owner_uid: str, pod_uid: str) -> KubeObserver:
    """Pod `solo` (UID `pod_uid`) and Workload pod-solo-1a2b3 owned by a Pod named solo of `workload_owner_uid`."""
    wl = ks.workload("pod-solo-1a2b3", "unused", admitted=False)
    wl["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "solo", "uid": workload_owner_uid}
    ]
    p = ks.pod("solo")
    p.metadata.uid = pod_uid
    return KubeObserver(ks.FakeKube(pods=[p], workloads=[wl]))


def test_a_plain_pod_kueue_manages_is_linked_to_its_workload_not_said_unmanaged():
    # Kueue's pod integration: the Workload is owned by the Pod itself (kind Pod, its name and UID), and the
    # pod waits behind the kueue.x-k8s.io/admission scheduling gate. The finding said "not managed by Kueue
    # (no Workload owns it): the pod is the scheduler's to place"
    obs = _pod_owned_world(workload_owner_uid="pod-uid", pod_uid="pod-uid")
    assert obs.pod(NS, "solo").workload == "pod-solo-1a2b3"
    pods, *_ = obs.observe(None)
    assert [x.workload for x in pods] == ["pod-solo-1a2b3"]


def test_a_pod_of_another_pod_of_the_same_name_is_not_linked():
    obs = _pod_owned_world(workload_owner_uid="old-uid", pod_uid="new-uid")
    assert obs.pod(NS, "solo").workload is None


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


def test_an_api_server_that_never_answers_times_out_as_unreachable(monkeypatch):
    # a real socket that accepts and never answers, behind the real Kubernetes client: get_raw gives up
    # after RAW_TIMEOUT with urllib3's error, which diagnose's kube_call turns into Unreachable (exit 3)
    import socket
    import time

    import urllib3
    from kubernetes import client

    import gpu_finops.clients.kube as kube_mod
    from gpu_finops.diagnose.cli_diagnose import Unreachable, kube_call

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        cfg = client.Configuration()
        cfg.host = f"http://127.0.0.1:{server.getsockname()[1]}"
        cfg.retries = False
        monkeypatch.setattr(kube_mod, "RAW_TIMEOUT", (2.0, 0.5))
        kube = kube_mod.Kube(client.ApiClient(cfg))
        t = time.monotonic()
        with pytest.raises(urllib3.exceptions.ReadTimeoutError):
            kube.get_raw("/apis/visibility.kueue.x-k8s.io/v1beta2/x")
        assert time.monotonic() - t < 5
        with pytest.raises(Unreachable, match="Kubernetes API unreachable"):
            kube_call(kube.get_raw, "/x")
    finally:
        server.close()
