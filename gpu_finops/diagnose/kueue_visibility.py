"""Kueue's own word on a pending workload: its queue positions (the visibility API) and its reason (KEP-10852).

What Kueue v0.19.2 (the version the local target builds, `local/build/versions.py`) serves, read from its
source:

- **Positions**: the aggregated API `visibility.kueue.x-k8s.io`, versions v1beta2 (preferred) and v1beta1,
  served by Kueue's own process (`pkg/visibility/server.go`) on port 8082 unless `visibilityServer.bindPort`
  says otherwise, when the `VisibilityOnDemand` feature gate is on (Beta, on by default since v0.9). It
  authenticates and authorizes by delegation: the caller comes through kube-apiserver's aggregation layer
  (front-proxy client certificate, `X-Remote-User` headers, checked against the requestheader CA in the
  `kube-system/extension-apiserver-authentication` ConfigMap) and Kueue asks kube-apiserver with a
  SubjectAccessReview. `namespaces/<ns>/localqueues/<lq>/pendingworkloads` lists the LocalQueue's pending
  workloads, each with `positionInClusterQueue` and `positionInLocalQueue` (from 0, admissible and inadmissible
  ones alike, in Kueue's order); `clusterqueues/<cq>/pendingworkloads` is the same list for a ClusterQueue.
  We read the LocalQueue's list: it carries both positions and needs only a namespaced permission.
- **Reasons**: with the `UnadmittedWorkloadsObservability` gate (Beta, off by default in v0.19) the
  QuotaReserved condition's reason is one of KEP-10852's ranked reasons (`NoMatchingFlavor`,
  `ExceedsMaxQuota`, `WaitingForQuota`, `WaitingForPreemptedWorkloads`, ...) and the Admitted condition's
  one of `NoReservation`, `UnsatisfiedAdmissionChecks`, `PendingDelayedTopologyRequests`; without it they
  are the legacy `Pending`, `Waiting`, `Inadmissible`, `UnsatisfiedChecks`. The metric
  `kueue_unadmitted_workloads{cluster_queue,reason,underlying_cause}` counts exactly those two condition
  reasons per ClusterQueue (`pkg/cache/queue/unadmitted_workloads.go`: reason = Admitted's reason,
  underlying_cause = QuotaReserved's, `PendingEvaluation` when there is no QuotaReserved yet), so the
  Workload's own conditions are the per-workload source and the metric adds nothing for one workload.

Where a signal is missing the diagnosis says `fallback: <why>` and gives its own derivation; never silence.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from gpu_finops.diagnose.model import KueueSignals, QueuePosition, WorkloadFacts
from gpu_finops.facts.kube_keys import (
    KUEUE_GROUP,
    KUEUE_VERSION,
    KUEUE_VISIBILITY_GROUP,
    KUEUE_VISIBILITY_VERSIONS,
)
from gpu_finops.model.workload import ADMITTED, FINISHED, QUOTA_RESERVED

GROUP = KUEUE_VISIBILITY_GROUP
VERSIONS = KUEUE_VISIBILITY_VERSIONS  # what Kueue v0.19.2 serves, preferred first

# KEP-10852's reasons, as Kueue v0.19.2 spells them (apis/kueue/v1beta2/workload_types.go).
QUOTA_RESERVED_REASONS = frozenset(
    {
        "NoMatchingFlavor",
        "WaitingForQuota",
        "ExceedsMaxQuota",
        "TopologyPlacementFailed",
        "WaitingForPreemptedWorkloads",
        "Misconfigured",
        "Suspended",
        "PendingEvaluation",
        "WaitingForPodsReady",
    }
)
ADMITTED_REASONS = frozenset(
    {"NoReservation", "UnsatisfiedAdmissionChecks", "PendingDelayedTopologyRequests"}
)
# What Kueue writes instead when UnadmittedWorkloadsObservability is off.
LEGACY_REASONS = frozenset({"Pending", "Waiting", "Inadmissible", "UnsatisfiedChecks"})
GATE_REASONS = "UnadmittedWorkloadsObservability"
GATE_POSITIONS = "VisibilityOnDemand"

# (HTTP status, body text) for a path of the API server: gpu_finops.clients.kube.Kube.get_raw, or a recording.
Get = Callable[[str], tuple[int, str]]


def pending_path(version: str, namespace: str, local_queue: str) -> str:
    return f"/apis/{GROUP}/{version}/namespaces/{namespace}/localqueues/{local_queue}/pendingworkloads"


def local_queue_path(namespace: str, local_queue: str) -> str:
    return f"/apis/{KUEUE_GROUP}/{KUEUE_VERSION}/namespaces/{namespace}/localqueues/{local_queue}"


def _json(body: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(body)
    except (ValueError, TypeError):
        return None
    return doc if isinstance(doc, dict) else None


def _message(body: str) -> str:
    doc = _json(body) or {}
    return str(doc.get("message") or body.strip()[:200] or "(empty body)")


def read_pending(
    get: Get, namespace: str, local_queue: str
) -> tuple[str | None, list[dict[str, Any]] | None, str | None]:
    """A LocalQueue's pending workloads from the visibility API: (api, items, None), or (api, None, why)."""
    not_served = []
    unavailable: tuple[str, str] | None = None  # the first 503: (api, why), said if no other version answers
    for version in VERSIONS:
        path = pending_path(version, namespace, local_queue)
        api = f"{GROUP}/{version}"
        status, body = get(path)
        if status == 200:
            doc = _json(body)
            items = None if doc is None else doc.get("items")
            if not isinstance(items, list):
                return api, None, f"{path} answered 200 without an items list: {body.strip()[:200]!r}"
            return api, items, None
        doc = _json(body) or {}
        details = doc.get("details")
        details = details if isinstance(details, dict) else {}
        if status == 404 and details.get("kind") == "localqueue":
            return (
                api,
                None,
                (
                    f"{api} does not know LocalQueue {namespace}/{local_queue} ({_message(body)}): Kueue queues "
                    "nothing there; create the LocalQueue or fix the Job's kueue.x-k8s.io/queue-name"
                ),
            )
        if status == 404:
            not_served.append(f"{version}: 404 {_message(body)}")
            continue
        if status in (401, 403):
            return (
                api,
                None,
                (
                    f"forbidden: {api} answered {status} ({_message(body)}); grant get on "
                    f"localqueues/pendingworkloads in {GROUP} to whoever runs the diagnosis"
                ),
            )
        if status == 503:
            # each version is its own APIService, available or not on its own: try the next one first
            unavailable = unavailable or (
                api,
                (
                    f"{api} is registered but its server does not answer (503: {_message(body)}): Kueue runs with "
                    f"the {GATE_POSITIONS} feature gate off, or its visibility server is down or unreachable from "
                    "kube-apiserver"
                ),
            )
            continue
        return api, None, f"{path} answered {status}: {_message(body)}"
    if unavailable is not None:
        return unavailable[0], None, unavailable[1]
    return (
        None,
        None,
        (
            f"the API server does not serve {GROUP} ({'; '.join(not_served)}): Kueue's visibility API is not "
            f"registered (no APIService: Kueue older than v0.9, or run with {GATE_POSITIONS} off and its APIService "
            "left out)"
        ),
    )


