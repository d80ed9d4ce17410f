"""The placement check: do the pod's own constraints rule out every node with room? (moved from engine.py)"""

from __future__ import annotations

from gpu_finops.diagnose.dra import check_dra_placement, on_the_fleet
from gpu_finops.diagnose.model import PLACEMENT, Finding
from gpu_finops.diagnose.scheduling import (
    RULE_AFFINITY,
    RULE_NOT_READY,
    RULE_SELECTOR,
    RULE_TAINT,
    RULE_UNSCHEDULABLE,
    RuleOut,
    capacity_rule_out,
)
from gpu_finops.diagnose.view import View


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


def check_placement(v: View) -> Finding:
    return on_the_fleet(v, PLACEMENT, _plugin_placement, check_dra_placement)


def _plugin_placement(v: View) -> Finding:
    pod = v.pod
    if pod.node_name:
        return Finding(PLACEMENT, False, f"the scheduler placed the pod on {pod.node_name}")
    per_node: dict[str, list[RuleOut]] = {}
    capacity: dict[str, RuleOut | None] = {}
    for n in v.gpu_nodes():
        per_node[n.name] = v.rule_outs(n)
        capacity[n.name] = capacity_rule_out(pod, n, v.held.get(n.name, 0))
    other_nodes = [n.name for n in v.cluster.nodes if n.allocatable.get(v.resource, 0) == 0]
    evidence: dict[str, object] = {
        "nodes": {
            name: {
                "ruled_out_by": [str(r) for r in rules],
                "free": v.free(v.node(name)),
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
