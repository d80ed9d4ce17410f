"""Record Workloads and their Jobs' pods over time, for claims about windows and overlaps."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from assertions.observed import Interval, PodObs, WorkloadObs, WorkloadSnapshot
from harness.kube import Kube
from harness.observe import job_of, job_pods, snapshot, workloads


def merge(before: PodObs | None, now: PodObs) -> PodObs:
    """Keep the earliest Running start seen: a terminated status may restate startedAt (kwok does)."""
    if before is None or before.running is None or now.running is None:
        return now if now.running is not None or before is None else replace(now, running=before.running)
    start = min(before.running.start, now.running.start)
    return replace(now, running=Interval(start, now.running.end))


class WorkloadRecorder:
    def __init__(self, kube: Kube, namespaces: dict[str, str]):
        self.kube = kube
        self.namespaces = namespaces  # tenant -> namespace
        self.snaps: dict[str, list[WorkloadSnapshot]] = {}
        self.tenant: dict[str, str] = {}
        self.priority: dict[str, str | None] = {}
        self.pods: dict[str, dict[str, PodObs]] = {}  # workload -> pod name -> last observation
        self.job: dict[str, str] = {}

    def observe(self) -> list[WorkloadObs]:
        now = datetime.now(UTC)
        for tenant, ns in self.namespaces.items():
            jobs = {j.metadata.name: j for j in self.kube.batch.list_namespaced_job(ns).items}
            for wl in workloads(self.kube, ns):
                name = wl["metadata"]["name"]
                job_name = job_of(wl)
                job = jobs.get(job_name or "")
                self.tenant[name] = tenant
                self.job[name] = job_name or ""
                self.priority[name] = (wl.get("spec") or {}).get("priorityClassName")
                self.snaps.setdefault(name, []).append(
                    snapshot(wl, now, bool(job.spec.suspend) if job is not None else None)
                )
                if job_name:
                    seen = self.pods.setdefault(name, {})
                    for p in job_pods(self.kube, ns, job_name):
                        seen[p.name] = merge(seen.get(p.name), p)
        return self.workloads()

    def workloads(self) -> list[WorkloadObs]:
        return [
            WorkloadObs(
                name,
                self.tenant[name],
                self.priority.get(name),
                tuple(snaps),
                tuple(self.pods.get(name, {}).values()),
            )
            for name, snaps in self.snaps.items()
        ]

    def by_job(self, job: str) -> WorkloadObs | None:
        return next((w for w in self.workloads() if self.job.get(w.name) == job), None)
