"""Why is this GPU pod (or Kueue workload) waiting? A pure walk over observed state; no I/O.

The order is admission -> allocation -> memory -> placement -> application. The walk stops at the
first check that explains the wait for the answer, and still runs and shows every later check, so a
reader sees when two causes hold at once and that the order decided between them.

- admission: Kueue has not admitted the workload (QuotaReserved False, or the Job still suspended):
  the pod is not in the scheduler at all, so nothing about devices or nodes can explain it.
- allocation: no Ready, schedulable node has the GPUs the pod asks for free: every device is held.
  Whose they are and what they do (SM_ACTIVE, occupancy, VRAM) is the evidence. When every holder is a
  workload trying to compute but starved of input or transfer-bound, ownership is not the story and the
  application check owns the finding.
- memory: free slots exist (time-slicing replicas) only on cards whose VRAM is resident: a replica
  gives compute time, not memory.
- placement: the pod's own constraints (taints without tolerations, nodeSelector, required node
  affinity, a cordon) rule out every node with room, or every GPU node.
- application: the holders of the devices the pod could use are data-starved (low SM, low PCIe) or
  transfer-bound (high PCIe, low occupancy).

Memory and application need DCGM; without it they are reported as not checked, naming why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from finops.diagnose import activity as act
from finops.diagnose.model import (
    ADMISSION,
    ALLOCATION,
    APPLICATION,
    MEMORY,
    ORDER,
    PLACEMENT,
    Cluster,
    Diagnosis,
    Finding,
    GpuStats,
    Holder,
    NodeFacts,
    PodFacts,
    WorkloadFacts,
)
from finops.diagnose.scheduling import (
    RULE_AFFINITY,
    RULE_NOT_READY,
    RULE_SELECTOR,
    RULE_TAINT,
    RULE_UNSCHEDULABLE,
    RuleOut,
    capacity_rule_out,
    constraint_rule_outs,
)


class NotDiagnosable(ValueError):
    """The target is not something this diagnosis explains: not pending, or asks for no GPU."""


def why_not_diagnosable(pod: PodFacts) -> str | None:
    """None when the pod is a pending GPU pod; otherwise the reason, in words."""
    if pod.phase != "Pending":
        where = f" on node {pod.node_name}" if pod.node_name else ""
        return f"pod {pod.key} is not pending: it is {pod.phase}{where}"
    if pod.gpu_resource is None:
        return (
            f"pod {pod.key} is not a GPU pod: it requests neither nvidia.com/gpu nor nvidia.com/gpu.shared "
            f"(requests: {pod.gpu_requests or 'none'})"
        )
    return None


# --- what the checks share ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _View:
    """The cluster seen from one pod: per node its GPUs held and free, per card and holder DCGM."""

    pod: PodFacts
    cluster: Cluster
    resource: str
    held: dict[str, int]  # node -> GPUs of `resource` requested by bound pods
    cards: dict[str, dict[str, act.Activity]]  # node -> uuid -> card activity
    holder_activity: dict[str, act.Activity | None]  # holder key -> its activity

    @property
    def stats_known(self) -> bool:
        return self.cluster.stats is not None

    def gpu_nodes(self) -> list[NodeFacts]:
        return [n for n in self.cluster.nodes if n.allocatable.get(self.resource, 0) > 0]

    def usable(self, n: NodeFacts) -> bool:
        """Ready and not cordoned: the node can give out devices at all."""
        return n.ready and not n.unschedulable

    def free(self, n: NodeFacts) -> int:
        return n.allocatable.get(self.resource, 0) - self.held.get(n.name, 0)

    def fits(self, n: NodeFacts) -> bool:
        return self.free(n) >= self.pod.gpu_count

    def holders_on(self, node: str) -> list[Holder]:
        return [
            h for h in self.cluster.holders if h.node == node and h.gpu_requests.get(self.resource, 0) > 0
        ]

    def vram_full_cards(self, node: str) -> list[tuple[str, act.Activity]] | None:
        """The node's cards whose VRAM is resident; None when DCGM shows no card for the node."""
        cards = self.cards.get(node)
        if not cards:
            return None
        return [
            (uuid, a)
            for uuid, a in sorted(cards.items())
            if a.fb_ratio is not None and a.fb_ratio >= act.FB_RESIDENT
        ]

    def memory_room(self, node: str) -> bool | None:
        """True: some card has VRAM room; False: every card is resident; None: not known."""
        cards = self.cards.get(node)
        if not self.stats_known or not cards:
            return None
        full = self.vram_full_cards(node) or []
        return len(full) < len(cards)

    def holder_row(self, h: Holder) -> dict[str, object]:
        a = self.holder_activity.get(h.key)
        row: dict[str, object] = {
            "pod": h.key,
            "node": h.node,
            self.resource: h.gpu_requests.get(self.resource),
        }
        if not self.stats_known:
            row["activity"] = "not checked"
        elif a is None:
            row["activity"] = "no DCGM series for this pod"
            row["class"] = act.UNKNOWN
        else:
            row.update(a.to_dict())
        return row

    def holder_class(self, h: Holder) -> str:
        return act.classify(self.holder_activity.get(h.key))


