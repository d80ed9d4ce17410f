"""The cluster seen from one pending pod: what the diagnosis checks share (moved from engine.py)."""

from __future__ import annotations

from dataclasses import dataclass

from diagnose import activity as act
from diagnose.model import GPU, Cluster, Finding, GpuStats, Holder, NodeFacts, PodFacts


@dataclass(frozen=True)
class View:
    """The cluster seen from one pod: per node its GPUs held and free, per card and holder DCGM."""

    pod: PodFacts
    cluster: Cluster
    resource: str
    held: dict[str, int]  # node -> GPUs of `resource` requested by bound pods
    cards: dict[str, dict[str, act.Activity]]  # node -> uuid -> card activity
    holder_activity: dict[str, act.Activity | None]  # holder key -> its activity

    @property
    def stats_known(self) -> bool:
        return self.cluster.stats is not None

    def gpu_nodes(self) -> list[NodeFacts]:
        return [n for n in self.cluster.nodes if n.allocatable.get(self.resource, 0) > 0]

    def usable(self, n: NodeFacts) -> bool:
        """Ready and not cordoned: the node can give out devices at all."""
        return n.ready and not n.unschedulable

    def free(self, n: NodeFacts) -> int:
        return n.allocatable.get(self.resource, 0) - self.held.get(n.name, 0)

    def fits(self, n: NodeFacts) -> bool:
        return self.free(n) >= self.pod.gpu_count

    def holders_on(self, node: str) -> list[Holder]:
        return [
            h for h in self.cluster.holders if h.node == node and h.gpu_requests.get(self.resource, 0) > 0
        ]

    def vram_full_cards(self, node: str) -> list[tuple[str, act.Activity]] | None:
        """The node's cards whose VRAM is resident; None when DCGM shows no card for the node."""
        cards = self.cards.get(node)
        if not cards:
            return None
        return [
            (uuid, a)
            for uuid, a in sorted(cards.items())
            if a.fb_ratio is not None and a.fb_ratio >= act.FB_RESIDENT
        ]

    def memory_room(self, node: str) -> bool | None:
        """True: some card has VRAM room; False: every card is resident; None: not known."""
        cards = self.cards.get(node)
        if not self.stats_known or not cards:
            return None
        full = self.vram_full_cards(node) or []
        return len(full) < len(cards)

    def holder_row(self, h: Holder) -> dict[str, object]:
        a = self.holder_activity.get(h.key)
        row: dict[str, object] = {
            "pod": h.key,
            "node": h.node,
            self.resource: h.gpu_requests.get(self.resource),
        }
        if not self.stats_known:
            row["activity"] = "not checked"
        elif a is None:
            row["activity"] = "no DCGM series for this pod"
            row["class"] = act.UNKNOWN
        else:
            row.update(a.to_dict())
        return row

    def holder_class(self, h: Holder) -> str:
        return act.classify(self.holder_activity.get(h.key))


def build_view(pod: PodFacts, cluster: Cluster) -> View:
    resource = pod.gpu_resource or GPU
    held: dict[str, int] = {}
    for h in cluster.holders:
        held[h.node] = held.get(h.node, 0) + h.gpu_requests.get(resource, 0)
    by_card: dict[tuple[str, str], list[GpuStats]] = {}
    by_holder: dict[str, list[GpuStats]] = {}
    for row in cluster.stats or ():
        by_card.setdefault((row.node, row.uuid), []).append(row)
        if row.holder:
            by_holder.setdefault(row.holder, []).append(row)
    cards: dict[str, dict[str, act.Activity]] = {}
    for (node, uuid), rows in by_card.items():
        a = act.card_activity(rows)
        if a is not None:
            cards.setdefault(node, {})[uuid] = a
    holder_activity = {h.key: act.holder_activity(by_holder.get(h.key, []), cards) for h in cluster.holders}
    return View(pod, cluster, resource, held, cards, holder_activity)


def not_checked(check: str, cluster: Cluster) -> Finding:
    why = cluster.stats_unavailable or "DCGM series were not read"
    return Finding(check, None, f"not checked: {check} needs DCGM over the window ({why})")


def fmt_pct(v: float | None) -> str:
    return "?" if v is None else f"{v:.0%}"


def fmt_sm(v: float | None) -> str:
    return "?" if v is None else f"{v:.2f}"
