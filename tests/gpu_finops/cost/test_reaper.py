"""The reaper's ranking and guards: each guard is shown refusing, and the holding case acting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpu_finops.clients.karpenter import NodeClaimFacts
from gpu_finops.cost.reaper import ReapPolicy, rank, reap
from gpu_finops.cost.records import STATUS_MISSING_SM_ACTIVE, STATUS_OK, CostRecord
from gpu_finops.cost.store import SqliteCostStore
from gpu_finops.facts.timestamps import iso
from tests.gpu_finops.cost.conftest import node

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
POLICY = ReapPolicy(
    nodepool="gpu-spot",
    window=timedelta(minutes=30),
    min_age=timedelta(minutes=30),
    idle_threshold=0.9,
    consecutive=5,
)


def records(name: str, sm_values: list[float | None], cost: float = 0.03) -> list[CostRecord]:
    out = []
    for i, sm in enumerate(sm_values):
        start = NOW - timedelta(minutes=len(sm_values) - i)
        status = STATUS_OK if sm is not None else STATUS_MISSING_SM_ACTIVE
        out.append(
            CostRecord(
                iso(start),
                iso(start + timedelta(minutes=1)),
                name,
                name,
                "GPU node",
                "us-east-1",
                "us-east-1a",
                "Dynamic",
                "Hours",
                1 / 60,
                1.861,
                cost,
                "g6e.xlarge",
                "spot",
                "gpu-spot",
                1,
                60,
                cost * 60,
                "spot",
                False,
                100.0,
                sm,
                0.1,
                100,
                1900,
                1,
                cost * (1 - sm) if sm is not None else None,
                status,
                None,
            )
        )
    return out


class FakeKarpenter:
    def __init__(self, claims):
        self.claims, self.deleted = claims, []

    def nodeclaims(self):
        return self.claims

    def delete_nodeclaim(self, name):
        self.deleted.append(name)


def claim(node_name: str, nodepool: str = "gpu-spot") -> NodeClaimFacts:
    return NodeClaimFacts(f"nc-{node_name}", nodepool, node_name, {"Ready": "True"}, None, False)


def test_ranks_by_idle_dollars_and_reaps_only_with_apply():
    idle = node("idle", now=NOW)
    busy = node("busy", now=NOW)
    recs = records("idle", [0.02] * 10) + records("busy", [0.9] * 10)
    ranked = rank([busy, idle], recs, POLICY, NOW)
    assert [c.node.name for c in ranked] == ["idle", "busy"]
    assert ranked[0].idle_usd_per_hour == pytest.approx(10 * 0.03 * 0.98 / 0.5)
    assert ranked[0].eligible and not ranked[1].eligible
    k = FakeKarpenter([claim("idle"), claim("busy")])
    reap(ranked, k, apply=False)
    assert k.deleted == [] and "dry run" in ranked[0].action
    reap(ranked, k, apply=True)
    assert k.deleted == ["nc-idle"]


@pytest.mark.parametrize(
    "case, make, why",
    [
        ("other nodepool", lambda: node("n", now=NOW, nodepool="system"), "not in NodePool gpu-spot"),
        ("too young", lambda: node("n", now=NOW, age=timedelta(minutes=5)), "younger than"),
        (
            "do-not-disrupt",
            lambda: node("n", now=NOW, annotations={"karpenter.sh/do-not-disrupt": "true"}),
            "do-not-disrupt",
        ),
    ],
)
def test_guards_refuse(case, make, why):
    (cand,) = rank([make()], records("n", [0.0] * 10), POLICY, NOW)
    assert not cand.eligible
    assert any(why in r for r in cand.reasons), cand.reasons
    k = FakeKarpenter([claim("n")])
    reap([cand], k, apply=True)
    assert k.deleted == []


def test_idle_streak_broken_by_a_busy_interval():
    (cand,) = rank([node("n", now=NOW)], records("n", [0.0] * 6 + [0.5] + [0.0] * 3), POLICY, NOW)
    assert cand.consecutive_idle == 3 and not cand.eligible


def test_missing_sm_active_is_never_counted_idle():
    (cand,) = rank([node("n", now=NOW)], records("n", [None] * 10), POLICY, NOW)
    assert cand.idle_usd_per_hour is None and not cand.eligible
    assert any("idle share unknown" in r for r in cand.reasons)


def test_gap_between_intervals_breaks_the_streak():
    recs = records("n", [0.0] * 10)
    del recs[6]  # an interval the collector never wrote
    (cand,) = rank([node("n", now=NOW)], recs, POLICY, NOW)
    assert cand.consecutive_idle == 3


def test_node_without_nodeclaim_is_not_touched():
    (cand,) = rank([node("n", now=NOW)], records("n", [0.0] * 10), POLICY, NOW)
    k = FakeKarpenter([])
    reap([cand], k, apply=True)
    assert k.deleted == [] and "no NodeClaim" in cand.action


def test_reap_with_no_gpu_node_says_so_instead_of_an_empty_table(tmp_path, capsys):
    """A command with nothing to show says so (exit 0), and never reaches Karpenter."""
    import json

    from gpu_finops.cli import main

    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}))
    SqliteCostStore(tmp_path / "costs.sqlite").close()  # reap reads a store; it never makes one
    code = main(["reap", "--nodes", f"file:{nodes}", "--store", f"sqlite:{tmp_path / 'costs.sqlite'}"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.strip() == f"no GPU nodes to rank (nodes from file:{nodes}): nothing to reap"
