"""Kubernetes' placement rules, evaluated per node by us: which constraint rules a node out for a pod.

Faithful to the scheduler's filters (k8s.io/api core/v1 `Toleration.ToleratesTaint`, the TaintToleration,
NodeUnschedulable, NodeAffinity and NodeResourcesFit plugins, component-helpers' node affinity):
- a toleration with an empty effect matches every effect; an empty key with operator Exists matches every
  taint; operator "" reads as Equal, and Equal compares values ("" equals "");
- only NoSchedule and NoExecute taints filter; PreferNoSchedule only scores;
- nodeSelector: every key=value must be a node label, exactly;
- required node affinity: the terms are ORed, a term's requirements ANDed; a term with no requirements
  matches nothing; In/NotIn/Exists/DoesNotExist on labels (NotIn and DoesNotExist match a missing label);
  Gt/Lt compare integers, need exactly one integer value, and fail on a label that is not one;
  matchFields knows only metadata.name with In/NotIn and one value; an invalid requirement makes its
  term match nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_finops.diagnose.model import NodeFacts, PodFacts, Requirement, SelectorTerm, Taint, Toleration

FILTERING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "NoSchedule")

# Rules a node can be ruled out by, as short names the key evidence carries.
RULE_NOT_READY = "not-ready"
RULE_UNSCHEDULABLE = "unschedulable"
RULE_TAINT = "taint"
RULE_SELECTOR = "selector"
RULE_AFFINITY = "affinity"
RULE_NO_GPU_RESOURCE = "no-gpu-resource"
RULE_INSUFFICIENT = "insufficient-gpus"


def tolerates(t: Toleration, taint: Taint) -> bool:
    """Kubernetes' ToleratesTaint."""
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    if t.operator in ("", "Equal"):
        return t.value == taint.value
    return t.operator == "Exists"  # any other operator tolerates nothing


def untolerated(tolerations: tuple[Toleration, ...], taints: tuple[Taint, ...]) -> list[Taint]:
    """The node's filtering taints (NoSchedule, NoExecute) that no toleration of the pod tolerates."""
    return [
        taint
        for taint in taints
        if taint.effect in FILTERING_EFFECTS and not any(tolerates(t, taint) for t in tolerations)
    ]


class InvalidRequirement(ValueError):
    """A requirement the API server's selector parsing rejects; its term then matches nothing."""


def _integer(text: str) -> int:
    text = text.strip()
    if not text or not text.lstrip("+-").isdigit():
        raise ValueError(text)
    return int(text, 10)


def label_requirement_matches(r: Requirement, labels: dict[str, str]) -> bool:
    """One matchExpressions requirement against a node's labels; InvalidRequirement if malformed."""
    op, values = r.operator, r.values
    if op in ("In", "NotIn"):
        if not values:
            raise InvalidRequirement(f"{r}: operator {op} needs at least one value")
        if op == "In":
            return r.key in labels and labels[r.key] in values
        return r.key not in labels or labels[r.key] not in values
    if op in ("Exists", "DoesNotExist"):
        if values:
            raise InvalidRequirement(f"{r}: operator {op} takes no values")
        return (r.key in labels) == (op == "Exists")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise InvalidRequirement(f"{r}: operator {op} needs exactly one value")
        try:
            bound = _integer(values[0])
        except ValueError as exc:
            raise InvalidRequirement(f"{r}: {values[0]!r} is not an integer") from exc
        if r.key not in labels:
            return False
        try:
            have = _integer(labels[r.key])
        except ValueError:
            return False  # a label that is not an integer never satisfies Gt/Lt
        return have > bound if op == "Gt" else have < bound
    raise InvalidRequirement(f"{r}: unknown operator {op!r}")


def field_requirement_matches(r: Requirement, node_name: str) -> bool:
    if r.key != "metadata.name":
        raise InvalidRequirement(f"{r}: matchFields supports only metadata.name")
    if r.operator not in ("In", "NotIn") or len(r.values) != 1:
        raise InvalidRequirement(f"{r}: matchFields needs operator In or NotIn and exactly one value")
    return (node_name == r.values[0]) == (r.operator == "In")


