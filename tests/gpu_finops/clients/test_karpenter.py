"""The one NodeClaim reader (gpu_finops/clients/karpenter.py); tests/harness/test_observe_nodes.py reads through it."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_finops.clients.karpenter import KarpenterClient, nodeclaim_facts

LAUNCHED = "2026-11-30T12:00:40Z"


def claim(
    name: str = "gpu-spot-abcde", node: str | None = "n1", conditions=(), deleting=False
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "labels": {"karpenter.sh/nodepool": "gpu-spot"},
        "creationTimestamp": "2026-11-30T12:00:00Z",
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-11-30T12:05:00Z"
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": meta,
        "status": {"nodeName": node, "conditions": [dict(c) for c in conditions]},
    }


def cond(type_: str, status: str, at: str = LAUNCHED) -> dict[str, str]:
    return {"type": type_, "status": status, "lastTransitionTime": at}


@pytest.mark.parametrize(
    ("conditions", "launched_at"),
    [
        ([cond("Launched", "True"), cond("Registered", "True", "2026-11-30T12:01:00Z")], LAUNCHED),
        ([cond("Launched", "False")], None),  # launching, not launched
        ([cond("Registered", "True")], None),  # another condition's time is not the launch
        ([], None),
    ],
    ids=["launched", "launched false", "no launched condition", "no conditions"],
)
def test_a_nodeclaim_is_launched_only_by_its_launched_true_condition(conditions, launched_at):
    facts = nodeclaim_facts(claim(conditions=conditions))
    assert facts.launched_at == launched_at
    assert (facts.name, facts.nodepool, facts.node_name, facts.created, facts.deleting) == (
        "gpu-spot-abcde",
        "gpu-spot",
        "n1",
        "2026-11-30T12:00:00Z",
        False,
    )


def test_a_claim_being_deleted_says_so():
    assert nodeclaim_facts(claim(deleting=True)).deleting is True


class FakeCustom:
    def __init__(self, items: list[dict[str, Any]]):
        self.items, self.calls = items, []

    def list_cluster_custom_object(self, group: str, version: str, plural: str) -> dict[str, Any]:
        self.calls.append((group, version, plural))
        return {"items": self.items}


def test_the_client_lists_karpenter_v1_nodeclaims_raw_and_as_facts():
    api = FakeCustom([claim(conditions=[cond("Launched", "True")])])
    karpenter = KarpenterClient(api)
    assert karpenter.nodeclaim_objects() == api.items
    assert [c.launched_at for c in karpenter.nodeclaims()] == [LAUNCHED]
    assert api.calls == [("karpenter.sh", "v1", "nodeclaims")] * 2
