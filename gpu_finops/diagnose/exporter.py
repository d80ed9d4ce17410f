"""`gpu-finops diagnose --all --port`: the pending-GPU-pod diagnosis every interval, as a gauge by cause.

Each cycle lists the pending pods once (`status.phase=Pending`, one call whatever the fleet size). Only
when a GPU pod is among them does it read the rest of what the diagnosis needs (the cluster read
`diagnose --all` makes: nodes, GPU holders, Kueue workloads, events, DCGM over the window) and diagnose
each pending GPU pod. It serves, atomically per scrape, the last cycle's counts:

- `gpu_finops_pending_gpu_pods{cause, namespace}`: pending GPU pods by the first cause and namespace.
  Whenever the list was read, every cause also has a series with namespace "" and value 0, so "nothing
  waits" is a reading; when the diagnosis could not run there is no pending series at all, never a 0.
- `gpu_finops_diagnosis_healthy`: 1 when the last cycle diagnosed every pending GPU pod with every check
  made; 0 otherwise, /healthz 503 naming why (Kubernetes unreadable; Prometheus unreadable, so memory and
  application were not checked: the counts are served, with the causes they could reach).
- `gpu_finops_diagnosis_last_run_timestamp_seconds`: when the pending pods were last listed.

Unadmitted Kueue workloads whose Job has no pod yet are not pods; `diagnose --all` lists them.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric

from gpu_finops.diagnose.engine import diagnose_pod, why_not_diagnosable
from gpu_finops.diagnose.model import ORDER, Cluster, Diagnosis, PodFacts
from gpu_finops.facts import collector_metrics as names
from gpu_finops.facts.errors import failure_line

log = logging.getLogger(__name__)

UNEXPLAINED = "unexplained"  # every check was made and none explains the wait
NOT_CHECKED = "not-checked"  # none of the checks made explains it, and some could not be made
CAUSES: tuple[str, ...] = (*ORDER, UNEXPLAINED, NOT_CHECKED)
PENDING_SELECTOR = "status.phase=Pending"


def cause_of(d: Diagnosis) -> str:
    """The diagnosis' first cause, else `unexplained` (all checks made) or `not-checked`."""
    if d.first_cause:
        return d.first_cause
    return NOT_CHECKED if d.not_checked else UNEXPLAINED


@dataclass(frozen=True)
class Reading:
    """One cycle: counts by (cause, namespace), or None when the pending pods could not be diagnosed."""

    counts: dict[tuple[str, str], int] | None
    problems: tuple[str, ...] = ()
    at: float | None = None  # when the pending pods were listed (unix seconds)
    diagnoses: tuple[Diagnosis, ...] = field(default=(), compare=False)


def count_by_cause(diagnoses: Iterable[Diagnosis]) -> dict[tuple[str, str], int]:
    return dict(Counter((cause_of(d), d.target.split("/", 1)[0]) for d in diagnoses))


def read_once(
    list_pending: Callable[[], list[PodFacts]],
    read_cluster: Callable[[], tuple[list[PodFacts], Cluster]],
    now: Callable[[], float] = time.time,
) -> Reading:
    """List the pending pods; when a GPU pod waits, read the cluster and diagnose each pending GPU pod.
    A read that fails is a Reading without counts that says which read and why."""
    try:
        pending = list_pending()
    except Exception as exc:  # any failure to read is reported, not a count of zero
        log.warning("the pending pods could not be listed: %s", failure_line(exc))
        log.debug("the pending pods could not be listed", exc_info=True)
        return Reading(None, (f"the pending pods could not be listed from Kubernetes: {exc}",))
    at = now()
    if not any(why_not_diagnosable(p) is None for p in pending):
        return Reading({}, (), at)
    try:
        pods, cluster = read_cluster()
    except Exception as exc:
        log.warning("the cluster read for the diagnosis failed: %s", failure_line(exc))
        log.debug("the cluster read for the diagnosis failed", exc_info=True)
        return Reading(None, (f"{len(pending)} pending pod(s) listed, but the cluster read failed: {exc}",))
    diagnoses = tuple(diagnose_pod(p, cluster) for p in pods if why_not_diagnosable(p) is None)
    problems: tuple[str, ...] = ()
    if cluster.stats is None:
        problems = (
            f"DCGM not read ({cluster.stats_unavailable}): memory and application not checked for "
            f"{len(diagnoses)} pending GPU pod(s)",
        )
    return Reading(count_by_cause(diagnoses), problems, at, diagnoses)


class DiagnosisMetrics:
    """The last Reading as Prometheus series; a scrape sees one whole cycle, never half of one."""

    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        self.reading = Reading(None, ("no diagnosis cycle has completed yet",))
        self.registry.register(self)

    @property
    def problems(self) -> list[str]:
        return list(self.reading.problems)

    def collect(self) -> Iterator[Metric]:
        reading = self.reading
        healthy = GaugeMetricFamily(
            names.DIAGNOSIS_HEALTHY, "1 when the last cycle diagnosed every pending GPU pod fully"
        )
        healthy.add_metric([], 0 if reading.problems else 1)
        yield healthy
        if reading.at is not None:
            yield GaugeMetricFamily(
                names.DIAGNOSIS_LAST_RUN, "When the pending pods were last listed (unix seconds)", reading.at
            )
        if reading.counts is None:
            return
        pending = GaugeMetricFamily(
            names.PENDING_GPU_PODS,
            'Pending GPU pods by the diagnosis\' first cause; namespace="": the fleet-wide 0 of a read list',
            labels=["cause", "namespace"],
        )
        for cause in CAUSES:
            pending.add_metric([cause, ""], 0)
        for (cause, namespace), n in sorted(reading.counts.items()):
            pending.add_metric([cause, namespace], n)
        yield pending


def kube_pending(observer: Any, kube_call: Callable[..., Any]) -> Callable[[], list[PodFacts]]:
    """The one list a cycle makes when nothing waits: pending pods in every namespace."""
    from gpu_finops.diagnose.kube_observer import pod_facts

    def list_pending() -> list[PodFacts]:
        core = observer.kube.core
        items = kube_call(core.list_pod_for_all_namespaces, field_selector=PENDING_SELECTOR).items
        return [pod_facts(p) for p in items]

    return list_pending


def run_forever(
    metrics: DiagnosisMetrics,
    list_pending: Callable[[], list[PodFacts]],
    read_cluster: Callable[[], tuple[list[PodFacts], Cluster]],
    interval: float,
    stop: Callable[[], bool] = lambda: False,
) -> None:
    """A cycle every `interval` seconds until `stop()`; each line of the log says what it found."""
    while not stop():
        started = time.monotonic()
        metrics.reading = reading = read_once(list_pending, read_cluster)
        if reading.counts is not None:
            waiting = ", ".join(f"{c} {ns}: {n}" for (c, ns), n in sorted(reading.counts.items()))
            log.info("pending GPU pods by cause: %s", waiting or "none")
        for problem in reading.problems:
            log.warning("%s", problem)
        while not stop() and time.monotonic() - started < interval:
            time.sleep(min(1.0, interval))