def read_cluster_queue(get: Get, namespace: str, local_queue: str) -> tuple[str | None, str | None]:
    """The LocalQueue's spec.clusterQueue: (name, None), or (None, why)."""
    status, body = get(local_queue_path(namespace, local_queue))
    if status == 200:
        doc = _json(body)
        spec = None if doc is None else doc.get("spec", {})
        if not isinstance(spec, dict):
            return None, (
                f"LocalQueue {namespace}/{local_queue} answered 200 with what is not a LocalQueue: "
                f"{body.strip()[:200]!r}"
            )
        cq = spec.get("clusterQueue")
        if isinstance(cq, str) and cq:
            return cq, None
        return None, f"LocalQueue {namespace}/{local_queue} names no spec.clusterQueue"
    return None, f"LocalQueue {namespace}/{local_queue} not read ({status}: {_message(body)})"


# Kueue's visibility API answers at most `limit` items, 1000 when the caller sets none
# (constants.DefaultPendingWorkloadsLimit); a workload further down is absent from that answer, not gone.
DEFAULT_LIMIT = 1000


def _bad_fields(entry: dict[str, Any]) -> list[str]:
    """What is wrong with an entry's positions and priority: 'without A, B' for the missing ones, 'with A x'
    for a position that is not a count from 0 (a negative, a bool, a float, a string) or a priority that is
    not an integer; empty when all three are sound."""
    missing, wrong = [], []
    for f in ("positionInClusterQueue", "positionInLocalQueue", "priority"):
        value = entry.get(f)
        if value is None:
            missing.append(f)
        elif type(value) is not int or (f != "priority" and value < 0):
            wrong.append(f"with {f} {value!r} (not {'an integer' if f == 'priority' else 'a count from 0'})")
    return ([f"without {', '.join(missing)}"] if missing else []) + wrong


