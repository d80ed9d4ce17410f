"""The acts' node observer (harness/observe.py) reads NodeClaims through finops' one reader."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from kubernetes import client as k

from harness.observe import node_obs
from tests.gpu_finops.clients.test_karpenter import FakeCustom, claim, cond


def fake_kube(node: k.V1Node, claims: list[dict[str, Any]]) -> Any:
    return SimpleNamespace(core=SimpleNamespace(read_node=lambda name: node), custom=FakeCustom(claims))


def test_the_node_observer_takes_the_claim_whose_node_it_is():
    node = k.V1Node(
        metadata=k.V1ObjectMeta(name="n1", creation_timestamp=datetime(2026, 11, 30, 12, 0, 50, tzinfo=UTC)),
        spec=k.V1NodeSpec(),
        status=k.V1NodeStatus(allocatable={"nvidia.com/gpu": "1"}, capacity={"nvidia.com/gpu": "1"}),
    )
    other = claim("gpu-spot-other", node="n2", conditions=[cond("Launched", "True", "2026-11-30T11:00:00Z")])
    mine = claim(conditions=[cond("Launched", "True")])
    obs = node_obs(fake_kube(node, [other, mine]), "n1")
    assert (obs.nodeclaim, obs.nodeclaim_nodepool) == ("gpu-spot-abcde", "gpu-spot")
    assert obs.nodeclaim_launched_at == datetime(2026, 11, 30, 12, 0, 40, tzinfo=UTC)
    assert obs.nodeclaim_created == datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    unclaimed = node_obs(fake_kube(node, [other]), "n1")
    assert (unclaimed.nodeclaim, unclaimed.nodeclaim_launched_at, unclaimed.nodeclaim_created) == (
        None,
        None,
        None,
    )