def _view(pod: PodFacts, cluster: Cluster) -> _View:
    resource = pod.gpu_resource or "nvidia.com/gpu"
    held: dict[str, int] = {}
    for h in cluster.holders:
        held[h.node] = held.get(h.node, 0) + h.gpu_requests.get(resource, 0)
    by_card: dict[tuple[str, str], list[GpuStats]] = {}
    by_holder: dict[str, list[GpuStats]] = {}
    for row in cluster.stats or ():
        by_card.setdefault((row.node, row.uuid), []).append(row)
        if row.holder:
            by_holder.setdefault(row.holder, []).append(row)
    cards: dict[str, dict[str, act.Activity]] = {}
    for (node, uuid), rows in by_card.items():
        a = act.activity(rows)
        if a is not None:
            cards.setdefault(node, {})[uuid] = a
    holder_activity = {h.key: act.activity(by_holder.get(h.key, [])) for h in cluster.holders}
    return _View(pod, cluster, resource, held, cards, holder_activity)


def _not_checked(check: str, cluster: Cluster) -> Finding:
    why = cluster.stats_unavailable or "DCGM series were not read"
    return Finding(check, None, f"not checked: {check} needs DCGM over the window ({why})")


def _pct(v: float | None) -> str:
    return "?" if v is None else f"{v:.0%}"


def _sm(v: float | None) -> str:
    return "?" if v is None else f"{v:.2f}"


# --- the checks -----------------------------------------------------------------------------------------
def check_admission(v: _View, workload: WorkloadFacts | None) -> Finding:
    pod = v.pod
    if workload is None:
        if pod.workload:
            return Finding(
                ADMISSION,
                False,
                f"the pod belongs to Kueue workload {pod.workload}, which was not found (deleted?); the pod "
                "is in the scheduler, so admission does not hold it",
                evidence={"workload": pod.workload, "found": False},
            )
        return Finding(
            ADMISSION,
            False,
            "not managed by Kueue (no Workload owns it): the pod is the scheduler's to place",
            evidence={"workload": None},
        )
    qr = workload.conditions.get("QuotaReserved")
    admitted = workload.conditions.get("Admitted")
    evidence = {
        "workload": workload.key,
        "queue": workload.queue,
        "QuotaReserved": None
        if qr is None
        else {"status": qr.status, "reason": qr.reason, "message": qr.message},
        "Admitted": None
        if admitted is None
        else {"status": admitted.status, "reason": admitted.reason, "message": admitted.message},
        "job_suspended": workload.job_suspended,
    }
    key = [f"workload:{workload.key}"]
    if workload.admitted and workload.job_suspended is not True:
        return Finding(
            ADMISSION,
            False,
            f"Kueue admitted workload {workload.key} (QuotaReserved True, Admitted True); its Job is running "
            "in the scheduler",
            evidence=evidence,
            key_evidence=(*key, "Admitted=True"),
        )
    if qr is not None and qr.status == "False":
        key.append("QuotaReserved=False")
        why = (
            f"QuotaReserved False ({qr.reason}): {qr.message}"
            if qr.message
            else f"QuotaReserved False ({qr.reason})"
        )
        action = (
            f"the ClusterQueue behind LocalQueue {workload.queue} has no free quota for it: wait for its running "
            "workloads, borrow within the cohort, raise nominalQuota, or give it a higher "
            "WorkloadPriorityClass to preempt; no node or GPU change will start it"
        )
    elif qr is not None and qr.status == "True":
        key.append("QuotaReserved=True")
        why = "quota is reserved but the workload is not Admitted yet (admission checks pending)"
        action = "look at the workload's admissionChecks; the quota is there"
    else:
        key.append("QuotaReserved=unset")
        why = "Kueue has not tried it yet (no QuotaReserved condition): it is queued behind other workloads"
        action = f"it waits its turn in LocalQueue {workload.queue}; check the queue's pending workloads"
    if workload.job_suspended:
        key.append("suspended")
        why += "; its Job is suspended, so no pod exists for the scheduler"
    elif workload.admitted:
        why = f"Kueue admitted it, but its Job is still suspended ({why})"
    return Finding(
        ADMISSION,
        True,
        f"Kueue has not admitted workload {workload.key}: {why}",
        action,
        evidence,
        tuple(key),
    )


