"""Record Workloads and their Jobs' pods over time, for claims about windows and overlaps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from assertions.observed import Interval, PodObs, WorkloadObs, WorkloadSnapshot
from gpu_finops.clients.kube import Kube
from harness.observe import job_of, job_pods, snapshot, workloads

# (namespace, pod, node) -> the device ids its containers were given (acts.targets.pod_devices)
DeviceReader = Callable[[str, str, str], tuple[str, ...]]


def merge(before: PodObs | None, now: PodObs) -> PodObs:
    """Keep the earliest Running start seen (a terminated status may restate startedAt, kwok does), and the
    devices and disruption once seen (a deleted pod's last status may lack them)."""
    if before is not None:
        if not now.devices and before.devices:
            now = replace(now, devices=before.devices)
        if now.disruption is None and before.disruption is not None:
            now = replace(now, disruption=before.disruption, evicted=True)
    if before is None or before.running is None or now.running is None:
        return now if now.running is not None or before is None else replace(now, running=before.running)
    start = min(before.running.start, now.running.start)
    return replace(now, running=Interval(start, now.running.end))


def mark_gone(seen: dict[str, PodObs], listed: set[str], now: datetime) -> None:
    """A pod seen before and no longer listed was deleted: say so once (its last status may be a Running one
    whose end was never seen; PodObs.not_its_own_end reads it)."""
    for name, p in seen.items():
        if name not in listed and p.gone_at is None:
            seen[name] = replace(p, gone_at=now)


def with_devices(p: PodObs, namespace: str, devices: DeviceReader | None) -> PodObs:
    """Read a Running pod's devices once (the kubelet assigns them at admission and never changes them)."""
    if devices is None or p.devices or p.phase != "Running" or not p.node:
        return p
    try:
        return replace(p, devices=devices(namespace, p.name, p.node))
    except Exception:  # not readable yet (log empty, API hiccup): read again next time
        return p


class WorkloadRecorder:
    def __init__(self, kube: Kube, namespaces: dict[str, str], devices: DeviceReader | None = None):
        self.kube = kube
        self.devices = devices
        self.namespaces = namespaces  # tenant -> namespace
        self.snaps: dict[str, list[WorkloadSnapshot]] = {}
        self.tenant: dict[str, str] = {}
        self.priority: dict[str, str | None] = {}
        self.priority_value: dict[str, int | None] = {}
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
                self.priority_value[name] = (wl.get("spec") or {}).get("priority")
                self.snaps.setdefault(name, []).append(
                    snapshot(wl, now, bool(job.spec.suspend) if job is not None else None)
                )
                if job_name:
                    seen = self.pods.setdefault(name, {})
                    listed = job_pods(self.kube, ns, job_name)
                    for p in listed:
                        seen[p.name] = with_devices(merge(seen.get(p.name), p), ns, self.devices)
                    mark_gone(seen, {p.name for p in listed}, now)
        return self.workloads()

    def workloads(self) -> list[WorkloadObs]:
        return [
            WorkloadObs(
                name,
                self.tenant[name],
                self.priority.get(name),
                self.priority_value.get(name),
                tuple(snaps),
                tuple(self.pods.get(name, {}).values()),
                self.job.get(name) or None,
            )
            for name, snaps in self.snaps.items()
        ]

    def by_job(self, job: str) -> WorkloadObs | None:
        return next((w for w in self.workloads() if self.job.get(w.name) == job), None)


class PodRecorder:
    """Every pod of one Job seen over time, kept after the pod is gone (an evicted pod is deleted)."""

    def __init__(self, kube: Kube, namespace: str, job: str, devices: DeviceReader | None = None):
        self.kube, self.namespace, self.job, self.devices = kube, namespace, job, devices
        self.seen: dict[str, PodObs] = {}

    def observe(self) -> list[PodObs]:
        now = datetime.now(UTC)
        listed = job_pods(self.kube, self.namespace, self.job)
        for p in listed:
            self.seen[p.name] = with_devices(merge(self.seen.get(p.name), p), self.namespace, self.devices)
        mark_gone(self.seen, {p.name for p in listed}, now)
        return list(self.seen.values())
