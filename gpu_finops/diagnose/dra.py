"""The allocation check for a pod whose GPUs come from Dynamic Resource Allocation: its ResourceClaims (through a
template, by name, or the scheduler's claim for `nvidia.com/gpu` served from a DeviceClass), the devices the GPU
driver publishes of each class they ask for, and the scheduler's own reason.

The scheduler's DRA plugin (kubernetes v1.36 `pkg/scheduler/framework/plugins/dynamicresources`) writes its
reason per node into the FailedScheduling message (`0/5 nodes are available: 1 cannot allocate all claims, ...`);
each reason it writes, and what it means, is in `REASONS`. The devices are counted per node: free (allocated to
no claim and tainted by no NoSchedule/NoExecute taint), tainted, and held (by which claim)."""

from __future__ import annotations

import re
from collections.abc import Callable

from gpu_finops.diagnose.model import (
    ALLOCATION,
    EXTENDED_CLAIM,
    PLACEMENT,
    DraFacts,
    Finding,
    PodClaim,
    Toleration,
)
from gpu_finops.diagnose.scheduling import untolerated
from gpu_finops.diagnose.view import View

# the GPU driver's DeviceClasses (NVIDIA's chart) and the device type each selects (`type == 'gpu'`)
CLASS_KINDS = {"gpu.nvidia.com": "gpu", "mig.nvidia.com": "mig"}

# the scheduler's DRA reasons, as it writes them, and what each means for the pod. The scheduler's message lists
# them after "nodes are available: ", each as "<nodes> <reason>" (a Filter's) or "<reason>" alone (a PreFilter's),
# separated by ", " and ended by "." (kubernetes v1.36 `framework.FitError`): a reason is read only as one such item
REASONS: dict[str, str] = {
    "cannot allocate all claims": "no node has devices free that satisfy every request of its claims",
    "resourceclaim not available on the node": "a claim of it is already allocated on another node",
    "resourceclaim in use": "a claim of it is allocated and reserved for as many pods as a claim may be",
    "cannot schedule extended resource claim": "its extended-resource claim is from an earlier attempt and is "
    "being recreated",
    "cannot fit resource": "a node neither advertises the resource nor serves it from a DeviceClass",
    "device class does not exist": "a request names a DeviceClass that does not exist",
}
_PATTERNS = {
    reason: re.compile(
        r"(?:^|, )(?:\d+ )?"
        + (
            r"request [^,:]+: device class \S+ does not exist"
            if reason == "device class does not exist"
            else re.escape(reason)
        )
        + r"(?=[,.]|$)"
    )
    for reason in REASONS
}


def dra_claims_of(v: View) -> tuple[PodClaim, ...]:
    """The pod's claims, with the scheduler's claim for an extended resource a DeviceClass serves, where a node
    that does not advertise the resource publishes devices of that class (the scheduler serves it from DRA on
    exactly such nodes; on a node that advertises it, the device plugin does)."""
    pod, dra = v.pod, v.cluster.dra
    claims = list(pod.claims)
    resource = pod.gpu_resource or ""
    if dra is None or resource not in dra.extended or any(c.name == EXTENDED_CLAIM for c in claims):
        return tuple(claims)
    kind = CLASS_KINDS.get(dra.extended[resource])
    advertising = {n.name for n in v.cluster.nodes if n.allocatable.get(resource, 0)}
    if (
        kind is None
        or any(d.kind == kind and d.node not in advertising for d in dra.devices)
        or not advertising
    ):
        claims.append(PodClaim(EXTENDED_CLAIM, None, None, ((dra.extended[resource], pod.gpu_count),)))
    return tuple(claims)


def extended_only(v: View, claims: tuple[PodClaim, ...]) -> bool:
    """The pod's only claim is the scheduler's for its extended resource: the device plugin's nodes or the DRA
    ones may serve it, either."""
    return all(c.name == EXTENDED_CLAIM and c not in v.pod.claims for c in claims)


