"""Two views of the same GPUs, never one without the other: activity (who holds it, SM, VRAM, power)
and availability ("looks idle, is held": allocated, low SM, VRAM resident)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_finops.diagnose import activity as act
from gpu_finops.diagnose.model import Cluster, GpuStats


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
