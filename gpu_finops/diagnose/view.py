"""The cluster seen from one pending pod: what the diagnosis checks share (moved from engine.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu_finops.diagnose import activity as act
from gpu_finops.diagnose.model import GPU, Cluster, Finding, GpuStats, Holder, NodeFacts, PodFacts
from gpu_finops.diagnose.scheduling import RuleOut, constraint_rule_outs
from gpu_finops.facts.kube_keys import LABEL_GPU_MEMORY, LABEL_GPU_SHARING


@dataclass(frozen=True)
class ClusterIndex:
    """What every pod's view of one cluster shares, for one GPU resource: GPUs held per node, DCGM per card
    and per holder, holders by node, nodes by name. `diagnose --all` builds it once per resource instead of
    once per pod: at 1,250 nodes and 3,000 holders a view cost 1-3 s built from scratch (docs/benchmarks.md)."""

    cluster: Cluster
    resource: str
    held: dict[str, int]  # node -> GPUs of `resource` requested by bound pods
    cards: dict[str, dict[str, act.Activity]]  # node -> uuid -> card activity
    holder_activity: dict[str, act.Activity | None]  # holder key -> its activity
    holders_by_node: dict[str, tuple[Holder, ...]]  # node -> its holders of `resource`, in cluster order
    nodes_by_name: dict[str, NodeFacts]
    gpu_nodes: tuple[NodeFacts, ...]  # nodes that advertise `resource`, in cluster order
    rows: dict[tuple[str, str], dict[str, object]] = field(default_factory=dict)  # (holder, node) -> its row
    classes: dict[str, str] = field(default_factory=dict)  # holder key -> its class, worked out once


@dataclass(frozen=True)
class View:
    """The cluster seen from one pod: per node its GPUs held and free, per card and holder DCGM."""

    pod: PodFacts
    index: ClusterIndex  # the cluster's side, for the pod's GPU resource
    _rule_outs: dict[str, list[RuleOut]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def cluster(self) -> Cluster:
        return self.index.cluster

    @property
    def resource(self) -> str:
        return self.index.resource

    @property
    def held(self) -> dict[str, int]:
        return self.index.held

    @property
    def cards(self) -> dict[str, dict[str, act.Activity]]:
        return self.index.cards

    @property
    def holder_activity(self) -> dict[str, act.Activity | None]:
        return self.index.holder_activity

    @property
    def stats_known(self) -> bool:
        return self.cluster.stats is not None

    def gpu_nodes(self) -> list[NodeFacts]:
        return list(self.index.gpu_nodes)

    def node(self, name: str) -> NodeFacts:
        return self.index.nodes_by_name[name]

    def usable(self, n: NodeFacts) -> bool:
        """Ready and not cordoned: the node can give out devices at all."""
        return n.ready and not n.unschedulable

    def free(self, n: NodeFacts) -> int:
        return n.allocatable.get(self.resource, 0) - self.held.get(n.name, 0)

    def fits(self, n: NodeFacts) -> bool:
        return self.free(n) >= self.pod.gpu_count

    def holders_on(self, node: str) -> list[Holder]:
        return list(self.index.holders_by_node.get(node, ()))

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

    def mps_limit(self, node: str) -> dict[str, int | None] | None:
        """Where the node shares its cards by MPS (GFD's sharing strategy), what the device plugin's MPS control
        daemon caps each client at: the card's memory (GFD, MiB; None where unlabelled) over its replicas. None
        for a node that does not share by MPS."""
        n = self.index.nodes_by_name.get(node)
        labels = n.labels if n is not None else {}
        if labels.get(LABEL_GPU_SHARING) != "mps":
            return None
        replicas = n.replicas_per_gpu if n is not None else 1
        said = labels.get(LABEL_GPU_MEMORY, "")
        memory = int(said) if said.isascii() and said.isdigit() else None
        return {
            "card_memory_mib": memory,
            "clients_per_card": replicas,
            "client_limit_mib": None if memory is None else memory // replicas,
        }

    def memory_room(self, node: str) -> bool | None:
        """True: some card has VRAM room (on an MPS node always: the daemon caps every other client at its share,
        so a free client's share is its own); False: every card is resident; None: not known."""
        if self.mps_limit(node) is not None:
            return True
        cards = self.cards.get(node)
        if not self.stats_known or not cards:
            return None
        full = self.vram_full_cards(node) or []
        return len(full) < len(cards)

    def holder_row(self, h: Holder) -> dict[str, object]:
        """The holder's evidence row. Made once per index and shared by every diagnosis that shows it:
        treat it as read-only."""
        row = self.index.rows.get((h.key, h.node))
        if row is None:
            row = self.index.rows[(h.key, h.node)] = self._holder_row(h)
        return row

    def _holder_row(self, h: Holder) -> dict[str, object]:
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
        c = self.index.classes.get(h.key)
        if c is None:
            c = self.index.classes[h.key] = act.classify(self.holder_activity.get(h.key))
        return c

    def rule_outs(self, n: NodeFacts) -> list[RuleOut]:
        """What in the pod's spec or the node's state keeps the pod off `n` (constraint_rule_outs), once
        per node for this view: placement and application both ask."""
        out = self._rule_outs.get(n.name)
        if out is None:
            out = self._rule_outs[n.name] = constraint_rule_outs(self.pod, n)
        return out


def index_cluster(cluster: Cluster, resource: str) -> ClusterIndex:
    held: dict[str, int] = {}
    by_node: dict[str, list[Holder]] = {}
    for h in cluster.holders:
        n = h.gpu_requests.get(resource, 0)
        held[h.node] = held.get(h.node, 0) + n
        if n > 0:
            by_node.setdefault(h.node, []).append(h)
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
    nodes_by_name: dict[str, NodeFacts] = {}
    for n in cluster.nodes:
        nodes_by_name.setdefault(n.name, n)  # the first of a repeated name, as a scan would find
    return ClusterIndex(
        cluster,
        resource,
        held,
        cards,
        holder_activity,
        {node: tuple(hs) for node, hs in by_node.items()},
        nodes_by_name,
        tuple(n for n in cluster.nodes if n.allocatable.get(resource, 0) > 0),
    )


def build_view(pod: PodFacts, cluster: Cluster, index: ClusterIndex | None = None) -> View:
    """`index`: one already built for this cluster (the same object) and the pod's resource; another is
    ignored and a new one built, so a stale index cannot answer for another cluster."""
    resource = pod.gpu_resource or GPU
    if index is None or index.cluster is not cluster or index.resource != resource:
        index = index_cluster(cluster, resource)
    return View(pod, index)


def not_checked(check: str, cluster: Cluster) -> Finding:
    why = cluster.stats_unavailable or "DCGM series were not read"
    return Finding(check, None, f"not checked: {check} needs DCGM over the window ({why})")


def fmt_pct(v: float | None) -> str:
    return "?" if v is None else f"{v:.0%}"


def fmt_sm(v: float | None) -> str:
    return "?" if v is None else f"{v:.2f}"