def position_of(
    workload: WorkloadFacts,
    api: str | None,
    items: list[dict[str, Any]] | None,
    why: str | None,
    cluster_queue: tuple[str | None, str | None],
) -> KueueSignals:
    """Find the workload in its LocalQueue's answer; a KueueSignals with its position or the fallback."""
    if items is None:
        return KueueSignals(fallback=why or "the visibility API was not read")
    lq = f"{workload.namespace}/{workload.queue}"
    for n, i in enumerate(items):
        if not isinstance(i, dict) or not isinstance(i.get("metadata", {}), dict):
            return KueueSignals(
                fallback=f"{api} answered a malformed pending workload list for LocalQueue {lq}: item {n} is "
                f"{json.dumps(i)[:120]}, not a workload"
            )
    matches = [
        i
        for i in items
        if (i.get("metadata") or {}).get("name") == workload.name
        and (i.get("metadata") or {}).get("namespace", workload.namespace) == workload.namespace
    ]
    if not matches:
        if workload.admitted:
            listed = "does not list it among the pending workloads"
            cause = "Kueue admitted it (Admitted True), so it is past the queue" + (
                "; its Job is still suspended" if workload.job_suspended else ""
            )
        elif workload.is_true(QUOTA_RESERVED):
            listed = "does not list it among the pending workloads"
            cause = (
                "it holds a quota reservation (QuotaReserved True), so it is past the queue; what holds it "
                "is the Admitted condition"
            )
        elif len(items) >= DEFAULT_LIMIT:
            listed = f"lists {len(items)} pending workloads and not this one"
            cause = (
                f"the answer stops at Kueue's default limit of {DEFAULT_LIMIT}, so it may be further down the "
                "queue; its position was not read"
            )
        else:
            listed = (
                "lists no pending workload"
                if not items
                else f"lists {len(items)} pending workload(s) "
                f"({', '.join(str((i.get('metadata') or {}).get('name')) for i in items[:5])}) and not this one"
            )
            cause = (
                "Kueue does not queue it now (it left the queue between the reads, is inactive, or its queue is "
                "stopped)"
            )
        return KueueSignals(fallback=f"{api} {listed} in LocalQueue {lq}: {cause}")
    if len(matches) > 1:
        at = ", ".join(str(m.get("positionInClusterQueue")) for m in matches)
        return KueueSignals(
            fallback=f"{api} lists {workload.key} {len(matches)} times in LocalQueue {lq} (positions in its "
            f"ClusterQueue {at}): its position is ambiguous"
        )
    entry = matches[0]
    created = (entry.get("metadata") or {}).get("creationTimestamp")
    if workload.created and created and created != workload.created:
        return KueueSignals(
            fallback=f"{api} lists a workload named {workload.key} created at {created}, but this one was "
            f"created at {workload.created}: another incarnation of the name (deleted and created again "
            "between the reads), so its position is not this workload's"
        )
    listed_in = entry.get("localQueueName")
    if listed_in is not None and listed_in != workload.queue:
        return KueueSignals(
            fallback=f"{api} answered for LocalQueue {lq} an entry of {workload.key} in LocalQueue {listed_in!r}: "
            "not this queue's position"
        )
    wrong = _bad_fields(entry)
    if wrong:
        return KueueSignals(fallback=f"{api} lists {workload.key} in LocalQueue {lq} {', '.join(wrong)}")
    shared = [
        str((i.get("metadata") or {}).get("name"))
        for i in items
        if i is not entry and i.get("positionInClusterQueue") == entry["positionInClusterQueue"]
    ]
    if shared:
        return KueueSignals(
            fallback=f"{api} answered inconsistent positions: positionInClusterQueue "
            f"{entry['positionInClusterQueue']} for {workload.key} and for {', '.join(shared[:5])} (a position "
            "in a ClusterQueue belongs to one workload)"
        )
    if entry["positionInLocalQueue"] > entry["positionInClusterQueue"]:
        return KueueSignals(
            fallback=f"{api} answered inconsistent positions for {workload.key}: positionInLocalQueue "
            f"{entry['positionInLocalQueue']} past positionInClusterQueue {entry['positionInClusterQueue']} "
            "(a LocalQueue's pending workloads are a subsequence of its ClusterQueue's, in the same order)"
        )
    name, unknown = cluster_queue
    return KueueSignals(
        position=QueuePosition(
            local_queue=str(workload.queue),
            cluster_queue=name,
            in_cluster_queue=entry["positionInClusterQueue"],
            in_local_queue=entry["positionInLocalQueue"],
            priority=entry["priority"],
            api=str(api),
            cluster_queue_unknown=unknown,
        )
    )


def waiting_in_kueue(w: WorkloadFacts) -> bool:
    """A workload Kueue still holds back: not admitted (or admitted with its Job still suspended), not done."""
    return not w.is_true(FINISHED) and (not w.admitted or w.job_suspended is True)