def check_allocation(v: _View) -> Finding:
    pod = v.pod
    if pod.node_name:
        return Finding(
            ALLOCATION,
            False,
            f"the scheduler bound the pod to {pod.node_name}: it was given its {v.resource}",
            evidence={"node": pod.node_name},
        )
    usable = [n for n in v.gpu_nodes() if v.usable(n)]
    nodes = {
        n.name: {"allocatable": n.allocatable.get(v.resource, 0), "held": v.held.get(n.name, 0)}
        for n in usable
    }
    if not usable:
        return Finding(
            ALLOCATION,
            True,
            f"no Ready, schedulable node advertises {v.resource}: there is no device to allocate",
            "a GPU node has to be launched: check the Karpenter NodePool's limits and its NodeClaims",
            {"resource": v.resource, "nodes": nodes},
            (f"no-nodes:{v.resource}",),
        )
    fitting = [n.name for n in usable if v.fits(n)]
    if fitting:
        return Finding(
            ALLOCATION,
            False,
            f"{v.resource} free for {pod.gpu_count} on {len(fitting)} node(s) ({', '.join(fitting)}): "
            "not every device is held",
            evidence={"resource": v.resource, "nodes": nodes, "free_on": fitting},
        )
    holders = [h for n in usable for h in v.holders_on(n.name)]
    rows = [v.holder_row(h) for h in holders]
    evidence = {"resource": v.resource, "asks": pod.gpu_count, "nodes": nodes, "holders": rows}
    key = tuple(f"holder:{h.key}" for h in holders)
    if not v.stats_known:
        return Finding(
            ALLOCATION,
            True,
            f"every {v.resource} on {len(usable)} usable node(s) is held, by {len(holders)} pod(s); what "
            f"they do with it was not checked ({v.cluster.stats_unavailable})",
            "see who holds them (evidence); with DCGM back, rerun to tell idle owners from busy ones",
            evidence,
            key,
        )
    classes = {h.key: v.holder_class(h) for h in holders}
    if holders and all(c in act.APPLICATION_BOUND for c in classes.values()):
        return Finding(
            ALLOCATION,
            False,
            f"every {v.resource} is held, but every holder is trying to compute and is starved of input or "
            f"transfer-bound ({', '.join(f'{k} {c}' for k, c in classes.items())}): the application check "
            "owns this",
            evidence=evidence,
            key_evidence=key,
        )
    idle = [k for k, c in classes.items() if c in (act.RESIDENT, act.IDLE)]
    busy = [k for k, c in classes.items() if c in (act.BUSY, act.ACTIVE)]
    if idle:
        summary = (
            f"every {v.resource} is held; {len(idle)} of {len(holders)} holder(s) look idle "
            f"(SM_ACTIVE < {act.SM_LOW:.2f}) yet own their devices: {', '.join(idle)}"
        )
        action = (
            "reclaim or scale down the idle holders, or share the cards: time-slicing or MIG address "
            "allocation (not memory residency: a resident model still fills VRAM)"
        )
    elif busy and len(busy) == len(holders):
        summary = (
            f"every {v.resource} is held by pods doing work ({', '.join(busy)}): the GPUs are genuinely full"
        )
        action = "add capacity (raise the NodePool's GPU limit) or wait for the running work to finish"
    else:
        summary = f"every {v.resource} is held by {len(holders)} pod(s): {', '.join(classes)}"
        action = "see each holder's activity (evidence); reclaim what is idle"
    return Finding(ALLOCATION, True, summary, action, evidence, key)