def on_the_fleet(
    v: View,
    step: str,
    plugin_check: Callable[[View], Finding],
    dra_check: Callable[[View, tuple[PodClaim, ...]], Finding],
) -> Finding:
    """One check of a pod (`step`: allocation or placement) on the fleet as it is: the device plugin's reading
    where the pod has no DRA claim or is bound, DRA's where no node advertises its resource, and on a fleet of
    both, the two together: for an extended resource either may serve it (it waits on this step only if
    neither can), for its own claims beside a plugin resource both must be met (it waits if either cannot)."""
    pod = v.pod
    claims = dra_claims_of(v)
    if not claims or pod.node_name:
        return plugin_check(v)
    on_dra = dra_check(v, claims)
    if not pod.gpu_resource or not any(n.allocatable.get(pod.gpu_resource, 0) for n in v.cluster.nodes):
        return on_dra
    on_plugin = plugin_check(v)
    either = extended_only(v, claims)
    verdicts = {on_plugin.explains, on_dra.explains}
    if either:
        explains = False if False in verdicts else True if verdicts == {True} else None
    else:
        explains = True if True in verdicts else False if verdicts == {False} else None
    return Finding(
        step,
        explains,
        f"{'either' if either else 'both'}: on the device plugin's nodes, {on_plugin.summary}; on DRA nodes, "
        f"{on_dra.summary}",
        on_dra.next_action if on_dra.explains else on_plugin.next_action,
        {"device_plugin": on_plugin.evidence, "dra": on_dra.evidence},
        on_plugin.key_evidence + on_dra.key_evidence,
    )


def _reason(*messages: str | None) -> str | None:
    """The first DRA reason the scheduler's messages name, in REASONS' order: its newest FailedScheduling event,
    then its PodScheduled condition (Karpenter writes FailedScheduling events of its own, which may be newer)."""
    for message in messages:
        _, sep, items = (message or "").partition("nodes are available: ")
        if not sep:
            continue  # not the scheduler's FitError (another component's words)
        items = items.split(". ")[0]  # the list ends at its first sentence's end
        found = next((r for r, p in _PATTERNS.items() if p.search(items)), None)
        if found:
            return found
    return None


def _devices(
    dra: DraFacts, kind: str, usable: set[str], tolerations: tuple[Toleration, ...] = ()
) -> dict[str, dict[str, object]]:
    """Per usable node, the devices of `kind`: free (held by no claim, every taint tolerated by the asking claims'
    requests), tainted (each with the taints not tolerated) and held (by which claim)."""
    held = {(p, d): f"{c.namespace}/{c.name}" for c in dra.claims for p, d in c.allocated}
    out: dict[str, dict[str, object]] = {}
    for d in dra.devices:
        if d.kind != kind or d.node not in usable:
            continue
        row = out.setdefault(d.node, {"free": 0, "tainted": {}, "held": {}})
        kept_off = untolerated(tolerations, d.taints)
        if (d.pool, d.name) in held:
            row["held"][d.name] = held[(d.pool, d.name)]  # type: ignore[index]
        elif kept_off:
            row["tainted"][d.name] = [str(t) for t in kept_off]  # type: ignore[index]
        else:
            row["free"] = int(row["free"]) + 1  # type: ignore[call-overload]
    return out


