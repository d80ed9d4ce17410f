"""Kueue's own signals in the admission step, replayed from what the real Kueue v0.19.2 answered on the local
target (tests/gpu_finops/diagnose/recorded/, written by tests/gpu_finops/diagnose/record_kueue_signals.py): each path where it holds
(a position and a ranked reason quoted) and where it breaks (API not served, forbidden, empty list, workload not
in the list, gates off, unknown LocalQueue), each said as `fallback: <why>` before our own derivation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_finops.diagnose import kueue_visibility as kv
from gpu_finops.diagnose.admission import check_admission
from gpu_finops.diagnose.engine import diagnose_workload
from gpu_finops.diagnose.kube_observer import workload_facts
from gpu_finops.diagnose.model import ADMISSION, Cluster, KueueSignals, WorkloadFacts
from gpu_finops.diagnose.owners import owner
from gpu_finops.diagnose.view import build_view

RECORDED = Path(__file__).with_name("recorded")
NS = "kueue-signals"  # the recorder writes its random namespace as this


def recording(stem: str) -> dict:
    return json.loads((RECORDED / f"{stem}.json").read_text())


class Replay:
    """A `Get` that answers from a recording and remembers what was asked."""

    def __init__(self, doc: dict):
        self.answers = doc["answers"]
        self.asked: list[str] = []

    def __call__(self, path: str) -> tuple[int, str]:
        self.asked.append(path)
        if path not in self.answers:
            raise AssertionError(f"the recording has no answer for {path}; it holds {sorted(self.answers)}")
        a = self.answers[path]
        return a["status"], a["body"]


def facts(doc: dict, job: str) -> WorkloadFacts:
    """The recorded Workload of Job `job`, as the observer reads it (the Job suspended: Kueue holds it)."""
    (w,) = [w for w in doc["workloads"] if owner(w, "Job") == job]
    return workload_facts(w, job_suspended=True)


def signals(doc: dict, *jobs: str) -> tuple[dict[str, KueueSignals], Replay]:
    get = Replay(doc)
    return kv.read_signals(get, [facts(doc, j) for j in jobs]), get


def admission(doc: dict, job: str, sig: KueueSignals | None):
    from dataclasses import replace

    w = replace(facts(doc, job), kueue=sig)
    d = diagnose_workload(w, Cluster())
    return d.finding(ADMISSION)


def test_the_recordings_are_kueue_v0_19_2s_answers():
    from local.build import versions

    for stem in ("served", "forbidden", "not_served", "gates_off"):
        assert recording(stem)["kueue"] == versions.KUEUE == "v0.19.2", stem


# --- where it holds --------------------------------------------------------------------------------------
def test_served_positions_and_ranked_reasons_are_quoted_first():
    doc = recording("served")
    sig, _ = signals(doc, "second", "third")
    second, third = (sig[facts(doc, j).key].position for j in ("second", "third"))
    assert second is not None and third is not None
    assert (second.cluster_queue, second.local_queue) == (NS, "main")
    assert (second.in_cluster_queue, second.in_local_queue) == (0, 0)
    assert (third.in_cluster_queue, third.in_local_queue) == (1, 1)
    assert third.api == "visibility.kueue.x-k8s.io/v1beta2" and third.cluster_queue_unknown is None
    f = admission(doc, "second", sig[facts(doc, "second").key])
    assert f.explains is True
    assert f.summary.startswith(
        f"Kueue: position 1 in ClusterQueue {NS} (0 ahead of it), 1 in LocalQueue main, priority 0 "
        "(visibility.kueue.x-k8s.io/v1beta2); Kueue: reason WaitingForQuota: couldn't assign flavors to pod set "
        "main: insufficient unused quota for nvidia.com/gpu"
    ), f.summary
    assert "; Kueue has not admitted workload " in f.summary  # our own derivation follows
    assert {f"kueue-position:{NS}:1", "kueue-reason:WaitingForQuota", "QuotaReserved=False"} <= set(
        f.key_evidence
    ), f.key_evidence
    assert f.evidence["kueue"]["position"]["in_cluster_queue"] == 0
    # third: Kueue v0.19.2 skipped it as equivalent to second and wrote no QuotaReserved condition (no
    # UnadmittedWorkloadsExplicitStatus): its position is quoted, its reason is a stated fallback
    f = admission(doc, "third", sig[facts(doc, "third").key])
    assert f.summary.startswith(
        f"Kueue: position 2 in ClusterQueue {NS} (1 ahead of it), 2 in LocalQueue main, priority 0 "
        "(visibility.kueue.x-k8s.io/v1beta2); fallback: no reason from Kueue: the Workload has no "
        "QuotaReserved condition yet"
    ), f.summary
    assert {f"kueue-position:{NS}:2", "kueue-fallback:reason", "QuotaReserved=unset"} <= set(f.key_evidence)


def test_one_pendingworkloads_read_and_one_localqueue_read_per_localqueue():
    doc = recording("served")
    _, get = signals(doc, "second", "third", "too-big")
    assert get.asked == [kv.pending_path("v1beta2", NS, "main"), kv.local_queue_path(NS, "main")]


def test_exceeds_max_quota_is_quoted_with_its_own_next_action():
    doc = recording("served")
    sig, _ = signals(doc, "too-big")
    f = admission(doc, "too-big", sig[facts(doc, "too-big").key])
    assert "Kueue: reason ExceedsMaxQuota" in f.summary and "kueue-reason:ExceedsMaxQuota" in f.key_evidence
    assert f.next_action.startswith("the workload asks more than its ClusterQueue can ever give")
    assert f.summary.startswith(
        "Kueue: position "
    )  # an inadmissible workload is still listed, with its place


def test_a_localqueue_kueue_does_not_know_is_said_with_kueues_misconfigured_reason():
    doc = recording("served")
    sig, _ = signals(doc, "lost")
    f = admission(doc, "lost", sig[facts(doc, "lost").key])
    assert f.summary.startswith(
        "fallback: no queue position from Kueue: visibility.kueue.x-k8s.io/v1beta2 does not know LocalQueue "
        f"{NS}/nope"
    ), f.summary
    assert "Kueue: reason Misconfigured: LocalQueue nope doesn't exist" in f.summary
    assert f.next_action == "its LocalQueue or ClusterQueue is missing or invalid: fix the queue"


# --- where it breaks -------------------------------------------------------------------------------------
def test_empty_list_is_a_fallback_naming_the_queue():
    doc = recording("served")
    w = facts(doc, "second")
    from dataclasses import replace

    idle = replace(w, queue="idle")  # the recorded answer of LocalQueue idle, which holds no workload
    (sig,) = kv.read_signals(Replay(doc), [idle]).values()
    assert sig.position is None
    assert sig.fallback == (
        "visibility.kueue.x-k8s.io/v1beta2 lists no pending workload in LocalQueue "
        f"{NS}/idle: Kueue does not queue it now (it left the queue between the reads, is inactive, or its "
        "queue is stopped)"
    )


def test_workload_not_in_the_list_is_a_fallback_naming_who_is_listed():
    doc = recording("served")
    sig, _ = signals(doc, "off")  # deactivated (spec.active false): Kueue drops it from its queue
    (s,) = sig.values()
    assert s.position is None and " pending workload(s) (" in (s.fallback or "")
    assert "and not this one in LocalQueue kueue-signals/main" in (s.fallback or ""), s.fallback
    f = admission(doc, "off", s)
    assert f.summary.startswith("fallback: no queue position from Kueue: ")
    assert "kueue-fallback:position" in f.key_evidence


def test_forbidden_is_a_fallback_naming_the_permission():
    doc = recording("forbidden")
    sig, get = signals(doc, "third")
    (s,) = sig.values()
    assert s.position is None
    assert s.fallback.startswith("forbidden: visibility.kueue.x-k8s.io/v1beta2 answered 403 (")  # type: ignore[union-attr]
    assert 'cannot get resource "localqueues/pendingworkloads"' in s.fallback  # type: ignore[operator]
    assert s.fallback.endswith(  # type: ignore[union-attr]
        "grant get on localqueues/pendingworkloads in visibility.kueue.x-k8s.io to whoever runs the diagnosis"
    )
    assert get.asked == [kv.pending_path("v1beta2", NS, "main")]  # no LocalQueue read without a position


def test_not_served_tries_both_versions_then_says_the_api_is_not_registered():
    doc = recording("not_served")
    sig, get = signals(doc, "third")
    (s,) = sig.values()
    assert get.asked == [kv.pending_path("v1beta2", NS, "main"), kv.pending_path("v1beta1", NS, "main")]
    assert s.position is None
    assert s.fallback.startswith(  # type: ignore[union-attr]
        "the API server does not serve visibility.kueue.x-k8s.io (v1beta2: 404 404 page not found; v1beta1: 404"
    ), s.fallback
    assert "VisibilityOnDemand off" in s.fallback  # type: ignore[operator]


def test_gates_off_is_a_503_fallback_and_the_legacy_reason_names_the_gate():
    doc = recording("gates_off")
    sig, _ = signals(doc, "second")
    (s,) = sig.values()
    assert s.position is None
    assert s.fallback.startswith(  # type: ignore[union-attr]
        "visibility.kueue.x-k8s.io/v1beta2 is registered but its server does not answer (503: "
    ), s.fallback
    assert "the VisibilityOnDemand feature gate off" in s.fallback  # type: ignore[operator]
    f = admission(doc, "second", s)
    assert (
        "fallback: no ranked reason from Kueue: QuotaReserved reason is the legacy 'Pending' (Kueue runs with the "
        "UnadmittedWorkloadsObservability feature gate off; KEP-10852's reasons need it on)"
    ) in f.summary, f.summary
    assert "kueue-reason:Pending" not in f.key_evidence and "kueue-fallback:reason" in f.key_evidence
    # our own derivation, as before Kueue said anything of its own
    assert "Kueue has not admitted workload " in f.summary and "QuotaReserved False (Pending)" in f.summary


# --- shapes Kueue did not give us, and inputs we build ----------------------------------------------------
@pytest.mark.parametrize(
    "answer, says",
    [
        ((200, "{}"), "answered 200 without an items list"),
        ((200, "not json"), "answered 200 without an items list"),
        ((500, '{"message": "boom"}'), "answered 500: boom"),
        ((401, ""), "forbidden: visibility.kueue.x-k8s.io/v1beta2 answered 401 ((empty body))"),
    ],
)
def test_other_answers_are_fallbacks_that_quote_them(answer, says):
    w = WorkloadFacts("ns", "wl", queue="q", job_suspended=True)
    (s,) = kv.read_signals(lambda _path: answer, [w]).values()
    assert s.position is None and says in (s.fallback or ""), s.fallback


def test_an_item_without_its_positions_is_a_fallback_naming_the_fields():
    items = {"items": [{"metadata": {"name": "wl", "namespace": "ns"}, "priority": 0}]}
    w = WorkloadFacts("ns", "wl", queue="q", job_suspended=True)
    answers = {kv.pending_path("v1beta2", "ns", "q"): (200, json.dumps(items))}
    (s,) = kv.read_signals(lambda p: answers.get(p, (404, "")), [w]).values()
    assert s.fallback == (
        "visibility.kueue.x-k8s.io/v1beta2 lists ns/wl in LocalQueue ns/q without positionInClusterQueue, "
        "positionInLocalQueue"
    )


def test_unread_localqueue_keeps_the_position_and_says_why_the_clusterqueue_is_unknown():
    items = {
        "items": [
            {
                "metadata": {"name": "wl", "namespace": "ns"},
                "priority": 5,
                "positionInClusterQueue": 3,
                "positionInLocalQueue": 0,
                "localQueueName": "q",
            }
        ]
    }
    w = WorkloadFacts("ns", "wl", queue="q", job_suspended=True)
    answers = {
        kv.pending_path("v1beta2", "ns", "q"): (200, json.dumps(items)),
        kv.local_queue_path("ns", "q"): (403, '{"message": "no"}'),
    }
    (s,) = kv.read_signals(lambda p: answers[p], [w]).values()
    text, keys = kv.position_text(s)
    assert text.startswith(
        "Kueue: position 4 in ClusterQueue ? (LocalQueue ns/q not read (403: no)) (3 ahead"
    )
    assert keys == ("kueue-position:?:4",)


def test_no_queue_name_no_read_and_admitted_workloads_are_not_asked_about():
    nameless = WorkloadFacts("ns", "a", queue=None, job_suspended=True)
    admitted = WorkloadFacts(
        "ns",
        "b",
        queue="q",
        job_suspended=False,
        conditions={"Admitted": _cond("Admitted", "True", "Admitted")},
    )
    asked = []
    out = kv.read_signals(lambda p: asked.append(p) or (404, ""), [nameless, admitted])
    assert asked == [] and set(out) == {"ns/a"}
    assert (
        out["ns/a"].fallback
        == "the workload names no LocalQueue (spec.queueName unset), so no queue lists it"
    )


def _cond(t, status, reason, message=""):
    from gpu_finops.facts.conditions import Condition

    return Condition(t, status, reason, message)


def test_not_read_at_all_is_said_never_silent():
    w = WorkloadFacts(
        "ns",
        "wl",
        queue="q",
        job_suspended=True,
        conditions={"QuotaReserved": _cond("QuotaReserved", "False", "WaitingForQuota", "m")},
    )
    f = check_admission(build_view(w.pod_template or _template(), Cluster()), w)
    assert f.summary.startswith(
        "fallback: Kueue's visibility API was not read for it; Kueue: reason WaitingForQuota: m; "
    )


def _template():
    from gpu_finops.diagnose.model import GPU, PodFacts

    return PodFacts("ns", "wl", gpu_requests={GPU: 1})


@pytest.mark.parametrize(
    "conditions, said",
    [
        ({}, "fallback: no reason from Kueue: the Workload has no QuotaReserved condition yet"),
        (
            {
                "QuotaReserved": ("True", "QuotaReserved"),
                "Admitted": ("False", "UnsatisfiedAdmissionChecks"),
            },
            "Kueue: reason UnsatisfiedAdmissionChecks",
        ),
        (
            {"QuotaReserved": ("True", "QuotaReserved"), "Admitted": ("False", "UnsatisfiedChecks")},
            "fallback: no ranked reason from Kueue: Admitted reason is the legacy 'UnsatisfiedChecks'",
        ),
        (
            {"QuotaReserved": ("False", "AdmissionGated")},
            "Kueue: reason AdmissionGated (not one of KEP-10852's",
        ),
        ({"QuotaReserved": ("False", "Inadmissible")}, "the legacy 'Inadmissible'"),
    ],
)
def test_reason_text_for_each_condition_shape(conditions, said):
    w = WorkloadFacts(
        "ns", "wl", conditions={t: _cond(t, s, r) for t, (s, r) in conditions.items()}, job_suspended=True
    )
    text, _ = kv.reason_text(w)
    assert text.startswith(said) or said in text, text


def test_the_cli_reads_kueue_through_the_kubernetes_client_and_quotes_it(monkeypatch, capsys):
    """`gpu-finops diagnose --workload` end to end over a fake Kubernetes serving the recorded answers."""
    from gpu_finops.cli import main
    from gpu_finops.diagnose import cli_diagnose
    from tests.gpu_finops.diagnose import kube_shapes as ks

    doc = recording("served")
    kube = ks.FakeKube(
        workloads=doc["workloads"],
        jobs=[ks.job(owner(w, "Job"), NS, suspend=True) for w in doc["workloads"]],
        paths={path: (a["status"], a["body"]) for path, a in doc["answers"].items()},
    )
    monkeypatch.setattr(cli_diagnose, "kube_client", lambda _path: kube)
    monkeypatch.setattr("gpu_finops.diagnose.prom_observer.read_or_reason", lambda *a, **k: ([], None))
    third = facts(doc, "third").name
    assert main(["diagnose", "--workload", third, "-n", NS, "--json"]) == 0
    (d,) = json.loads(capsys.readouterr().out)["diagnoses"]
    (f,) = [f for f in d["findings"] if f["check"] == ADMISSION]
    assert f["summary"].startswith(f"Kueue: position 2 in ClusterQueue {NS} (1 ahead of it)"), f["summary"]
    assert f["evidence"]["kueue"]["position"]["cluster_queue"] == NS
