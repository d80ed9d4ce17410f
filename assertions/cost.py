"""Act 6: every cost record of the GPU node holds GPU_UTIL and SM_ACTIVE, a real cost and the idle share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

from assertions.decide import decide
from assertions.verdict import Verdict

CLAIM = (
    "the collector wrote consecutive records for the GPU node with GPU_UTIL, SM_ACTIVE, cost and idle share"
)
TOLERANCE = 1e-6  # dollars
SECONDS_TOLERANCE = 1.0  # Kubernetes stores creation and deletion times in whole seconds


@dataclass(frozen=True)
class HolderObs:
    """The act's own GPU pod, as the act saw it: who the collector's holdings record must name."""

    namespace: str
    pod: str
    tenant: str  # the tenant the act ran it for (its LocalQueue's ClusterQueue)
    held_from: datetime  # the pod's container started (its devices were allocated no later)
    held_until: datetime | None = None  # its container finished; None: still running when the act read it

    def overlaps(self, start: datetime, end: datetime) -> bool:
        return self.held_from < end and (self.held_until is None or self.held_until > start)


@dataclass(frozen=True)
class CostObs:
    node: str
    records: Sequence[Mapping[str, Any]]  # cost records (FOCUS + x_ columns) for this node, any order
    # $/h the node should be charged at: one price, or per interval (ChargePeriodStart -> average $/h over
    # the node's part of it; spot prices are a step function, so each interval has its own)
    expected_unit_price: float | Mapping[str, float]
    collector_log: Sequence[str] = ()
    min_records: int = 2
    expected_rate_source: str | None = None  # x_RateSource every record must carry (spot, on-demand, catalog)
    # the node's life as the act saw it in Kubernetes: each record's instance-seconds must agree with it
    node_created: datetime | None = None
    node_deleted: datetime | None = None  # None: still there when the act read the records
    # locally the act told the simulator the load; SM_ACTIVE must come back as that, within the tolerance
    expected_sm_active: float | None = None
    sm_tolerance: float = 0.005
    # who held the node's GPUs, as the collector recorded it: ChargePeriodStart -> the holdings recorded for
    # the node in that interval (GpuHolding dicts); an interval absent had none recorded. Checked (each
    # interval the act's pod overlapped must name it, for its tenant) when `holder` is given.
    holdings: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    holder: HolderObs | None = None

    def unit_price(self, start: str) -> float | None:
        if isinstance(self.expected_unit_price, Mapping):
            return self.expected_unit_price.get(start)
        return self.expected_unit_price


def check_cost(o: CostObs) -> Verdict:
    f: list[str] = []
    recs = sorted(o.records, key=lambda r: r["ChargePeriodStart"])
    if len(recs) < o.min_records:
        quoted = next(
            (line for line in reversed(o.collector_log) if "no samples" in line or "ERROR" in line),
            o.collector_log[-1] if o.collector_log else None,  # else its last word, rather than nothing
        )
        f.append(
            f"{len(recs)} record(s) for {o.node}, expected at least {o.min_records} consecutive"
            + (f"; the collector said: {quoted!r}" if quoted else "; the collector log has no explanation")
        )
    for a, b in pairwise(recs):
        if a["ChargePeriodEnd"] != b["ChargePeriodStart"]:
            f.append(f"records not consecutive: {a['ChargePeriodEnd']} then {b['ChargePeriodStart']}")
    if o.node_created is None:
        f.append(f"the node {o.node}'s creation time was not observed: instance-seconds cannot be checked")
    for r in recs:
        at = r["ChargePeriodStart"]
        if r.get("ResourceName") != o.node:
            f.append(f"{at}: record of {r.get('ResourceName')!r}, not of the act's node {o.node}")
        start, end = _parse(r["ChargePeriodStart"]), _parse(r["ChargePeriodEnd"])
        secs = r.get("x_InstanceSeconds")
        length = (end - start).total_seconds()
        if not isinstance(secs, int | float) or not 0 <= secs <= length:
            f.append(f"{at}: instance-seconds {secs} do not fit inside the {length:g}s interval")
        elif o.node_created is not None:
            alive_from = max(start, o.node_created.replace(microsecond=0))
            alive_to = min(end, o.node_deleted or end)
            lived = max(0.0, (alive_to - alive_from).total_seconds())
            if abs(secs - lived) > SECONDS_TOLERANCE:
                f.append(
                    f"{at}: {secs}s charged, but the node lived {lived:g}s of this interval (created "
                    f"{o.node_created.isoformat()}, deleted {o.node_deleted and o.node_deleted.isoformat()})"
                )
        util, sm, cost, idle = (
            r.get("x_GpuUtilPercent"),
            r.get("x_SmActive"),
            r.get("EffectiveCost"),
            r.get("x_IdleCost"),
        )
        if util is None:
            f.append(f"{at}: GPU_UTIL missing")
        elif not isinstance(util, int | float) or not 0 <= util <= 100:
            f.append(f"{at}: GPU_UTIL={util!r} is not a percentage in 0-100")
        if sm is None:
            f.append(
                f"{at}: SM_ACTIVE missing (the collector said: {r.get('x_Status')}: {r.get('x_Message')})"
            )
        elif not 0 <= sm <= 1:
            f.append(f"{at}: SM_ACTIVE={sm} is not a ratio in [0, 1] (a percentage stored as a ratio?)")
        elif o.expected_sm_active is not None and abs(sm - o.expected_sm_active) > o.sm_tolerance:
            f.append(
                f"{at}: SM_ACTIVE={sm}, but the workload ran at {o.expected_sm_active} "
                f"(tolerance {o.sm_tolerance})"
            )
        if not cost or cost <= 0:
            f.append(f"{at}: interval cost {cost}, expected > 0")
            continue
        if o.expected_rate_source and r.get("x_RateSource") != o.expected_rate_source:
            f.append(
                f"{at}: charged from rate source {r.get('x_RateSource')!r}, expected {o.expected_rate_source!r}"
                f" ({r.get('x_Message') or 'no message'})"
            )
        unit = o.unit_price(at)
        if unit is None:
            f.append(f"{at}: no expected price for this interval to check the cost against")
        else:
            expected = unit * r.get("x_InstanceSeconds", 0) / 3600
            if abs(cost - expected) > TOLERANCE:
                f.append(
                    f"{at}: cost {cost:.6f} != rate {unit:.6f}/h x {r.get('x_InstanceSeconds')}s = {expected:.6f}"
                )
        if sm is not None and 0 <= sm <= 1 and (idle is None or abs(idle - cost * (1 - sm)) > TOLERANCE):
            f.append(f"{at}: idle cost {idle} != cost x (1 - SM_ACTIVE) = {cost * (1 - sm):.6f}")
    if o.holder is not None and recs:
        f += _holding_failures(o, recs)
    total = sum(r.get("EffectiveCost") or 0 for r in recs)
    idle_total = sum(r.get("x_IdleCost") or 0 for r in recs)
    return decide(
        CLAIM,
        f">= {o.min_records} consecutive records, each with GPU_UTIL and SM_ACTIVE (ratio), cost = "
        f"{_price_words(o.expected_unit_price)} x seconds > 0, idle = cost x (1 - SM_ACTIVE)"
        + (f", rate source {o.expected_rate_source}" if o.expected_rate_source else "")
        + (
            f"; GPU holdings recorded naming {o.holder.namespace}/{o.holder.pod} for tenant "
            f"{o.holder.tenant} in each interval it ran"
            if o.holder
            else ""
        ),
        f,
        f"{len(recs)} records, ${total:.6f} of which ${idle_total:.6f} idle",
        node=o.node,
        records=len(recs),
        holdings_recorded=len(o.holdings),
        cost=total,
        idle=idle_total,
    )


def _holding_failures(o: CostObs, recs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each record whose interval the act's pod overlapped must have holdings recorded that name the pod,
    attributed to the act's tenant; at least one record must be such an interval."""
    h = o.holder
    assert h is not None
    who = f"{h.namespace}/{h.pod}"
    f: list[str] = []
    overlapped = [r for r in recs if h.overlaps(_parse(r["ChargePeriodStart"]), _parse(r["ChargePeriodEnd"]))]
    if not overlapped:
        span = f"{h.held_from.isoformat()} to {h.held_until.isoformat() if h.held_until else 'still running'}"
        return [f"no record's interval overlaps the act's pod {who} ({span}): its holding cannot be checked"]
    said = next((line for line in reversed(o.collector_log) if "GPU holdings" in line), None)
    for r in overlapped:
        at = r["ChargePeriodStart"]
        if at not in o.holdings:
            f.append(
                f"{at}: no GPU holdings recorded for {o.node} (the collector ran without a holdings reader, "
                "or its read failed; the export shows this interval unallocated, x_Status no-holdings)"
                + (f"; the collector said: {said!r}" if said else "")
            )
            continue
        held = {(x.get("namespace"), x.get("pod")): x for x in o.holdings[at]}
        mine = held.get((h.namespace, h.pod))
        if mine is None:
            names = sorted(f"{ns}/{p}" for ns, p in held) or "nobody"
            f.append(f"{at}: the holdings recorded for {o.node} name {names}, not the act's pod {who}")
        elif mine.get("tenant") != h.tenant:
            f.append(
                f"{at}: the act's pod {who} was recorded for tenant {mine.get('tenant')!r}, expected {h.tenant!r}"
            )
    return f


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(UTC)


def _price_words(p: float | Mapping[str, float]) -> str:
    if isinstance(p, Mapping):
        return f"the interval's spot price ({len(p)} intervals priced)"
    return f"${p}/h"
