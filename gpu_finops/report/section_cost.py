"""The Cost section: per node and per tenant, cost, idle cost and idle share; GPU_UTIL beside SM_ACTIVE
over time, each record drawn over its own interval."""

from __future__ import annotations

from gpu_finops.cost.records import CostRecord
from gpu_finops.cost.store import group_by_node
from gpu_finops.facts import timestamps
from gpu_finops.report import charts
from gpu_finops.report.page import Section, esc, figure, missing, table
from gpu_finops.report.sources import Absent, CostData, TenantCost

NODE_COLORS = ("#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#2c7a7b")


def money(value: float | None) -> str:
    return "—" if value is None else f"{value + 0.0:.6f}"


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100 + 0.0:.1f} %"


def _note(cost: float, share: float | None) -> str:
    return f"${cost:.6f}" + ("" if share is None else f", {share * 100:.1f} % idle")


def node_part(data: CostData) -> str:
    rows = [(f"{s.node} ({s.instance_type or '?'}, {s.capacity_type or '?'})", s.intervals, f"{s.hours:.4f}",
             money(s.cost), money(s.idle_cost), percent(s.idle_share),
             "—" if s.gpu_util_percent is None else f"{s.gpu_util_percent:.1f}",
             "—" if s.sm_active is None else f"{s.sm_active * 100:.1f}",
             ", ".join(f"{k}×{v}" for k, v in sorted(s.problems.items())) or "none")
            for s in data.nodes]  # fmt: skip
    head = ("node (type, capacity)", "intervals", "hours", "cost $", "idle $", "idle share", "GPU_UTIL %",
            "SM_ACTIVE %", "gaps")  # fmt: skip
    idle = [s.idle_cost or 0.0 for s in data.nodes]
    busy = [s.measured_cost - i for s, i in zip(data.nodes, idle, strict=True)]
    unmeasured = [s.cost - s.measured_cost for s in data.nodes]
    svg = charts.stacked_bars(
        "cost-nodes", "Cost per node: what bought computation, and what idled", [s.node for s in data.nodes],
        [charts.Segment("bought computation: cost × SM_ACTIVE", charts.BUSY, busy),
         charts.Segment("idle: cost × (1 − SM_ACTIVE)", charts.IDLE, idle),
         charts.Segment("SM_ACTIVE not measured", charts.UNMEASURED, unmeasured)],
        "US dollars over the recorded intervals", [_note(s.cost, s.idle_share) for s in data.nodes],
    )  # fmt: skip
    return (
        "<h3>Per node</h3>"
        + table(head, rows, numeric=(1, 2, 3, 4, 5, 6, 7))
        + figure(
            svg, "Idle share is idle dollars over the dollars whose SM_ACTIVE was measured.", "cost-nodes"
        )
    )


def tenant_part(tenants: list[TenantCost] | Absent) -> str:
    if isinstance(tenants, Absent):
        return "<h3>Per tenant</h3>" + missing(tenants)
    rows = [(t.tenant, money(float(t.cost)), money(None if t.idle_cost is None else float(t.idle_cost)),
             percent(t.idle_share)) for t in tenants]  # fmt: skip
    idle = [float(t.idle_cost or 0) for t in tenants]
    busy = [float(t.measured_cost) - i for t, i in zip(tenants, idle, strict=True)]
    unmeasured = [float(t.cost - t.measured_cost) for t in tenants]
    svg = charts.stacked_bars(
        "cost-tenants", "Cost per tenant, split by the GPU-seconds its pods held", [t.tenant for t in tenants],
        [charts.Segment("bought computation", charts.BUSY, busy),
         charts.Segment("idle: cost × (1 − SM_ACTIVE)", charts.IDLE, idle),
         charts.Segment("SM_ACTIVE not measured", charts.UNMEASURED, unmeasured)],
        "US dollars over the recorded intervals", [_note(float(t.cost), t.idle_share) for t in tenants],
    )  # fmt: skip
    return (
        "<h3>Per tenant</h3>"
        + table(("tenant", "cost $", "idle $", "idle share"), rows, numeric=(1, 2, 3))
        + figure(
            svg,
            "'unallocated' is the GPU-seconds no pod held: the platform's, not a tenant's.",
            "cost-tenants",
        )
    )


def util_part(records: list[CostRecord]) -> str:
    t0 = min(timestamps.parse(r.ChargePeriodStart).timestamp() for r in records)
    series = []
    gaps = 0
    for i, (node, rows) in enumerate(sorted(group_by_node(records).items())):
        color = NODE_COLORS[i % len(NODE_COLORS)]
        util, sm = [], []
        for r in rows:
            s = timestamps.parse(r.ChargePeriodStart).timestamp() - t0
            e = timestamps.parse(r.ChargePeriodEnd).timestamp() - t0
            if r.x_GpuUtilPercent is not None:
                util.append(charts.Step(s, e, r.x_GpuUtilPercent))
            if r.x_SmActive is not None:
                sm.append(charts.Step(s, e, r.x_SmActive * 100))
            gaps += (r.x_GpuUtilPercent is None) + (r.x_SmActive is None)
        series += [(f"{node} GPU_UTIL", color, "-", util), (f"{node} SM_ACTIVE", color, "--", sm)]
    start = timestamps.parse(min(r.ChargePeriodStart for r in records)).strftime("%Y-%m-%d %H:%M:%S UTC")
    svg = charts.intervals(
        "util", "GPU_UTIL (a kernel resident) beside SM_ACTIVE (warps active): the gap is idle silicon", series,
        f"seconds since the first record began ({start})", "percent of the interval", (0, 105),
    )  # fmt: skip
    note = f" {gaps} measurement(s) were missing and are not drawn (a gap, not a zero)." if gaps else ""
    return "<h3>GPU_UTIL beside SM_ACTIVE</h3>" + figure(
        svg, "Each record is a flat segment over its own interval, the mean over its GPUs." + note, "util"
    )


def section(data: CostData | Absent) -> Section:
    if isinstance(data, Absent):
        return Section("cost", "Cost", missing(data))
    total = sum(s.cost for s in data.nodes)
    lead = (f"<p>{len(data.records)} cost record(s) of {len(data.nodes)} node(s) from <code>{esc(data.store)}"
            f"</code>, ${total:.6f} in all.</p>")  # fmt: skip
    return Section(
        "cost", "Cost", lead + node_part(data) + tenant_part(data.tenants) + util_part(data.records)
    )
