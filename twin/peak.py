"""`diagnose --all` at the peak: the product's own diagnosis (gpu_finops/diagnose/engine.py over gpu_finops/diagnose/read.py, as the
CLI and act 7 read the cluster) run when the number of waiting workloads reaches a new high, at most once per
`every` wall seconds; the last run is the one at the peak. Its summary: how many waiting pods and workloads
each first cause explains. DCGM statistics come from the Prometheus at `prometheus_url` (the local target's,
which scrapes the GPU simulator's exporter, as `gpu-finops twin run` passes it); without one the diagnosis
says they were not read (`dcgm`), as the CLI would."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

NO_PROMETHEUS = (
    "http://127.0.0.1:9"  # the discard port: nothing answers, so the diagnosis says DCGM was not read
)


@dataclass
class PeakDiagnosis:
    kube: Any
    prometheus_url: str = NO_PROMETHEUS
    every: float = 15.0
    best: int = 0
    last: float = 0.0
    result: dict[str, Any] = field(default_factory=dict)

    def maybe(self, pending: int, trace_hours: float) -> None:
        if pending <= self.best or time.monotonic() - self.last < self.every:
            return
        from gpu_finops.diagnose.engine import diagnose_all
        from gpu_finops.diagnose.kube_observer import KubeObserver
        from gpu_finops.diagnose.read import read_cluster

        self.best, self.last = pending, time.monotonic()
        started = time.monotonic()
        pods, cluster = read_cluster(KubeObserver(self.kube), self.prometheus_url, 300, retry_for=0)
        diagnoses = diagnose_all(pods, cluster)
        self.result = {
            "pending": pending,
            "at_trace_hours": trace_hours,
            "diagnosed": len(diagnoses),
            "first_causes": dict(Counter(d.first_cause or "none" for d in diagnoses)),
            "dcgm": "read" if cluster.stats is not None else f"not read: {cluster.stats_unavailable}",
            "seconds": time.monotonic() - started,
        }
