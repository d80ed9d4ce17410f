"""What the twin sees during a replay: Kueue Workloads, the pods of its Jobs and the GPU nodes, each through a
watch, timestamped on the wall clock as the events arrive.

Why watch rather than read the conditions afterwards: a condition's lastTransitionTime has one-second
resolution, which is a minute of trace time at compression 60, and a re-admitted Workload keeps only its
last transition. The conditions are still read: each observed transition is checked against its
lastTransitionTime (they must agree within the resolution plus the watch's delay), so the figures are
the Workload conditions' own, at the precision the watch adds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gpu_finops.facts.kube_keys import KUEUE_GROUP, KUEUE_VERSION
from gpu_finops.model.workload import (
    ADMITTED,
    EVICTED,
    EVICTED_BY_PREEMPTION,
    FINISHED,
    QUOTA_RESERVED,
    REQUEUED,
)

log = logging.getLogger(__name__)


@dataclass
class WorkloadSeen:
    """One Workload's life as observed: wall times (time.time()) of each first transition to True, and
    every eviction (by its condition's lastTransitionTime, so one eviction seen twice counts once)."""

    namespace: str
    name: str
    job: str
    job_uid: str
    created: float  # metadata.creationTimestamp (1 s resolution)
    first_seen: float
    reserved: float | None = None  # first QuotaReserved=True
    reserved_condition: float | None = None  # its lastTransitionTime
    admitted: float | None = None
    finished: float | None = None
    evictions: set[str] = field(default_factory=set)  # lastTransitionTime of each Evicted=True
    preemptions: set[str] = field(default_factory=set)  # ... of each Evicted=True with reason Preempted
    requeues: set[str] = field(default_factory=set)  # ... of each Requeued=True after an eviction


@dataclass
class PodSeen:
    namespace: str
    name: str
    job: str
    gpus: int
    workload_class: str
    profile: str
    node: str | None = None
    running: float | None = None
    ended: float | None = None


def _ts(text: str | None) -> float | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None


def _owner(meta: dict[str, Any], kind: str, field: str = "name") -> str:
    return next((o.get(field, "") for o in meta.get("ownerReferences") or [] if o.get("kind") == kind), "")


@dataclass
class Observer:
    """Keeps the latest of everything; `lock` guards it for the sampler."""

    kube: Any
    namespaces: tuple[str, ...]
    run_label: str
    run_id: str
    gpus_of: Callable[[dict[str, Any]], int]
    class_label: str
    profile_key: str
    clock: Callable[[], float] = time.time
    # the UIDs of this run's Jobs: a Workload of an earlier run's Job of the same name may still be there,
    # its Job deleted and the garbage collector not yet done; the readout keeps only this run's
    job_uids: set[str] = field(default_factory=set)
    workloads: dict[str, WorkloadSeen] = field(default_factory=dict)
    pods: dict[str, PodSeen] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    # --- one event each -----------------------------------------------------------------------------
    def on_workload(self, obj: dict[str, Any]) -> None:
        now, meta = self.clock(), obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        with self.lock:
            seen = self.workloads.get(key)
            if seen is None:
                seen = self.workloads[key] = WorkloadSeen(
                    meta["namespace"],
                    meta["name"],
                    _owner(meta, "Job"),
                    _owner(meta, "Job", "uid"),
                    _ts(meta["creationTimestamp"]) or now,
                    now,
                )
            for c in (obj.get("status") or {}).get("conditions") or []:
                if c.get("status") != "True":
                    continue
                kind, at = c["type"], c.get("lastTransitionTime", "")
                if kind == QUOTA_RESERVED and seen.reserved is None:
                    seen.reserved, seen.reserved_condition = now, _ts(at)
                elif kind == ADMITTED and seen.admitted is None:
                    seen.admitted = now
                elif kind == FINISHED and seen.finished is None:
                    seen.finished = now
                elif kind == EVICTED:
                    seen.evictions.add(at)
                    if c.get("reason") == EVICTED_BY_PREEMPTION:
                        seen.preemptions.add(at)
                elif kind == REQUEUED and seen.evictions:
                    seen.requeues.add(at)

    def on_pod(self, pod: Any, deleted: bool = False) -> None:
        now, meta = self.clock(), pod.metadata
        key = f"{meta.namespace}/{meta.name}"
        with self.lock:
            seen = self.pods.get(key)
            if seen is None:
                owner = next((o.name for o in meta.owner_references or [] if o.kind == "Job"), "")
                labels, ann = meta.labels or {}, meta.annotations or {}
                seen = self.pods[key] = PodSeen(
                    meta.namespace,
                    meta.name,
                    owner,
                    self.gpus_of(pod),
                    labels.get(self.class_label, "unclassified"),
                    ann.get(self.profile_key, ""),
                )
            if pod.spec.node_name:
                seen.node = pod.spec.node_name
            phase = pod.status.phase if pod.status else None
            if phase == "Running" and seen.running is None:
                seen.running = now
            if (
                deleted or phase in ("Succeeded", "Failed") or meta.deletion_timestamp
            ) and seen.ended is None:
                seen.ended = now

    def on_node(self, node: Any, deleted: bool = False) -> None:
        with self.lock:
            if deleted:
                self.nodes.pop(node.metadata.name, None)
            else:
                self.nodes[node.metadata.name] = {
                    "labels": dict(node.metadata.labels or {}),
                    "unschedulable": bool(node.spec.unschedulable),
                    "capacity": dict((node.status.capacity or {}) if node.status else {}),
                }

    # --- the watches --------------------------------------------------------------------------------
    def _loop(
        self, name: str, list_call: Callable[..., Any], handle: Callable[[Any, str], None], **kw: Any
    ) -> None:
        from kubernetes import watch

        # Each 30 s stream resumes from the last resourceVersion seen (bookmarks keep it fresh): a watch
        # begun without one first replays every object as ADDED, which at fleet size is thousands of pods
        # and nodes decoded again every 30 s. After 410 Gone (too old to resume) it begins afresh.
        version: str | None = None
        while not self._stop.is_set():
            w = watch.Watch()
            resume = {"resource_version": version} if version else {}
            try:
                for ev in w.stream(list_call, timeout_seconds=30, allow_watch_bookmarks=True, **resume, **kw):
                    if ev and ev.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        handle(ev["object"], ev["type"])
                    if self._stop.is_set():
                        break
                version = w.resource_version
            except Exception as exc:  # the stream broke (API restart, 410 Gone): said, then watched again
                gone = getattr(exc, "status", None) == 410
                version = None if gone else w.resource_version
                self.errors.append(f"{name} watch: {type(exc).__name__}: {str(exc)[:200]}")
                log.warning("%s watch restarted%s: %s", name, " from a fresh list" if gone else "", exc)
                time.sleep(0.5)
            finally:
                w.stop()

    def start(self) -> None:
        custom, core = self.kube.custom, self.kube.core
        sel = f"{self.run_label}={self.run_id}"

        def workload(obj: Any, kind: str) -> None:
            if obj["metadata"]["namespace"] in self.namespaces:
                self.on_workload(obj)

        specs = [
            ("workloads", custom.list_cluster_custom_object, workload,
             {"group": KUEUE_GROUP, "version": KUEUE_VERSION, "plural": "workloads"}),
            ("pods", core.list_pod_for_all_namespaces, lambda o, k: self.on_pod(o, k == "DELETED"),
             {"label_selector": sel}),
            ("nodes", core.list_node, lambda o, k: self.on_node(o, k == "DELETED"), {}),
        ]  # fmt: skip
        for name, call, handle, kw in specs:
            t = threading.Thread(
                target=self._loop, args=(name, call, handle), kwargs=kw, name=f"watch-{name}", daemon=True
            )
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
