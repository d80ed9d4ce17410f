"""The device checks: allocation (is every GPU held, and by whom), memory (free slots only on cards whose
VRAM is resident) and application (holders starved of input or transfer-bound). Moved from engine.py."""

from __future__ import annotations

from gpu_finops.diagnose import activity as act
from gpu_finops.diagnose import dra
from gpu_finops.diagnose.model import ALLOCATION, APPLICATION, MEMORY, Finding
from gpu_finops.diagnose.view import View, fmt_pct, fmt_sm, not_checked
from gpu_finops.facts.kube_keys import (
    LABEL_MIG_CONFIG,
    LABEL_MIG_CONFIG_STATE,
    LABEL_MIG_STRATEGY,
    MIG_RESOURCE_PREFIX,
)

RECUTTING = (
    "pending",
    "rebooting",
)  # the MIG manager's nvidia.com/mig.config.state while it applies a layout


def mig_elsewhere(v: View) -> Finding | None:
    """Why no node offers the pod's device when MIG nodes exist: the profiles they offer instead, with their
    layouts (`nvidia.com/mig.config`), and any node being re-cut or whose layout failed to apply. None where no
    node is partitioned, and for a pod asking whole cards or replicas while no node is being re-cut."""
    cut = [
        n for n in v.cluster.nodes if n.labels.get(LABEL_MIG_STRATEGY) or n.labels.get(LABEL_MIG_CONFIG_STATE)
    ]
    if not cut:
        return None
    parts, keys, evidence = [], [], {}
    for n in cut:
        offers = {r.removeprefix(MIG_RESOURCE_PREFIX): c for r, c in sorted(n.allocatable.items()) if c}
        layout = n.labels.get(LABEL_MIG_CONFIG, "(no layout label)")
        state = n.labels.get(LABEL_MIG_CONFIG_STATE, "(no state label)")
        evidence[n.name] = {"layout": layout, "state": state, "offers": offers}
        if state in RECUTTING:
            parts.append(
                f"{n.name} is being re-cut to MIG layout {layout} ({LABEL_MIG_CONFIG_STATE}={state})"
            )
            keys.append(f"mig-reconfiguring:{n.name}")
        elif state == "failed":
            parts.append(f"{n.name}'s MIG layout {layout} failed to apply ({LABEL_MIG_CONFIG_STATE}=failed)")
            keys.append(f"mig-config-failed:{n.name}")
        elif offers:
            shown = ", ".join(f"{c} x {r}" for r, c in offers.items())
            parts.append(f"{n.name} offers {shown} (MIG layout {layout})")
            keys += [f"offers:{n.name}:{r}" for r in offers]
    if not v.resource.startswith(MIG_RESOURCE_PREFIX) and not any(k.startswith("mig-") for k in keys):
        return None  # whole cards or replicas asked, no node being re-cut: a node to launch, said below
    asked = v.resource.removeprefix(MIG_RESOURCE_PREFIX)
    head = f"asks {asked}" if v.resource.startswith(MIG_RESOURCE_PREFIX) else f"asks {v.resource}"
    return Finding(
        ALLOCATION,
        True,
        f"{head}; no Ready, schedulable node offers it: "
        + "; ".join(parts or ["the MIG nodes offer nothing"]),
        f"ask for a profile a node offers, or have a node re-cut to a layout with {asked} ({LABEL_MIG_CONFIG} "
        "on the node; the MIG manager applies it) and wait for its state to read success",
        {"resource": v.resource, "mig_nodes": evidence},
        (f"mig-profile-unavailable:{v.resource}", *keys),
    )


def check_allocation(v: View) -> Finding:
    return dra.on_the_fleet(v, ALLOCATION, _plugin_allocation, dra.check_dra_allocation)


def _plugin_allocation(v: View) -> Finding:
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
        mig = mig_elsewhere(v)
        if mig is not None:
            return mig
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


def check_memory(v: View) -> Finding:
    if not v.stats_known:
        return not_checked(MEMORY, v.cluster)
    pod = v.pod
    if pod.node_name and (mps := v.mps_limit(pod.node_name)) is not None:
        limit = mps["client_limit_mib"]
        cap = (
            f"{limit} MiB ({mps['card_memory_mib']} MiB / {mps['clients_per_card']})"
            if limit
            else (f"1/{mps['clients_per_card']} of its card's memory")
        )
        return Finding(
            MEMORY,
            False,
            f"bound to {pod.node_name}, which shares its cards by MPS: the control daemon caps each client at {cap}, "
            "so the other clients cannot take this one's memory; a workload that needs more than its cap fails on "
            "any client of these cards (ask for a whole card or a MIG slice with the memory)",
            evidence={"node": pod.node_name, "mps": mps},
            key_evidence=(f"mps-client-limit:{pod.node_name}",),
        )
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
                f"({', '.join(f'{u} {fmt_pct(a.fb_ratio)}' for u, a in full)}): the pod cannot get memory there",
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
    mps = {n: m for n in room if (m := v.mps_limit(n)) is not None}
    if mps:
        evidence["mps"] = mps
    if any(r is True for r in room.values()):
        ok = [
            n + (" (MPS: each client's memory capped at its share)" if n in mps else "")
            for n, r in room.items()
            if r
        ]
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
        f"card's VRAM is resident ({', '.join(f'{n}/{u} {fmt_pct(a.fb_ratio)} used, SM {fmt_sm(a.sm_active)}' for n, u, a in full)})"
        + (": held warm without matching compute" if low_sm else ""),
        _MEMORY_ACTION,
        evidence,
        tuple(f"vram-full:{n}/{u}" for n, u, _ in full),
    )


_MEMORY_ACTION = (
    "time-slicing shares compute time, not memory: move, shrink (quantize, offload) or consolidate the "
    "resident model, use MIG for memory isolation, or keep the pod off those cards"
)


def check_application(v: View) -> Finding:
    if not v.stats_known:
        return not_checked(APPLICATION, v.cluster)
    pod = v.pod
    nodes = [pod.node_name] if pod.node_name else [n.name for n in v.gpu_nodes() if not v.rule_outs(n)]
    allowed = set(nodes)
    if not pod.node_name and any(
        v.fits(n) and v.memory_room(n.name) is not False
        for n in v.gpu_nodes()
        if n.name in allowed and v.usable(n)
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
            f"{h.key} is data-starved (SM {fmt_sm(a.sm_active)}, PCIe {(a.pcie_bps or 0) / 1e6:.1f} MB/s)"  # type: ignore[union-attr]
        )
    if starved:
        actions.append(
            "feed the starved holder: faster data source, async I/O, more loader workers, prefetch"
        )
    for h in small:
        a = v.holder_activity[h.key]
        parts.append(
            f"{h.key} is transfer-bound (PCIe {(a.pcie_bps or 0) / 1e9:.2f} GB/s, SM occupancy {fmt_sm(a.sm_occupancy)})"  # type: ignore[union-attr]
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