def check_dra_allocation(v: View, claims: tuple[PodClaim, ...]) -> Finding:
    """The allocation finding for a pod with DRA claims: the scheduler's reason naming the claim(s), else whether
    any usable node has enough free devices of each class asked."""
    pod, dra = v.pod, v.cluster.dra
    if dra is None:
        return Finding(
            ALLOCATION,
            None,
            f"not checked: the pod asks for devices through ResourceClaims ({', '.join(c.label for c in claims)}) "
            "and the cluster's ResourceSlices and ResourceClaims were not read",
        )
    if dra.problem:
        return Finding(
            ALLOCATION,
            None,
            f"not checked: the pod asks for devices through ResourceClaims ({', '.join(c.label for c in claims)}) "
            f"and the DRA driver's devices or claims cannot be read: {dra.problem}",
        )
    usable = {n.name for n in v.cluster.nodes if n.ready and not n.unschedulable}
    rows, asked, unknown = {}, {}, []
    by_name = {(c.namespace, c.name): c for c in dra.claims}
    for c in claims:
        facts = by_name.get((pod.namespace, c.claim)) if c.claim else None
        requests = facts.requests if facts else c.requests
        rows[c.name] = {
            "claim": c.claim or f"not made yet{f' (template {c.template})' if c.template else ''}",
            "requests": [f"{n} x {cls}" if n >= 0 else f"all of {cls}" for cls, n in requests],
            "allocated": [f"{p}/{d}" for p, d in facts.allocated] if facts else [],
            "reserved_for": list(facts.reserved_for) if facts else [],
        }
        for cls, n in requests:
            if cls not in CLASS_KINDS:
                unknown.append(cls)
            elif not (facts and facts.allocated):
                asked[cls] = asked.get(cls, 0) + max(n, 1)
    tolerations = tuple(
        t for c in claims if (f := by_name.get((pod.namespace, c.claim or ""))) for t in f.tolerations
    )
    devices = {cls: _devices(dra, CLASS_KINDS[cls], usable, tolerations) for cls in asked}
    evidence = {
        "claims": rows,
        "devices": devices,
        "scheduler_message": pod.scheduler_message,
        "pod_scheduled_message": pod.condition_message,
    }
    names = ", ".join(
        f"{pod.namespace}/{c.claim}" if c.claim else f"{c.name} ({rows[c.name]['claim']})" for c in claims
    )
    keys = tuple(f"dra-claim:{pod.namespace}/{c.claim}" for c in claims if c.claim)
    reason = _reason(pod.scheduler_message, pod.condition_message)
    if reason:
        return Finding(
            ALLOCATION,
            True,
            f'the scheduler cannot allocate its claim(s) {names}: "{reason}" ({REASONS[reason]})'
            + _free_said(devices, asked),
            _action(reason),
            evidence,
            (*keys, f"dra-reason:{reason}"),
        )
    missing = [c.claim for c in claims if c.claim and (pod.namespace, c.claim) not in by_name]
    if missing:
        return Finding(
            ALLOCATION,
            None,
            f"not checked: the pod's claim(s) {', '.join(f'{pod.namespace}/{m}' for m in missing)} were not found "
            "among the cluster's ResourceClaims",
            "see whether the claim was deleted, or is in another namespace (a pod uses claims of its own)",
            evidence,
            keys,
        )
    unread = {
        f"{pod.namespace}/{f.name}": f.problem
        for c in claims
        if (f := by_name.get((pod.namespace, c.claim or ""))) and f.problem
    }
    if unread:
        return Finding(
            ALLOCATION,
            None,
            "not checked: " + "; ".join(f"claim {k}: {why}" for k, why in unread.items()),
            evidence=evidence,
            key_evidence=keys,
        )
    short = {
        cls: n for cls, n in asked.items() if not any(int(r["free"]) >= n for r in devices[cls].values())
    }
    if short:
        return Finding(
            ALLOCATION,
            True,
            f"no Ready, schedulable node has the devices its claim(s) {names} ask for free:"
            + _free_said(devices, short),
            _action("cannot allocate all claims"),
            evidence,
            (*keys, *(f"dra-short:{cls}" for cls in short)),
        )
    if unknown:
        return Finding(
            ALLOCATION,
            None,
            f"not checked: its claim(s) {names} ask DeviceClass(es) {sorted(set(unknown))}, whose devices this "
            f"diagnosis does not read (it reads {sorted(CLASS_KINDS)})",
            evidence=evidence,
            key_evidence=keys,
        )
    if not asked:
        return Finding(
            ALLOCATION,
            False,
            f"its claim(s) {names} are allocated already ("
            + "; ".join(
                f"{k}: {', '.join(r['allocated'])}, reserved for {r['reserved_for'] or 'no pod yet'}"
                for k, r in rows.items()
                if r["allocated"]
            )
            + "): the pod can run only where they are, which placement checks",
            evidence=evidence,
            key_evidence=keys,
        )
    return Finding(
        ALLOCATION,
        False,
        f"devices its claim(s) {names} ask for are free:" + _free_said(devices, asked),
        evidence=evidence,
        key_evidence=keys,
    )


def _free_said(devices: dict[str, dict[str, dict[str, object]]], asked: dict[str, int]) -> str:
    parts = []
    for cls, n in asked.items():
        nodes = devices.get(cls, {})
        free = {node: int(r["free"]) for node, r in nodes.items()}  # type: ignore[call-overload]
        tainted = sum(len(r["tainted"]) for r in nodes.values())  # type: ignore[arg-type]
        held = sum(len(r["held"]) for r in nodes.values())  # type: ignore[arg-type]
        most = max(free.values(), default=0)
        parts.append(
            f" {cls}: {n} asked, at most {most} free on one node ({sum(free.values())} free, {held} held, "
            f"{tainted} tainted on {len(nodes)} usable node(s))"
        )
    return ";".join(parts)