def check_memory(v: _View) -> Finding:
    if not v.stats_known:
        return _not_checked(MEMORY, v.cluster)
    pod = v.pod
    if pod.node_name:
        full = v.vram_full_cards(pod.node_name)
        if full is None:
            return Finding(
                MEMORY, None, f"no DCGM series for node {pod.node_name}: its VRAM could not be read"
            )
        cards = v.cards.get(pod.node_name, {})
        evidence = {"node": pod.node_name, "cards": {u: a.to_dict() for u, a in sorted(cards.items())}}
        if len(full) == len(cards):
            return Finding(
                MEMORY,
                True,
                f"bound to {pod.node_name}, whose every card's VRAM is resident "
                f"({', '.join(f'{u} {_pct(a.fb_ratio)}' for u, a in full)}): the pod cannot get memory there",
                _MEMORY_ACTION,
                evidence,
                tuple(f"vram-full:{pod.node_name}/{u}" for u, _ in full),
            )
        return Finding(
            MEMORY, False, f"bound to {pod.node_name}, which has a card with VRAM room", evidence=evidence
        )
    usable = [n for n in v.gpu_nodes() if v.usable(n)]
    with_slots = [n for n in usable if v.fits(n)]
    if not with_slots:
        return Finding(
            MEMORY,
            False,
            f"no free {v.resource} slot anywhere, so no free slot sits on a full card",
            evidence={"free_slots_on": []},
        )
    room = {n.name: v.memory_room(n.name) for n in with_slots}
    cards = {n.name: {u: a.to_dict() for u, a in sorted(v.cards.get(n.name, {}).items())} for n in with_slots}
    evidence = {
        "resource": v.resource,
        "free_slots": {n.name: v.free(n) for n in with_slots},
        "replicas_per_gpu": {n.name: n.replicas_per_gpu for n in with_slots},
        "cards": cards,
        "threshold_fb_used_ratio": act.FB_RESIDENT,
    }
    if any(r is True for r in room.values()):
        ok = [n for n, r in room.items() if r]
        return Finding(
            MEMORY, False, f"free {v.resource} with VRAM room on {', '.join(ok)}", evidence=evidence
        )
    unknown = [n for n, r in room.items() if r is None]
    if unknown:
        return Finding(
            MEMORY,
            None,
            f"free {v.resource} on {', '.join(unknown)}, but DCGM shows no card there: VRAM not checked",
            evidence=evidence,
        )
    full = [(n, u, a) for n in room for u, a in (v.vram_full_cards(n) or [])]
    low_sm = all(a.sm_active is not None and a.sm_active < act.SM_LOW for _, _, a in full)
    return Finding(
        MEMORY,
        True,
        f"{sum(v.free(n) for n in with_slots)} {v.resource} slot(s) free on {', '.join(room)}, but every such "
        f"card's VRAM is resident ({', '.join(f'{n}/{u} {_pct(a.fb_ratio)} used, SM {_sm(a.sm_active)}' for n, u, a in full)})"
        + (": held warm without matching compute" if low_sm else ""),
        _MEMORY_ACTION,
        evidence,
        tuple(f"vram-full:{n}/{u}" for n, u, _ in full),
    )


_MEMORY_ACTION = (
    "time-slicing shares compute time, not memory: move, shrink (quantize, offload) or consolidate the "
    "resident model, use MIG for memory isolation, or keep the pod off those cards"
)


def _placement_action(rules: set[str]) -> str:
    parts = []
    if RULE_TAINT in rules:
        parts.append("add a toleration for the taint to the pod (or untaint the node)")
    if rules & {RULE_SELECTOR, RULE_AFFINITY}:
        parts.append("relax the pod's nodeSelector / required node affinity, or label a node to match")
    if RULE_UNSCHEDULABLE in rules:
        parts.append("uncordon the node once its maintenance is done")
    if RULE_NOT_READY in rules:
        parts.append("repair the NotReady node")
    return "; ".join(parts) or "see the per-node reasons"


