"""A pod asking a MIG profile no node offers: the diagnosis names the profiles the MIG nodes offer instead with
their layouts, a node being re-cut, and a layout that failed; whole-card pods keep the advice to launch a node."""

from __future__ import annotations

import pytest

from gpu_finops.diagnose.engine import diagnose_pod
from gpu_finops.diagnose.model import ALLOCATION, NodeFacts, PodFacts
from tests.gpu_finops.diagnose import diagnose_fixtures as fx


def mig_node(name: str, layout: str, state: str, offers: dict[str, int]) -> NodeFacts:
    labels = {"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": layout,
              "nvidia.com/mig.config.state": state, "nvidia.com/gpu.count": "8"}  # fmt: skip
    return NodeFacts(name, labels, (), {f"nvidia.com/mig-{p}": n for p, n in offers.items()})


def allocation(pod: PodFacts, *nodes: NodeFacts):
    d = diagnose_pod(pod, fx.cluster(nodes, []))
    return d.finding(ALLOCATION)


ASKS_3G = PodFacts("team-a", "big", gpu_requests={"nvidia.com/mig-3g.40gb": 1})


def test_a_profile_no_node_offers_names_what_the_mig_nodes_offer_and_their_layouts():
    f = allocation(ASKS_3G, mig_node("p5-a", "all-1g.10gb", "success", {"1g.10gb": 56}))
    assert f.explains is True
    assert f.summary == (
        "asks 3g.40gb; no Ready, schedulable node offers it: p5-a offers 56 x 1g.10gb (MIG layout all-1g.10gb)"
    )
    assert f.key_evidence == ("mig-profile-unavailable:nvidia.com/mig-3g.40gb", "offers:p5-a:1g.10gb")
    assert "nvidia.com/mig.config" in f.next_action and "3g.40gb" in f.next_action


@pytest.mark.parametrize(
    "state, said, key",
    [
        ("pending", "p5-a is being re-cut to MIG layout all-3g.40gb (nvidia.com/mig.config.state=pending)", "mig-reconfiguring:p5-a"),
        ("rebooting", "p5-a is being re-cut to MIG layout all-3g.40gb (nvidia.com/mig.config.state=rebooting)", "mig-reconfiguring:p5-a"),
        ("failed", "p5-a's MIG layout all-3g.40gb failed to apply (nvidia.com/mig.config.state=failed)", "mig-config-failed:p5-a"),
    ],
)  # fmt: skip
def test_a_node_being_re_cut_or_whose_layout_failed_is_named_as_the_cause(state, said, key):
    f = allocation(ASKS_3G, mig_node("p5-a", "all-3g.40gb", state, {}))
    assert f.summary == f"asks 3g.40gb; no Ready, schedulable node offers it: {said}"
    assert key in f.key_evidence


def test_a_whole_card_pod_beside_settled_mig_nodes_is_told_to_launch_a_node():
    f = allocation(fx.pending(), mig_node("p5-a", "all-1g.10gb", "success", {"1g.10gb": 56}))
    assert f.summary == "no Ready, schedulable node advertises nvidia.com/gpu: there is no device to allocate"
    assert f.key_evidence == ("no-nodes:nvidia.com/gpu",)


def test_a_whole_card_pod_while_a_node_is_re_cut_hears_of_it():
    f = allocation(fx.pending(), mig_node("p5-a", "all-disabled", "pending", {}))
    assert f.summary.startswith(
        "asks nvidia.com/gpu; no Ready, schedulable node offers it: p5-a is being re-cut"
    )


def test_a_profile_a_node_offers_with_room_is_not_a_cause():
    f = allocation(ASKS_3G, mig_node("p5-a", "all-balanced", "success", {"1g.10gb": 16, "3g.40gb": 8}))
    assert f.explains is False and "free for 1 on 1 node(s) (p5-a)" in f.summary


def test_the_observer_reads_mig_profiles_as_gpu_requests_and_allocatable():
    from gpu_finops.diagnose.kube_observer import gpu_requests, node_facts

    spec = {"containers": [{"resources": {"limits": {"nvidia.com/mig-1g.10gb": "2", "cpu": "1"}}},
                           {"resources": {"requests": {"nvidia.com/mig-1g.10gb": "1"}}}]}  # fmt: skip
    assert gpu_requests(spec) == {"nvidia.com/mig-1g.10gb": 3}
    n = node_facts(
        {"metadata": {"name": "p5-a"}, "status": {"allocatable": {"nvidia.com/mig-3g.40gb": "8", "cpu": "4"}}}
    )
    assert n.allocatable == {"nvidia.com/mig-3g.40gb": 8}
    mixed = PodFacts("ns", "p", gpu_requests={"nvidia.com/mig-1g.10gb": 1, "nvidia.com/gpu": 1})
    assert mixed.gpu_resource == "nvidia.com/gpu", "whole cards or replicas first, then MIG profiles"


def test_gpus_shares_give_each_holder_its_cards_worth_and_the_unheld_rest_sums_to_the_cards():
    from fractions import Fraction

    from gpu_finops.diagnose.gpus import node_shares
    from gpu_finops.diagnose.model import Holder

    nodes = (
        NodeFacts("p5-a", {"nvidia.com/mig.strategy": "mixed", "node.kubernetes.io/instance-type": "p5.48xlarge"}, (),
                  {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8}),
        NodeFacts("ts", {"nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "mps"},
                  (), {"nvidia.com/gpu.shared": 4}),
        NodeFacts("lost", {"nvidia.com/mig.strategy": "single"}, (), {"nvidia.com/gpu": 7}),
        NodeFacts("cpu", {}, (), {}),
    )  # fmt: skip
    holders = (
        Holder("a", "big", "p5-a", {"nvidia.com/mig-3g.40gb": 1}),
        Holder("b", "small", "p5-a", {"nvidia.com/mig-1g.10gb": 2}),
        Holder("b", "client", "ts", {"nvidia.com/gpu.shared": 1}),
    )
    got = {n.node: n for n in node_shares(nodes, holders)}
    assert set(got) == {"p5-a", "ts", "lost"}
    assert got["p5-a"].held == (("a/big", "nvidia.com/mig-3g.40gb", 1, Fraction(3, 7)),
                                ("b/small", "nvidia.com/mig-1g.10gb", 2, Fraction(2, 7)))  # fmt: skip
    assert (got["p5-a"].cards, got["p5-a"].sharing, got["p5-a"].unheld) == (8, "mig-mixed", Fraction(51, 7))
    assert (got["ts"].sharing, got["ts"].unheld) == ("mps", Fraction(3, 4))
    assert got["lost"].cards is None and "its physical cards are unknown" in got["lost"].problem
    assert got["lost"].to_dict()["unheld_cards"] is None
