"""Two views of the same GPUs, never one without the other: activity (who holds it, SM, VRAM, power)
and availability ("looks idle, is held": allocated, low SM, VRAM resident); and the shares: what part of a
node's cards each holder's devices are, as the held-GPU model reads the node (whole, time-sliced, MPS, MIG)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpu_finops.diagnose import activity as act
from gpu_finops.diagnose.model import Cluster, DraFacts, GpuStats, Holder, NodeFacts
from gpu_finops.model import holding


@dataclass(frozen=True)
class GpuRow:
    node: str
    gpu: str
    uuid: str
    holders: tuple[str, ...]  # "namespace/pod" as the exporter attributes the GPU
    node_holders: tuple[str, ...]  # GPU pods bound to the node per Kubernetes (when DCGM names none)
    activity: act.Activity

    @property
    def held(self) -> bool:
        return bool(self.holders)

    @property
    def looks_idle_is_held(self) -> bool:
        return act.looks_idle_is_held(self.activity, self.held)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "gpu": self.gpu,
            "uuid": self.uuid,
            "holders": list(self.holders),
            "node_gpu_pods": list(self.node_holders),
            **self.activity.to_dict(),
            "looks_idle_is_held": self.looks_idle_is_held,
        }


@dataclass(frozen=True)
class GpuView:
    rows: tuple[GpuRow, ...]
    window_s: int

    @property
    def looks_idle_is_held(self) -> tuple[GpuRow, ...]:
        return tuple(r for r in self.rows if r.looks_idle_is_held)

    def to_dict(self) -> dict[str, Any]:
        return {
            "window_s": self.window_s,
            "thresholds": {"sm_active_below": act.SM_LOW, "fb_used_ratio_at_least": act.FB_RESIDENT},
            "gpus": [r.to_dict() for r in self.rows],
            "looks_idle_is_held": [f"{r.node}/{r.uuid}" for r in self.looks_idle_is_held],
        }


def gpu_view(cluster: Cluster) -> GpuView:
    """One row per physical GPU (a time-sliced card's per-holder series folded into one row)."""
    cards: dict[tuple[str, str], list[GpuStats]] = {}
    for s in cluster.stats or ():
        cards.setdefault((s.node, s.uuid), []).append(s)
    node_pods: dict[str, list[str]] = {}
    for h in cluster.holders:
        node_pods.setdefault(h.node, []).append(h.key)
    rows = []
    for (node, uuid), stats in sorted(cards.items(), key=lambda kv: (kv[0][0], kv[1][0].gpu, kv[0][1])):
        a = act.card_activity(stats)
        assert a is not None
        rows.append(
            GpuRow(
                node,
                stats[0].gpu,
                uuid,
                tuple(sorted({s.holder for s in stats if s.holder})),
                tuple(sorted(node_pods.get(node, []))),
                a,
            )
        )
    return GpuView(tuple(rows), cluster.window_s)


@dataclass(frozen=True)
class NodeShares:
    """One GPU node's cards and what its holders hold of them, in cards; `problem` where the node cannot be
    read as the model reads one (then `cards` is None and no figure is given, never a zero), or where its
    devices are not worth its cards (then the figures are given beside it)."""

    node: str
    cards: int | None
    sharing: str | None
    held: tuple[tuple[str, str, int, Fraction], ...]  # (holder, resource, devices, cards' worth)
    problem: str | None = None

    @property
    def unheld(self) -> Fraction | None:
        return None if self.cards is None else self.cards - sum((h[3] for h in self.held), Fraction(0))

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "cards": self.cards,
            "sharing": self.sharing,
            "held": [{"holder": h, "resource": r, "devices": n, "cards": str(w)} for h, r, n, w in self.held],
            "unheld_cards": None if self.unheld is None else str(self.unheld),
            "problem": self.problem,
        }


def node_shares(
    nodes: tuple[NodeFacts, ...], holders: tuple[Holder, ...], dra: DraFacts | None = None
) -> tuple[NodeShares, ...]:
    """Per GPU node (one that advertises a GPU resource or has holders), its cards and each holder's cards'
    worth, read from its capacity (allocatable where no capacity was read): the shares and the unheld rest sum
    to the cards. A node that advertises no GPU resource and whose DRA driver publishes cards is read by those
    (`dra`): each pod's part through each claim (resource `claim <name>`), sharing `dra`."""
    by_node: dict[str, list[Holder]] = {}
    for h in holders:
        by_node.setdefault(h.node, []).append(h)
    out = []
    claimed = {node for node, *_ in (dra.held if dra else ())}
    if dra is not None and dra.problem:
        out.append(NodeShares("(DRA devices)", None, "dra", (), f"not read: {dra.problem}"))
    for n in nodes:
        if not any(n.capacity.values()) and not any(n.allocatable.values()) and dra and n.name in dra.cards:
            held = tuple(
                (pod, f"claim {claim}", k, w) for node, pod, claim, k, w in dra.held if node == n.name
            )
            # a pod asking a GPU resource here holds it through the scheduler's claim of it, or not at all
            unclaimed = sorted({h.key for h in by_node.get(n.name, ())} - {pod for pod, *_ in held})
            problem = (
                f"pod(s) {', '.join(unclaimed)} ask a GPU resource on this DRA node and hold no claim's device"
                if unclaimed
                else None
            )
            out.append(NodeShares(n.name, dra.cards[n.name], "dra", held, problem))
            continue
        if (
            dra is not None
            and n.name in claimed
            and (any(n.capacity.values()) or any(n.allocatable.values()))
        ):
            pods = sorted({pod for node, pod, *_ in dra.held if node == n.name})
            out.append(
                NodeShares(
                    n.name,
                    None,
                    None,
                    (),
                    f"advertises GPU resources and its pods {', '.join(pods)} also hold DRA devices here: "
                    "its cards are read one way or the other, not both",
                )
            )
            continue
        if not n.allocatable and not n.capacity and not by_node.get(n.name):
            continue
        try:
            read = holding.read_node(n.name, n.labels, n.capacity or n.allocatable, strict=False)
            held = tuple(
                (h.key, r, c, read.equivalents({r: c}))
                for h in by_node.get(n.name, ())
                for r, c in sorted(h.gpu_requests.items())
                if c
            )
        except holding.NodeGpusError as exc:
            out.append(NodeShares(n.name, None, None, (), str(exc)))
            continue
        out.append(NodeShares(n.name, read.cards, str(read.sharing), held, read.problem))
    return tuple(out)
