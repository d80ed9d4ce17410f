"""Kubernetes' placement rules as the diagnosis evaluates them per node: every toleration and node
affinity operator, with the edge cases the scheduler has (empty effect, empty key, missing labels)."""

from __future__ import annotations

import pytest

from gpu_finops.diagnose.model import NodeFacts, PodFacts, Requirement, SelectorTerm, Taint, Toleration
from gpu_finops.diagnose.scheduling import (
    RULE_AFFINITY,
    RULE_INSUFFICIENT,
    RULE_NO_GPU_RESOURCE,
    RULE_NOT_READY,
    RULE_SELECTOR,
    RULE_TAINT,
    RULE_UNSCHEDULABLE,
    affinity_matches,
    capacity_rule_out,
    constraint_rule_outs,
    tolerates,
    untolerated,
)

GPU_TAINT = Taint("nvidia.com/gpu", "NoSchedule", "present")


@pytest.mark.parametrize(
    "toleration, taint, expected",
    [
        (Toleration("nvidia.com/gpu", "Equal", "present", "NoSchedule"), GPU_TAINT, True),
        (Toleration("nvidia.com/gpu", "", "present", "NoSchedule"), GPU_TAINT, True),  # "" reads as Equal
        (Toleration("nvidia.com/gpu", "Equal", "absent", "NoSchedule"), GPU_TAINT, False),
        (Toleration("nvidia.com/gpu", "Equal", "", "NoSchedule"), GPU_TAINT, False),
        (Toleration("nvidia.com/gpu", "Equal", "", ""), Taint("nvidia.com/gpu", "NoSchedule"), True),
        (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"), GPU_TAINT, True),
        (Toleration("nvidia.com/gpu", "Exists"), GPU_TAINT, True),  # empty effect: every effect
        (Toleration("nvidia.com/gpu", "Exists", "", "NoExecute"), GPU_TAINT, False),
        (Toleration("nvidia.com/gpu", "Equal", "present", "PreferNoSchedule"), GPU_TAINT, False),
        (Toleration("other", "Exists"), GPU_TAINT, False),
        (Toleration("", "Exists"), GPU_TAINT, True),  # empty key + Exists: everything
        (Toleration("", "Exists", "", "NoExecute"), GPU_TAINT, False),  # ... but only its effect
        (Toleration("nvidia.com/gpu", "Gt", "1"), GPU_TAINT, False),  # unknown operator: nothing
    ],
)
def test_toleration_matches_taint_as_kubernetes_does(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


def test_prefer_no_schedule_never_filters():
    soft = Taint("team", "PreferNoSchedule", "a")
    hard = Taint("team", "NoExecute", "a")
    assert untolerated((), (soft,)) == []
    assert untolerated((), (soft, hard)) == [hard]


def node(labels: dict[str, str] | None = None, name: str = "gpu-a", **kw) -> NodeFacts:
    return NodeFacts(name, labels=labels or {}, **kw)


LABELS = {"zone": "a", "gpu-mem": "48", "tier": "prod", "weird": "x12"}


@pytest.mark.parametrize(
    "req, expected",
    [
        (Requirement("zone", "In", ("a", "b")), True),
        (Requirement("zone", "In", ("b",)), False),
        (Requirement("missing", "In", ("a",)), False),
        (Requirement("zone", "NotIn", ("b",)), True),
        (Requirement("zone", "NotIn", ("a",)), False),
        (Requirement("missing", "NotIn", ("a",)), True),  # a missing label satisfies NotIn
        (Requirement("zone", "Exists"), True),
        (Requirement("missing", "Exists"), False),
        (Requirement("zone", "DoesNotExist"), False),
        (Requirement("missing", "DoesNotExist"), True),
        (Requirement("gpu-mem", "Gt", ("40",)), True),
        (Requirement("gpu-mem", "Gt", ("48",)), False),  # strictly greater
        (Requirement("gpu-mem", "Lt", ("80",)), True),
        (Requirement("gpu-mem", "Lt", ("48",)), False),
        (Requirement("missing", "Gt", ("1",)), False),
        (Requirement("weird", "Gt", ("1",)), False),  # label not an integer
        (Requirement("gpu-mem", "Gt", ("forty",)), False),  # invalid: the term matches nothing
        (Requirement("gpu-mem", "Gt", ("1", "2")), False),  # invalid: Gt takes exactly one value
        (Requirement("zone", "In", ()), False),  # invalid: In needs values
        (Requirement("zone", "Exists", ("a",)), False),  # invalid: Exists takes none
        (Requirement("zone", "Matches", ("a",)), False),  # unknown operator
    ],
)
def test_each_node_affinity_operator(req, expected):
    assert affinity_matches((SelectorTerm((req,)),), node(LABELS)) is expected


def test_terms_are_ored_requirements_anded_empty_term_matches_nothing():
    in_a = Requirement("zone", "In", ("a",))
    prod = Requirement("tier", "In", ("prod",))
    dev = Requirement("tier", "In", ("dev",))
    n = node(LABELS)
    assert affinity_matches((SelectorTerm((in_a, prod)),), n)
    assert not affinity_matches((SelectorTerm((in_a, dev)),), n)
    assert affinity_matches((SelectorTerm((in_a, dev)), SelectorTerm((prod,))), n)
    assert not affinity_matches((SelectorTerm(),), n)
    assert not affinity_matches((), n)  # terms given but none: nothing
    assert affinity_matches(None, n)  # no required affinity: every node


def test_match_fields_only_metadata_name():
    n = node(LABELS, name="gpu-b")
    assert affinity_matches(
        (SelectorTerm(match_fields=(Requirement("metadata.name", "In", ("gpu-b",)),)),), n
    )
    assert not affinity_matches(
        (SelectorTerm(match_fields=(Requirement("metadata.name", "NotIn", ("gpu-b",)),)),), n
    )
    assert not affinity_matches(
        (SelectorTerm(match_fields=(Requirement("metadata.uid", "In", ("gpu-b",)),)),), n
    )
    assert not affinity_matches(
        (SelectorTerm(match_fields=(Requirement("metadata.name", "In", ("gpu-a", "gpu-b")),)),), n
    )


def pod(**kw) -> PodFacts:
    return PodFacts("team-a", "train-0", gpu_requests={"nvidia.com/gpu": 1}, **kw)


@pytest.mark.parametrize(
    "p, n, rules, detail",
    [
        (pod(), node(), [], ""),
        (pod(), node(ready=False), [RULE_NOT_READY], "not Ready"),
        (pod(), node(unschedulable=True), [RULE_UNSCHEDULABLE], "cordoned"),
        (
            pod(tolerations=(Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"),)),
            node(unschedulable=True),
            [],
            "",
        ),
        (
            pod(),
            node(taints=(GPU_TAINT,)),
            [RULE_TAINT],
            "taint nvidia.com/gpu=present:NoSchedule not tolerated",
        ),
        (pod(tolerations=(Toleration("nvidia.com/gpu", "Exists"),)), node(taints=(GPU_TAINT,)), [], ""),
        (pod(node_selector={"zone": "b"}), node({"zone": "a"}), [RULE_SELECTOR], "zone=b (node has zone=a)"),
        (pod(node_selector={"zone": "b"}), node({}), [RULE_SELECTOR], "zone=b (label absent)"),
        (
            pod(required_terms=(SelectorTerm((Requirement("zone", "In", ("b",)),)),)),
            node({"zone": "a"}),
            [RULE_AFFINITY],
            "zone In ['b'] (node has zone=a)",
        ),
        (
            pod(node_selector={"zone": "b"}, required_terms=(SelectorTerm(),)),
            node({"zone": "a"}, taints=(GPU_TAINT,)),
            [RULE_TAINT, RULE_SELECTOR, RULE_AFFINITY],
            "term 0 is empty",
        ),
    ],
)
def test_constraint_rule_outs_name_each_rule(p, n, rules, detail):
    outs = constraint_rule_outs(p, n)
    assert [o.rule for o in outs] == rules
    assert detail in " | ".join(str(o) for o in outs)


def test_capacity_counts_what_bound_pods_request():
    n = node(allocatable={"nvidia.com/gpu": 4})
    assert capacity_rule_out(pod(), n, 3) is None
    out = capacity_rule_out(pod(), n, 4)
    assert out is not None and out.rule == RULE_INSUFFICIENT
    assert str(out) == "insufficient-gpus: insufficient nvidia.com/gpu: 0 free of 4, pod asks 1"
    shared = PodFacts("ns", "p", gpu_requests={"nvidia.com/gpu.shared": 1})
    out = capacity_rule_out(shared, n, 0)
    assert out is not None and out.rule == RULE_NO_GPU_RESOURCE