def _action(reason: str) -> str:
    return {
        "resourceclaim not available on the node": "the claim is bound to another node: let the pod go there "
        "(its constraints) or delete and recreate the claim",
        "resourceclaim in use": "the claim is reserved by other pods: wait for them to end, or give this pod its "
        "own claim (a ResourceClaimTemplate)",
        "device class does not exist": "create the DeviceClass (the driver's chart), or fix the request's deviceClassName",
        "cannot fit resource": "install the DRA driver's DeviceClass with extendedResourceName, or a device plugin",
    }.get(
        reason,
        "free devices of the class (see who holds them in the evidence), untaint tainted devices once repaired, "
        "or add a node (Karpenter) whose driver publishes more",
    )


def check_dra_placement(v: View, claims: tuple[PodClaim, ...]) -> Finding:
    """Do the pod's own constraints rule out every node it could get its devices on: the node its allocated claims
    are on, else every node whose driver publishes devices of the classes its claims ask?"""
    pod, dra = v.pod, v.cluster.dra
    if pod.node_name:
        return Finding(PLACEMENT, False, f"the scheduler placed the pod on {pod.node_name}")
    if dra is None or dra.problem:
        why = dra.problem if dra else "the cluster's ResourceSlices were not read"
        return Finding(PLACEMENT, None, f"not checked: {why}")
    by_name = {(c.namespace, c.name): c for c in dra.claims}
    missing = [c.claim for c in claims if c.claim and (pod.namespace, c.claim) not in by_name]
    if missing:
        return Finding(
            PLACEMENT, None, f"not checked: the pod's claim(s) {', '.join(missing)} were not found"
        )
    kinds: set[str] = set()
    pinned: set[str] | None = None  # the nodes every allocated claim's devices are on
    where = {(d.pool, d.name): d.node for d in dra.devices}
    for c in claims:
        facts = by_name.get((pod.namespace, c.claim)) if c.claim else None
        kinds |= {
            CLASS_KINDS[cls] for cls, _ in (facts.requests if facts else c.requests) if cls in CLASS_KINDS
        }
        if facts and facts.allocated:
            on = {where.get(a, "") for a in facts.allocated}
            pinned = on if pinned is None else pinned & on
    if pinned is None and not kinds:
        return Finding(PLACEMENT, None, "not checked: its claims ask no DeviceClass this diagnosis reads")
    candidates = pinned if pinned is not None else {d.node for d in dra.devices if d.kind in kinds}
    nodes = [n for n in v.cluster.nodes if n.name in candidates]
    per_node = {n.name: v.rule_outs(n) for n in nodes}
    evidence = {
        "nodes": {n: [str(r) for r in rs] for n, rs in per_node.items()},
        "claims_allocated_on": sorted(pinned) if pinned is not None else None,
    }
    what = (
        f"the node(s) its allocated claim(s) are on ({', '.join(sorted(pinned))})"
        if pinned is not None
        else "every node whose DRA driver publishes the devices it asks for"
    )
    if per_node and all(per_node.values()):
        return Finding(
            PLACEMENT,
            True,
            f"the pod's constraints rule out {what}: "
            + "; ".join(f"{n}: {', '.join(str(r) for r in rs)}" for n, rs in per_node.items()),
            "add a toleration, relax the pod's nodeSelector / required node affinity, or uncordon the node",
            evidence,
            tuple(f"ruled-out:{n}:{r.rule}" for n, rs in per_node.items() for r in rs),
        )
    if not per_node:
        return Finding(
            PLACEMENT,
            pinned is not None or None,
            f"no node left for it: {what} are none of the cluster's nodes"
            if pinned is not None
            else f"no node's DRA driver publishes {sorted(kinds)} devices: nothing to place on",
            evidence=evidence,
        )
    allowed = [n for n, rs in per_node.items() if not rs]
    return Finding(PLACEMENT, False, f"the pod's constraints allow {', '.join(allowed)}", evidence=evidence)