def check_placement(v: _View) -> Finding:
    pod = v.pod
    if pod.node_name:
        return Finding(PLACEMENT, False, f"the scheduler placed the pod on {pod.node_name}")
    per_node: dict[str, list[RuleOut]] = {}
    capacity: dict[str, RuleOut | None] = {}
    for n in v.gpu_nodes():
        per_node[n.name] = constraint_rule_outs(pod, n)
        capacity[n.name] = capacity_rule_out(pod, n, v.held.get(n.name, 0))
    other_nodes = [n.name for n in v.cluster.nodes if n.allocatable.get(v.resource, 0) == 0]
    evidence: dict[str, object] = {
        "nodes": {
            name: {
                "ruled_out_by": [str(r) for r in rules],
                "free": v.free(next(n for n in v.cluster.nodes if n.name == name)),
                "capacity": str(capacity[name]) if capacity[name] else "fits",
                "vram_room": v.memory_room(name),
            }
            for name, rules in per_node.items()
        },
        "nodes_without_" + v.resource: len(other_nodes),
        "scheduler_message": pod.scheduler_message,
    }
    matching = [name for name, rules in per_node.items() if not rules]
    # A node with room: free GPUs for the pod and VRAM not known to be full.
    with_room = [name for name in per_node if capacity[name] is None and v.memory_room(name) is not False]
    blocked = {name: per_node[name] for name in with_room if per_node[name]}
    if with_room and len(blocked) == len(with_room):
        rules = {r.rule for rs in blocked.values() for r in rs}
        busy_note = f"; the only node(s) that match ({', '.join(matching)}) have no room" if matching else ""
        return Finding(
            PLACEMENT,
            True,
            "the pod's constraints rule out every node with room: "
            + "; ".join(f"{n}: {', '.join(str(r) for r in rs)}" for n, rs in blocked.items())
            + busy_note,
            _placement_action(rules),
            evidence,
            tuple(f"ruled-out:{n}:{r.rule}" for n, rs in blocked.items() for r in rs)
            + tuple(f"only-match:{n}" for n in matching),
        )
    if per_node and not matching:
        rules = {r.rule for rs in per_node.values() for r in rs}
        return Finding(
            PLACEMENT,
            True,
            f"no {v.resource} node satisfies the pod's constraints: "
            + "; ".join(f"{n}: {', '.join(str(r) for r in rs)}" for n, rs in per_node.items()),
            _placement_action(rules),
            evidence,
            tuple(f"ruled-out:{n}:{r.rule}" for n, rs in per_node.items() for r in rs),
        )
    if not per_node:
        return Finding(
            PLACEMENT, False, f"no node advertises {v.resource}: nothing to place on", evidence=evidence
        )
    return Finding(
        PLACEMENT,
        False,
        f"the pod's constraints allow {', '.join(matching)}"
        + ("" if with_room else f"; no node has room ({pod.gpu_count} {v.resource}) either way"),
        evidence=evidence,
        key_evidence=tuple(f"only-match:{n}" for n in matching),
    )


def check_application(v: _View) -> Finding:
    if not v.stats_known:
        return _not_checked(APPLICATION, v.cluster)
    pod = v.pod
    nodes = (
        [pod.node_name]
        if pod.node_name
        else [n.name for n in v.gpu_nodes() if not constraint_rule_outs(pod, n)]
    )
    if not pod.node_name and any(
        v.fits(n) and v.memory_room(n.name) is not False
        for n in v.gpu_nodes()
        if n.name in nodes and v.usable(n)
    ):
        return Finding(
            APPLICATION,
            False,
            "a node the pod may use has a free device with room: no holder stands between the pod and a GPU",
        )
    holders = [h for n in nodes for h in v.holders_on(n)]
    rows = [v.holder_row(h) for h in holders]
    bound = [h for h in holders if v.holder_class(h) in act.APPLICATION_BOUND]
    evidence = {"nodes": nodes, "holders": rows}
    if not bound:
        return Finding(
            APPLICATION,
            False,
            "the holders of the devices this pod could use are not starved or transfer-bound "
            f"({', '.join(f'{h.key} {v.holder_class(h)}' for h in holders) or 'no holders'})",
            evidence=evidence,
        )
    starved = [h for h in bound if v.holder_class(h) == act.STARVED]
    small = [h for h in bound if v.holder_class(h) == act.SMALL_BATCH]
    parts = []
    actions = []
    for h in starved:
        a = v.holder_activity[h.key]
        parts.append(
            f"{h.key} is data-starved (SM {_sm(a.sm_active)}, PCIe {(a.pcie_bps or 0) / 1e6:.1f} MB/s)"  # type: ignore[union-attr]
        )
    if starved:
        actions.append(
            "feed the starved holder: faster data source, async I/O, more loader workers, prefetch"
        )
    for h in small:
        a = v.holder_activity[h.key]
        parts.append(
            f"{h.key} is transfer-bound (PCIe {(a.pcie_bps or 0) / 1e9:.2f} GB/s, SM occupancy {_sm(a.sm_occupancy)})"  # type: ignore[union-attr]
        )
    if small:
        actions.append(
            "batch the transfer-bound holder: larger batches, pinned memory, fewer host round trips"
        )
    return Finding(
        APPLICATION,
        True,
        "the devices this pod waits for are held by workloads that cannot keep them busy: "
        + "; ".join(parts),
        "; ".join(actions),
        evidence,
        tuple(f"{'starved' if h in starved else 'small-batch'}:{h.key}" for h in bound),
    )


