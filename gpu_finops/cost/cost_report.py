"""Cost reports: a per-node table (rich) and a PNG chart of GPU_UTIL vs SM_ACTIVE and idle dollars."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

from rich.table import Table

from gpu_finops.cost.records import STATUS_OK, CostRecord
from gpu_finops.cost.store import group_by_node
from gpu_finops.facts import timestamps
from gpu_finops.facts.output_files import figure_bytes, write_output


@dataclass(frozen=True)
class NodeSummary:
    node: str
    instance_type: str | None
    capacity_type: str | None
    intervals: int
    hours: float
    cost: float
    idle_cost: float | None  # over measured intervals only
    measured_cost: float  # cost of the intervals whose idle share is known
    gpu_util_percent: float | None
    sm_active: float | None
    problems: dict[str, int]  # status -> count, for every non-ok interval

    @property
    def idle_share(self) -> float | None:
        return (
            self.idle_cost / self.measured_cost if self.idle_cost is not None and self.measured_cost else None
        )


def summarize(records: Sequence[CostRecord]) -> list[NodeSummary]:
    out = []
    for name, rows in sorted(group_by_node(records).items()):
        ok = [r for r in rows if r.x_Status == STATUS_OK and r.x_IdleCost is not None]
        problems: dict[str, int] = {}
        for r in rows:
            if r.x_Status != STATUS_OK:
                problems[r.x_Status] = problems.get(r.x_Status, 0) + 1
        utils = [r.x_GpuUtilPercent for r in rows if r.x_GpuUtilPercent is not None]
        sms = [r.x_SmActive for r in ok if r.x_SmActive is not None]
        out.append(
            NodeSummary(
                node=name,
                instance_type=rows[-1].x_InstanceType,
                capacity_type=rows[-1].x_CapacityType,
                intervals=len(rows),
                hours=sum(r.PricingQuantity for r in rows),
                cost=sum(r.EffectiveCost or 0 for r in rows),
                idle_cost=sum(r.x_IdleCost for r in ok) if ok else None,  # type: ignore[misc]
                measured_cost=sum(r.EffectiveCost or 0 for r in ok),
                gpu_util_percent=fmean(utils) if utils else None,
                sm_active=fmean(sms) if sms else None,
                problems=problems,
            )
        )
    return out


def _fmt(value: float | None, spec: str, missing: str = "—") -> str:
    return missing if value is None else format(value, spec)


def table(summaries: Sequence[NodeSummary]) -> Table:
    t = Table(title="GPU cost per node", show_lines=False)
    for col in (
        "node",
        "type",
        "capacity",
        "intervals",
        "hours",
        "cost $",
        "idle $",
        "idle share",
        "GPU_UTIL %",
        "SM_ACTIVE %",
        "gaps",
    ):
        t.add_column(col, justify="right" if col not in ("node", "type", "capacity", "gaps") else "left")
    for s in summaries:
        gaps = ", ".join(f"{k}×{v}" for k, v in sorted(s.problems.items())) or ""
        t.add_row(
            s.node,
            s.instance_type or "?",
            s.capacity_type or "?",
            str(s.intervals),
            f"{s.hours:.3f}",
            f"{s.cost:.6f}",
            _fmt(s.idle_cost, ".6f"),
            _fmt(s.idle_share and s.idle_share * 100, ".1f"),
            _fmt(s.gpu_util_percent, ".1f"),
            _fmt(s.sm_active and s.sm_active * 100, ".1f"),
            gaps,
        )
    return t


def chart(records: Sequence[CostRecord], path: Path, tenants: Sequence | None = None) -> Path:
    """GPU_UTIL vs SM_ACTIVE over time per node (top), idle dollars per interval (middle) and, given the
    per-tenant totals of a FOCUS export (gpu_finops.cost.tenant_report), each tenant's cost and idle cost (bottom)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not records and not tenants:
        raise ValueError("no cost records to chart: run `gpu-finops collect` first, or widen --since/--until")
    panels = (2 if records else 0) + (1 if tenants else 0)
    fig, axes = plt.subplots(panels, 1, figsize=(11, 3.6 * panels + 0.4), squeeze=False)
    axes = [a[0] for a in axes]
    if tenants:
        from gpu_finops.cost.tenant_report import tenant_panel

        tenant_panel(axes[-1], tenants)
    if not records:
        return _save(fig, path)
    top, bottom = axes[0], axes[1]
    bottom.sharex(top)
    stacked: dict[str, float] = {}  # interval start -> idle $ already drawn there (nodes stack, not overlap)
    for name, rows in sorted(group_by_node(records).items()):
        t = [timestamps.parse(r.ChargePeriodStart) for r in rows]
        util = [r.x_GpuUtilPercent for r in rows]
        sm = [r.x_SmActive * 100 if r.x_SmActive is not None else None for r in rows]
        line = top.plot(
            t, [u if u is not None else float("nan") for u in util], "-", label=f"{name} GPU_UTIL"
        )[0]
        top.plot(
            t,
            [s if s is not None else float("nan") for s in sm],
            "--",
            color=line.get_color(),
            label=f"{name} SM_ACTIVE",
        )
        # Each bar spans its own interval, [start, end) (matplotlib dates are days): a 10-second record is
        # 10 seconds wide, starts where the record starts, and the next one begins where it ends.
        widths = [
            (timestamps.parse(r.ChargePeriodEnd) - ti).total_seconds() / 86400
            for r, ti in zip(rows, t, strict=True)
        ]
        idle = [r.x_IdleCost or 0 for r in rows]
        base = [stacked.get(r.ChargePeriodStart, 0.0) for r in rows]
        bars = bottom.bar(t, idle, width=widths, bottom=base, align="edge", label=name, alpha=0.8,
                          edgecolor="white", linewidth=0.5)  # fmt: skip
        for i, patch in enumerate(bars):
            patch.set_gid(f"idle-{name}-{i}")
        for r, v in zip(rows, idle, strict=True):
            stacked[r.ChargePeriodStart] = stacked.get(r.ChargePeriodStart, 0.0) + v
    top.set_ylabel("percent")
    top.set_ylim(0, 105)
    top.set_title("GPU_UTIL (kernel resident) vs SM_ACTIVE (warps active): the gap is idle silicon")
    # Beside the plot, not over the lines or bars.
    top.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    bottom.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), title="node")
    bottom.set_ylabel("idle $ per interval")
    bottom.set_title("Money that bought no computation: cost x (1 - SM_ACTIVE)")
    for label in (*top.get_xticklabels(), *bottom.get_xticklabels()):
        label.set_rotation(20)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    data = figure_bytes(fig, "png", dpi=110, bbox_inches="tight")  # the legends beside the plots stay in it
    plt.close(fig)
    write_output(path, data, "--png")
    return path