def term_matches(term: SelectorTerm, node: NodeFacts) -> bool:
    """A nodeSelectorTerm: every requirement holds; an empty or invalid term matches nothing."""
    if not term.match_expressions and not term.match_fields:
        return False
    try:
        return all(label_requirement_matches(r, node.labels) for r in term.match_expressions) and all(
            field_requirement_matches(r, node.name) for r in term.match_fields
        )
    except InvalidRequirement:
        return False


def affinity_matches(terms: tuple[SelectorTerm, ...] | None, node: NodeFacts) -> bool:
    """Required node affinity: None (none set) matches every node; otherwise any term must match."""
    if terms is None:
        return True
    return any(term_matches(t, node) for t in terms)


def affinity_misses(terms: tuple[SelectorTerm, ...], node: NodeFacts) -> list[str]:
    """Why each term fails on this node, in words (for evidence)."""
    out = []
    for i, term in enumerate(terms):
        if not term.match_expressions and not term.match_fields:
            out.append(f"term {i} is empty (matches no node)")
            continue
        for r in term.match_expressions:
            try:
                if not label_requirement_matches(r, node.labels):
                    have = node.labels.get(r.key)
                    out.append(
                        f"term {i}: {r} (node has {r.key}={have})"
                        if have is not None
                        else f"term {i}: {r} (label absent)"
                    )
            except InvalidRequirement as exc:
                out.append(f"term {i}: invalid: {exc}")
        for r in term.match_fields:
            try:
                if not field_requirement_matches(r, node.name):
                    out.append(f"term {i}: {r}")
            except InvalidRequirement as exc:
                out.append(f"term {i}: invalid: {exc}")
    return out


def selector_misses(selector: dict[str, str], labels: dict[str, str]) -> list[str]:
    return [
        f"{k}={v} (node has {k}={labels[k]})" if k in labels else f"{k}={v} (label absent)"
        for k, v in sorted(selector.items())
        if labels.get(k) != v
    ]


@dataclass(frozen=True)
class RuleOut:
    rule: str  # one of the RULE_* names
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


def constraint_rule_outs(pod: PodFacts, node: NodeFacts) -> list[RuleOut]:
    """Everything in the pod's spec or the node's state (not its free GPUs) that keeps the pod off it."""
    out: list[RuleOut] = []
    if not node.ready:
        out.append(RuleOut(RULE_NOT_READY, "node is not Ready"))
    if node.unschedulable and untolerated(pod.tolerations, (UNSCHEDULABLE_TAINT,)):
        out.append(RuleOut(RULE_UNSCHEDULABLE, "node is cordoned (spec.unschedulable)"))
    bad = untolerated(pod.tolerations, node.taints)
    if bad:
        out.append(RuleOut(RULE_TAINT, "taint " + ", ".join(str(t) for t in bad) + " not tolerated"))
    misses = selector_misses(pod.node_selector, node.labels)
    if misses:
        out.append(RuleOut(RULE_SELECTOR, "nodeSelector " + "; ".join(misses)))
    if pod.required_terms is not None and not affinity_matches(pod.required_terms, node):
        out.append(
            RuleOut(
                RULE_AFFINITY,
                "required node affinity: " + "; ".join(affinity_misses(pod.required_terms, node)),
            )
        )
    return out


def free_gpus(node: NodeFacts, resource: str, holders_requested: int) -> int:
    return node.allocatable.get(resource, 0) - holders_requested


def capacity_rule_out(pod: PodFacts, node: NodeFacts, requested_on_node: int) -> RuleOut | None:
    """NodeResourcesFit for the pod's GPU resource: allocatable minus what bound pods request."""
    resource = pod.gpu_resource
    if resource is None:
        return None
    allocatable = node.allocatable.get(resource, 0)
    if allocatable == 0:
        return RuleOut(RULE_NO_GPU_RESOURCE, f"node advertises no {resource}")
    free = allocatable - requested_on_node
    if free < pod.gpu_count:
        return RuleOut(
            RULE_INSUFFICIENT,
            f"insufficient {resource}: {free} free of {allocatable}, pod asks {pod.gpu_count}",
        )
    return None