# --- the walk -------------------------------------------------------------------------------------------
def _walk(
    v: _View, workload: WorkloadFacts | None, order: Sequence[str], skip_pod_checks: str | None
) -> tuple[Finding, ...]:
    checks: dict[str, Callable[[], Finding]] = {
        ADMISSION: lambda: check_admission(v, workload),
        ALLOCATION: lambda: check_allocation(v),
        MEMORY: lambda: check_memory(v),
        PLACEMENT: lambda: check_placement(v),
        APPLICATION: lambda: check_application(v),
    }
    if sorted(order) != sorted(ORDER):
        raise ValueError(f"order must be a permutation of {ORDER}, got {tuple(order)}")
    out = []
    for name in order:
        if skip_pod_checks and name != ADMISSION:
            out.append(Finding(name, None, skip_pod_checks))
        else:
            out.append(checks[name]())
    return tuple(out)


def diagnose_pod(pod: PodFacts, cluster: Cluster, order: Sequence[str] = ORDER) -> Diagnosis:
    """Diagnose one pending GPU pod. Raises NotDiagnosable (with the reason) for anything else."""
    reason = why_not_diagnosable(pod)
    if reason:
        raise NotDiagnosable(reason)
    workload = _workload_of(pod, cluster.workloads)
    return Diagnosis(pod.key, "pod", _walk(_view(pod, cluster), workload, order, None), tuple(order))


def diagnose_workload(workload: WorkloadFacts, cluster: Cluster, order: Sequence[str] = ORDER) -> Diagnosis:
    """Diagnose one Kueue workload; the device and node checks run against its pod template."""
    template = workload.pod_template
    skip = None
    if template is None or template.gpu_resource is None:
        template = PodFacts(workload.namespace, workload.name, gpu_requests={"nvidia.com/gpu": 1})
        skip = (
            "not checked: the workload's pod template was not observed"
            if workload.pod_template is None
            else "not checked: the workload's pod template asks for no GPU"
        )
    v = _view(template, cluster)
    return Diagnosis(workload.key, "workload", _walk(v, workload, order, skip), tuple(order))


def _workload_of(pod: PodFacts, workloads: Iterable[WorkloadFacts]) -> WorkloadFacts | None:
    if not pod.workload:
        return None
    return next((w for w in workloads if w.namespace == pod.namespace and w.name == pod.workload), None)


def diagnose_all(
    pods: Iterable[PodFacts], cluster: Cluster, order: Sequence[str] = ORDER, namespace: str | None = None
) -> list[Diagnosis]:
    """Every pending GPU pod, then every unadmitted workload that has no such pod (a suspended Job's)."""
    out = []
    seen_workloads = set()
    for pod in pods:
        if namespace and pod.namespace != namespace:
            continue
        if why_not_diagnosable(pod) is None:
            out.append(diagnose_pod(pod, cluster, order))
            if pod.workload:
                seen_workloads.add((pod.namespace, pod.workload))
    for w in cluster.workloads:
        if namespace and w.namespace != namespace:
            continue
        if (w.namespace, w.name) in seen_workloads or (w.admitted and w.job_suspended is not True):
            continue
        if w.is_true("Finished"):
            continue
        out.append(diagnose_workload(w, cluster, order))
    return out