def read_signals(get: Get, workloads: Iterable[WorkloadFacts]) -> dict[str, KueueSignals]:
    """workload key -> what the visibility API says of it, for every workload still waiting in Kueue. One
    pendingworkloads read and one LocalQueue read per LocalQueue, whatever the number of workloads."""
    out: dict[str, KueueSignals] = {}
    answers: dict[tuple[str, str], tuple[str | None, list[dict[str, Any]] | None, str | None]] = {}
    queues: dict[tuple[str, str], tuple[str | None, str | None]] = {}
    for w in workloads:
        if not waiting_in_kueue(w):
            continue
        if not w.queue:
            out[w.key] = KueueSignals(
                fallback="the workload names no LocalQueue (spec.queueName unset), so no queue lists it"
            )
            continue
        key = (w.namespace, w.queue)
        if key not in answers:
            answers[key] = read_pending(get, *key)
            if answers[key][1] is not None:
                queues[key] = read_cluster_queue(get, *key)
        api, items, why = answers[key]
        out[w.key] = position_of(w, api, items, why, queues.get(key, (None, None)))
    return out


def kube_get(kube: Any) -> Get:
    """The Kubernetes client's GET (gpu_finops.clients.kube.Kube.get_raw) as a `Get`."""
    return lambda path: kube.get_raw(path)


# --- what the admission step says -----------------------------------------------------------------------
def position_text(s: KueueSignals | None) -> tuple[str, tuple[str, ...]]:
    """('Kueue: position ...' or 'fallback: ...', key evidence tokens)."""
    if s is None:
        return "fallback: Kueue's visibility API was not read for it", ("kueue-fallback:position",)
    p = s.position
    if p is None:
        return f"fallback: no queue position from Kueue: {s.fallback}", ("kueue-fallback:position",)
    cq = p.cluster_queue or f"? ({p.cluster_queue_unknown})"
    ahead = p.in_cluster_queue
    text = (
        f"Kueue: position {p.in_cluster_queue + 1} in ClusterQueue {cq} ({ahead} ahead of it), "
        f"{p.in_local_queue + 1} in LocalQueue {p.local_queue}, priority {p.priority} ({p.api})"
    )
    return text, (f"kueue-position:{p.cluster_queue or '?'}:{p.in_cluster_queue + 1}",)


def reason_text(w: WorkloadFacts) -> tuple[str, tuple[str, ...]]:
    """Kueue's own reason from the Workload's conditions ('Kueue: reason X: message'), or 'fallback: why'."""
    qr = w.conditions.get(QUOTA_RESERVED)
    admitted = w.conditions.get(ADMITTED)
    if qr is None:
        return (
            "fallback: no reason from Kueue: the Workload has no QuotaReserved condition yet (Kueue has not "
            "evaluated it; its kueue_unadmitted_workloads metric counts it as PendingEvaluation)",
            ("kueue-fallback:reason",),
        )
    cond = qr
    if admitted is not None and admitted.status == "True" and qr.status != "True":
        return (
            f"fallback: no reason from Kueue: its conditions contradict each other (Admitted True, QuotaReserved "
            f"{qr.status} {qr.reason!r}): Kueue admits only with quota reserved, so one of them is stale; read "
            "the Workload again",
            ("kueue-fallback:reason",),
        )
    if qr.status == "True":
        if admitted is None or admitted.status == "True":
            return "fallback: no reason from Kueue: quota reserved and no Admitted=False condition", (
                "kueue-fallback:reason",
            )
        cond = admitted
    if not cond.reason:
        return (
            f"fallback: no reason from Kueue: its {cond.type} condition is {cond.status} without a reason",
            ("kueue-fallback:reason",),
        )
    if cond.reason in LEGACY_REASONS:
        return (
            f"fallback: no ranked reason from Kueue: {cond.type} reason is the legacy {cond.reason!r} "
            f"(Kueue runs with the {GATE_REASONS} feature gate off; KEP-10852's reasons need it on)",
            ("kueue-fallback:reason",),
        )
    known = QUOTA_RESERVED_REASONS if cond is qr else ADMITTED_REASONS
    note = "" if cond.reason in known else " (not one of KEP-10852's reasons)"
    text = f"Kueue: reason {cond.reason}{note}" + (f": {cond.message}" if cond.message else "")
    og, gen = cond.observed_generation, w.generation
    if og is not None and gen is not None and og < gen:
        # Kueue's word still, but on an older spec (a new priority, queue or spec.active since): said as such
        text += (
            f" (written for generation {og}; the Workload is at generation {gen} and Kueue has not "
            "re-evaluated it since, so the reason may be stale)"
        )
    return text, (f"kueue-reason:{cond.reason}",)
