"""The collector's per-node, per-resource share gauge: the held-GPU model's reading the ledger's rules join."""

from __future__ import annotations

from datetime import UTC, datetime

from gpu_finops.clients.nodes import GpuNode
from gpu_finops.cost.metrics import CollectorMetrics
from gpu_finops.facts.collector_metrics import DEVICE_SHARE, NODE_UNREADABLE


def _node(name: str, labels: dict[str, str], capacity: dict[str, str]) -> GpuNode:
    return GpuNode(
        name,
        "p5.48xlarge",
        "on-demand",
        "us-east-1a",
        "gpu",
        None,
        8,
        datetime(2026, 1, 1, tzinfo=UTC),
        labels={"node.kubernetes.io/instance-type": "p5.48xlarge", **labels},
        capacity=capacity,
    )


def _unreadable(metrics: CollectorMetrics) -> dict[str, float]:
    return {
        s.labels["node"]: s.value
        for m in metrics.registry.collect()
        if m.name == NODE_UNREADABLE
        for s in m.samples
    }


def _shares(metrics: CollectorMetrics) -> dict[tuple[str, str], float]:
    return {
        (s.labels["node"], s.labels["resource"]): s.value
        for m in metrics.registry.collect()
        if m.name == DEVICE_SHARE
        for s in m.samples
    }


def test_each_resource_of_a_node_is_exported_at_the_share_of_a_card_one_device_is_worth():
    metrics = CollectorMetrics()
    mixed = {"nvidia.com/mig.strategy": "mixed"}
    problems = metrics.observe_shares(
        [
            _node("mig", mixed, {"nvidia.com/mig-1g.20gb": "16", "nvidia.com/mig-3g.40gb": "12"}),
            _node("sliced", {"nvidia.com/gpu.replicas": "4"}, {"nvidia.com/gpu": "32"}),
        ]
    )
    assert problems == []
    # 8 cards: 16 x g1 + 12 x g3 = 52 compute slices, so a 1g slice is 8/52 of a card, a 3g one 24/52
    assert _shares(metrics) == {
        ("mig", "nvidia_com_mig_1g_20gb"): 8 / 52,
        ("mig", "nvidia_com_mig_3g_40gb"): 24 / 52,
        ("sliced", "nvidia_com_gpu"): 0.25,
    }


def test_a_node_the_model_refuses_exports_no_share_and_is_a_problem_naming_it():
    metrics = CollectorMetrics()
    metrics.observe_shares([_node("a", {}, {"nvidia.com/gpu": "8"})])
    problems = metrics.observe_shares([_node("mig", {}, {"nvidia.com/mig-1g.10gb": "56"})])
    assert _shares(metrics) == {}  # the earlier cycle's node is gone from the gauge too
    assert len(problems) == 1
    assert problems[0].startswith(
        "node mig: capacity ['nvidia.com/mig-1g.10gb'] without nvidia.com/mig.strategy=mixed (it is absent)"
    )
    assert problems[0].endswith("its devices' shares are not exported, so the ledger cannot count them")
    assert _unreadable(metrics) == {"mig": 1.0}, "the ledger guesses no share for a node the model refused"


def test_a_failed_cycle_leaves_no_share_from_an_earlier_one():
    metrics = CollectorMetrics()
    metrics.observe_shares(
        [_node("a", {}, {"nvidia.com/gpu": "8"}), _node("b", {}, {"nvidia.com/mig-1g.10gb": "7"})]
    )
    assert _shares(metrics) and _unreadable(metrics)
    metrics.cycle_failed()
    assert (_shares(metrics), _unreadable(metrics)) == ({}, {})


def _samples(metrics: CollectorMetrics, name: str, *labels: str) -> dict[tuple[str, ...], float]:
    return {
        tuple(s.labels[k] for k in labels): s.value
        for m in metrics.registry.collect()
        if m.name == name
        for s in m.samples
    }


def test_a_dra_node_exports_its_published_cards_installed_and_schedulable_and_no_share():
    from dataclasses import replace
    from fractions import Fraction

    from gpu_finops.facts.collector_metrics import DRA_GPUS
    from gpu_finops.model.dra import NodeCards

    metrics = CollectorMetrics()
    dra = replace(_node("dra", {}, {"cpu": "192"}), dra=NodeCards(Fraction(8), Fraction(7)))
    assert metrics.observe_shares([dra, _node("a", {}, {"nvidia.com/gpu": "8"})]) == []
    assert _samples(metrics, DRA_GPUS, "node", "state") == {
        ("dra", "installed"): 8.0,
        ("dra", "schedulable"): 7.0,
    }
    assert _shares(metrics) == {("a", "nvidia_com_gpu"): 1.0}
    metrics.cycle_failed()
    assert _samples(metrics, DRA_GPUS, "node", "state") == {}


def test_only_pods_still_holding_through_claims_are_exported_at_the_cards_they_hold():
    from fractions import Fraction

    from gpu_finops.cost.gpu_holdings import GpuHolding
    from gpu_finops.facts.collector_metrics import POD_DRA_GPUS

    t = datetime(2026, 1, 1, tzinfo=UTC)
    metrics = CollectorMetrics()
    held = [
        GpuHolding("t-a", "a", "shared", "dra", 1, t, equivalents=Fraction(1, 2), claims=("c",)),
        GpuHolding("t-a", "a", "done", "dra", 1, t, end=t, equivalents=Fraction(1), claims=("d",)),
        GpuHolding("t-a", "a", "plugin", "g1", 1, t),  # the device plugin's: read from kube-state-metrics
    ]
    metrics.observe_claims(held)
    assert _samples(metrics, POD_DRA_GPUS, "namespace", "pod", "node") == {("t-a", "shared", "dra"): 0.5}
    metrics.observe_claims(None)  # holdings not read: none, not the last cycle's
    assert _samples(metrics, POD_DRA_GPUS, "namespace", "pod", "node") == {}
