"""The twin's submitter: creates sent side by side when due, each one's lag behind the trace's clock
recorded, the Job's uid read from the raw response, a refusal kept with the Job's name."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace as NS

from twin.submit import Submitter


class FakeBatch:
    def __init__(self, seconds: float, refuse: str | None = None):
        self.seconds, self.refuse = seconds, refuse
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0
        self.kwargs: list[dict] = []

    def create_namespaced_job(self, namespace, body, **kw):
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.kwargs.append(kw)
        try:
            time.sleep(self.seconds)
            if body["metadata"]["name"] == self.refuse:
                raise RuntimeError("(422) Job.batch is invalid")
            return NS(data=json.dumps({"metadata": {"uid": f"uid-{body['metadata']['name']}"}}).encode())
        finally:
            with self.lock:
                self.in_flight -= 1


def job(name: str) -> dict:
    return {"metadata": {"name": name}}


def test_creates_go_side_by_side_and_each_uid_is_handed_on():
    batch, uids = FakeBatch(0.05), []
    s = Submitter(NS(batch=batch), on_created=uids.append, workers=4)
    t0 = time.monotonic()
    for i in range(20):
        s.submit("team-a", job(f"j{i}"), due=time.time())
    s.close()
    took = time.monotonic() - t0
    assert batch.most_in_flight == 4  # never more than the pool's threads
    assert took < 20 * 0.05 / 2, took  # one after another would take 1 s
    assert sorted(uids) == sorted(f"uid-j{i}" for i in range(20)) and len(s.submitted) == 20
    assert all(kw == {"_preload_content": False} for kw in batch.kwargs)  # no model deserialisation
    summary = s.lag_summary()
    assert summary["jobs"] == 20 and 0 <= summary["mean_s"] <= summary["p95_s"] <= summary["max_s"] < 1.0


def test_lag_is_the_wait_past_the_due_time_and_never_negative():
    clock = iter([105.0, 99.0])
    s = Submitter(NS(batch=FakeBatch(0)), on_created=lambda uid: None, workers=1, clock=lambda: next(clock))
    s.submit("ns", job("late"), due=100.0)
    s.submit("ns", job("early"), due=100.0)
    s.close()
    assert s.lag == {"late": 5.0, "early": 0.0}
    assert s.lag_summary() == {"jobs": 2, "mean_s": 2.5, "p95_s": 5.0, "max_s": 5.0}


def test_a_refused_create_is_kept_with_the_jobs_name_and_not_counted_as_submitted():
    s = Submitter(NS(batch=FakeBatch(0, refuse="bad")), on_created=lambda uid: None, workers=2)
    s.submit("team-b", job("good"), due=time.time())
    s.submit("team-b", job("bad"), due=time.time())
    s.close()
    assert list(s.submitted) == ["good"]
    (error,) = s.errors
    assert error.startswith("creating Job team-b/bad: RuntimeError: (422) Job.batch is invalid")


def test_no_lag_figures_without_jobs():
    s = Submitter(NS(batch=FakeBatch(0)), on_created=lambda uid: None)
    s.close()
    assert s.lag_summary() == {"jobs": 0, "mean_s": None, "p95_s": None, "max_s": None}
