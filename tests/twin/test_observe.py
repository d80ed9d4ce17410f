"""The observer reads Kueue Workloads as Kueue v0.19 (v1beta2) writes them: the first QuotaReserved, each
eviction once, preemptions by reason, requeues only after an eviction; pods' start and end."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace as NS

from twin.observe import Observer


def _observer(clock: list[float]) -> Observer:
    return Observer(None, ("team-a",), "run", "r1", lambda p: 2, "class", "profile", clock=lambda: clock[0])


def _workload(*conditions: tuple[str, str, str, str]) -> dict:
    return {
        "metadata": {
            "namespace": "team-a",
            "name": "job-train-1-abcde",
            "creationTimestamp": "2026-12-02T04:00:00Z",
            "ownerReferences": [{"kind": "Job", "name": "train-1", "uid": "uid-1"}],
        },
        "status": {
            "conditions": [
                {"type": t, "status": s, "reason": r, "lastTransitionTime": at} for t, s, r, at in conditions
            ]
        },
    }


def test_first_admission_and_each_preemption_once() -> None:
    clock = [100.0]
    obs = _observer(clock)
    obs.on_workload(_workload())
    clock[0] = 105.0
    obs.on_workload(_workload(("QuotaReserved", "True", "QuotaReserved", "2026-12-02T04:00:05Z")))
    clock[0] = 110.0  # preempted: evicted, quota released, requeued
    preempted = (
        ("QuotaReserved", "False", "Pending", "2026-12-02T04:00:10Z"),
        ("Evicted", "True", "Preempted", "2026-12-02T04:00:10Z"),
        ("Requeued", "True", "Preempted", "2026-12-02T04:00:10Z"),
    )
    obs.on_workload(_workload(*preempted))
    obs.on_workload(_workload(*preempted))  # the same state seen again (a relist): counted once
    clock[0] = 120.0  # admitted again, then finished
    obs.on_workload(
        _workload(
            ("QuotaReserved", "True", "QuotaReserved", "2026-12-02T04:00:20Z"),
            ("Evicted", "False", "Preempted", "2026-12-02T04:00:20Z"),
            ("Finished", "True", "Succeeded", "2026-12-02T04:00:50Z"),
        )
    )
    w = obs.workloads["team-a/job-train-1-abcde"]
    assert (w.job, w.job_uid, w.first_seen, w.reserved, w.finished) == (
        "train-1",
        "uid-1",
        100.0,
        105.0,
        120.0,
    )
    assert (
        w.reserved_condition == datetime(2026, 12, 2, 4, 0, 5, tzinfo=UTC).timestamp()
    )  # the condition's own
    assert (len(w.evictions), len(w.preemptions), len(w.requeues)) == (1, 1, 1)


def test_an_eviction_that_is_no_preemption_is_not_counted_as_one() -> None:
    obs = _observer([0.0])
    obs.on_workload(_workload(("Evicted", "True", "PodsReadyTimeout", "2026-12-02T04:00:10Z")))
    w = obs.workloads["team-a/job-train-1-abcde"]
    assert (len(w.evictions), len(w.preemptions)) == (1, 0)


def test_a_requeue_without_an_eviction_is_not_counted() -> None:
    obs = _observer([0.0])
    obs.on_workload(_workload(("Requeued", "True", "Pending", "2026-12-02T04:00:10Z")))
    assert not obs.workloads["team-a/job-train-1-abcde"].requeues


def _pod(phase: str, node: str | None, deleting: bool = False) -> NS:
    meta = NS(namespace="team-a", name="train-1-x", owner_references=[NS(kind="Job", name="train-1")],
              labels={"class": "training-stepping"}, annotations={"profile": "training-stepping"},
              deletion_timestamp="now" if deleting else None)  # fmt: skip
    return NS(metadata=meta, spec=NS(node_name=node), status=NS(phase=phase))


def test_a_pods_run_is_from_running_to_its_end() -> None:
    clock = [1.0]
    obs = _observer(clock)
    obs.on_pod(_pod("Pending", None))
    clock[0] = 2.0
    obs.on_pod(_pod("Running", "n1"))
    clock[0] = 3.0
    obs.on_pod(_pod("Running", "n1"))
    clock[0] = 9.0
    obs.on_pod(_pod("Succeeded", "n1"))
    p = obs.pods["team-a/train-1-x"]
    assert (p.node, p.running, p.ended, p.gpus, p.job, p.workload_class) == (
        "n1",
        2.0,
        9.0,
        2,
        "train-1",
        "training-stepping",
    )


class _Resp:
    def __init__(self, events: list[dict]):
        self.lines = "".join(json.dumps(e) + "\n" for e in events).encode()

    def stream(self, amt=None, decode_content=False):
        yield self.lines

    def close(self):
        pass

    def release_conn(self):
        pass


def test_each_watch_resumes_from_the_last_version_and_begins_afresh_after_410():
    """Without a resourceVersion a watch first replays every object as ADDED: at fleet size thousands of pods
    and nodes decoded again at every 30 s stream. Bookmarks are not events; 410 Gone starts from a fresh list."""
    from kubernetes.client.exceptions import ApiException

    obs = _observer([0.0])
    calls, seen = [], []

    def list_things(**kw):
        """:rtype: object"""
        calls.append({k: v for k, v in kw.items() if k in ("resource_version", "allow_watch_bookmarks")})
        if len(calls) == 1:
            return _Resp([
                {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "5"}}},
                {"type": "MODIFIED", "object": {"metadata": {"name": "a", "resourceVersion": "7"}}},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}},
            ])  # fmt: skip
        if len(calls) == 2:
            raise ApiException(status=410, reason="Gone: too old resource version")
        obs._stop.set()
        return _Resp([])

    obs._loop("things", list_things, lambda o, kind: seen.append((kind, o["metadata"]["name"])))
    assert seen == [("ADDED", "a"), ("MODIFIED", "a")]  # the bookmark is no event
    assert calls == [
        {"allow_watch_bookmarks": True},
        {"allow_watch_bookmarks": True, "resource_version": "9"},  # resumed after the bookmark
        {"allow_watch_bookmarks": True},  # 410: afresh
    ]
    assert len(obs.errors) == 1 and "410" in obs.errors[0]
