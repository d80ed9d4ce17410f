"""The trace's Jobs submitted on the wall clock from a small pool of threads, so that the twin's own client
keeps up with the trace.

One create is a round trip through the API server, Kueue's Job webhooks and etcd, about 260 ms on the
loaded 2-core machine when the twin submitted 3.8 Jobs a second one request after another
(docs/benchmarks.md), and the client itself spends little of it: building the request and decoding the
answer into the client's V1Job model take about 0.7 ms of CPU (`json.loads` alone 0.03 ms; measured on a
2.3 kB answer shaped as the API server's, docs/twin.md). So the sequential loop was waiting, and the pool
overlaps the waits: each Job is handed to it when due and its threads send the creates side by side. The
answer is read as JSON for the Job's uid only, which spares the model anyway.

Every submission records its lag (the wall seconds from its due time to the moment its create was sent),
so a run says whether the twin kept to the trace's clock; the wait of a Job is measured from the moment
its create was sent, as before.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

# Threads that send creates. The Kubernetes client's connection pool holds 5 per CPU (10 here), three of
# which the observer's watches keep open: more threads would open and discard connections.
WORKERS = 6


@dataclass
class Submitter:
    """Sends each Job's create when handed it; `submitted` and `lag` are filled as the creates are sent."""

    kube: Any
    on_created: Callable[[str], None]  # called with each created Job's uid
    workers: int = WORKERS
    clock: Callable[[], float] = time.time
    submitted: dict[str, float] = field(default_factory=dict)  # Job name -> wall time its create was sent
    lag: dict[str, float] = field(default_factory=dict)  # Job name -> seconds its create was sent after due
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _pool: ThreadPoolExecutor | None = None
    _futures: list[Future[None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="twin-submit")

    def submit(self, namespace: str, body: dict[str, Any], due: float) -> None:
        assert self._pool is not None
        self._futures.append(self._pool.submit(self._create, namespace, body, due))

    def _create(self, namespace: str, body: dict[str, Any], due: float) -> None:
        name = body["metadata"]["name"]
        sent = self.clock()
        try:
            resp = self.kube.batch.create_namespaced_job(namespace, body, _preload_content=False)
            uid = json.loads(resp.data)["metadata"]["uid"]
        except Exception as exc:  # the run stops on it (replay checks `errors`), naming the Job
            with self.lock:
                self.errors.append(f"creating Job {namespace}/{name}: {type(exc).__name__}: {str(exc)[:300]}")
            return
        with self.lock:
            self.submitted[name] = sent
            self.lag[name] = max(sent - due, 0.0)
        self.on_created(uid)

    def pending(self) -> int:
        """Jobs handed over whose create has not returned yet."""
        return sum(1 for f in self._futures if not f.done())

    def close(self) -> None:
        """Wait for every create handed over (then no more may be)."""
        assert self._pool is not None
        self._pool.shutdown(wait=True)

    def abort(self) -> None:
        """Drop the creates not yet sent (a run that stops); those in flight finish."""
        assert self._pool is not None
        self._pool.shutdown(wait=False, cancel_futures=True)

    def lag_summary(self) -> dict[str, float | int | None]:
        """Wall seconds between each Job's due time and its create being sent: how far the twin's client
        was behind the trace's clock."""
        with self.lock:
            lags = sorted(self.lag.values())
        if not lags:
            return {"jobs": 0, "mean_s": None, "p95_s": None, "max_s": None}
        return {
            "jobs": len(lags),
            "mean_s": round(sum(lags) / len(lags), 3),
            "p95_s": round(lags[min(len(lags) - 1, int(0.95 * len(lags)))], 3),
            "max_s": round(lags[-1], 3),
        }
