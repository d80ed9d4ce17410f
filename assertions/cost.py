"""Act 6: every cost record of the GPU node holds GPU_UTIL and SM_ACTIVE, a real cost and the idle share.

| clause | identity | ownership | time order | count | provenance | target |
|---|---|---|---|---|---|---|
| enough_consecutive_records | one record per ChargePeriodStart | - | each starts where the last ended | >= min_records and >= 1 (a claim about no records fails), no duplicate interval | the store the collector wrote | local: sqlite; AWS: DynamoDB |
| records_are_of_the_node | ResourceName = the act's node, one ResourceId (machine) for all | - | - | every record | record | same |
| every_figure_from_every_gpu | - | - | - | every record: x_GpusReporting = x_GpuCount >= 1; each figure it gives (GPU_UTIL, SM_ACTIVE) from every card (x_GpusReportingGpuUtil, x_GpusReportingSmActive) | x_Status ok (the collector's own word on its figures); each figure's series named (x_GpuUtilSeries, x_SmActiveSeries) | same |
| instance_seconds_match_the_node_life | the node | - | seconds inside the interval and the node's created..deleted (1 s) | every record | node timestamps from Kubernetes, not the collector | same |
| gpu_util_is_a_percentage | - | - | - | every record | DCGM_FI_DEV_GPU_UTIL | same |
| sm_active_is_the_ratio_the_load_ran_at | - | - | - | every record | DCGM_FI_PROF_SM_ACTIVE | local: must equal the simulator's load (0.005); AWS: real silicon, no expected value |
| sm_active_seen_while_the_load_ran | the act's pod | - | the intervals its span overlaps; none overlapping fails | not all zero, and none exactly zero that the load ran from start to end | recorded SM_ACTIVE; no load said to have run fails (zeros would be idle silicon or a metric never there) | both |
| gpu_util_seen_while_the_load_ran | the act's pod | - | the intervals its span overlaps | not all zero, and none exactly zero that the load ran from start to end | recorded GPU_UTIL | both (the SM_ACTIVE clause names a load not said to have run) |
| sm_active_within_gpu_util | - | - | same interval | every record | the two DCGM fields | both (tolerance 0.05) |
| cost_is_the_rate_times_seconds | - | rate source the act expects | per interval's price | every record | prices the act read itself (AWS: spot history; local: the catalog, not independent) | same clause, different price observers |
| idle_is_cost_times_unused_share | - | - | - | every record | cost, SM_ACTIVE | same |
| holdings_name_the_acts_pod | namespace/pod (the act's pod not observed fails), on the records' node; its devices, where known, whole cards | the act's tenant | every interval the pod's span overlaps; none ended before its Job was created or begun after it finished; the span possible; the holding's own span overlapping the interval | >= 1 such interval; the pod once per interval, holding the GPUs its Job asked for, worth that many whole cards (replicas, equivalents); the node's holdings in the interval no more than its cards, no device twice | the collector's holdings | same |

Tolerances: dollars 1e-6 (float sums); instance-seconds 1 s (Kubernetes stores whole seconds); the
simulated SM_ACTIVE 0.005 (a scrape at an interval's edge); SM_ACTIVE may exceed GPU_UTIL/100 by at most
0.05: GPU_UTIL is the share of time any kernel ran, SM_ACTIVE the share of SM cycles with a warp resident,
averaged over all SMs, so it cannot exceed the first; DCGM samples the two on different schedules, so an
interval's means may differ by a sample's worth, and that tolerance would let a GPU_UTIL of 0 under a small
SM_ACTIVE through: GPU_UTIL identically zero while the load ran is its own clause. "Identically zero" is exact:
any activity at all while a compute load ran is the metric being there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from itertools import pairwise
from typing import Any

from assertions.clauses import Miss, compose, parse_iso
from assertions.cost_holdings import holdings_name_the_acts_pod
from assertions.cost_obs import CostObs
from assertions.verdict import Verdict

CLAIM = (
    "the collector wrote consecutive records for the GPU node with GPU_UTIL, SM_ACTIVE, cost and idle share"
)
TOLERANCE = 1e-6  # dollars
SECONDS_TOLERANCE = 1.0  # Kubernetes stores creation and deletion times in whole seconds
SM_OVER_UTIL_TOLERANCE = 0.05  # SM_ACTIVE above GPU_UTIL/100 by more than this is not one GPU's metrics


def ordered(o: CostObs) -> list[Mapping[str, Any]]:
    return sorted(o.records, key=lambda r: r["ChargePeriodStart"])


def _number(value: Any) -> bool:
    """A real number: not a bool, and finite (NaN compares False with every bound, so it would pass them all)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _sm(r: Mapping[str, Any]) -> float | None:
    """The record's SM_ACTIVE when it is a ratio in [0, 1]; None otherwise (other clauses say why)."""
    sm = r.get("x_SmActive")
    return float(sm) if _number(sm) and 0 <= sm <= 1 else None


def enough_consecutive_records(o: CostObs) -> list[Miss]:
    recs = ordered(o)
    want = f">= {o.min_records} consecutive records, one per interval"
    misses = []
    if o.min_records < 1:
        misses.append(Miss(want, f"min_records {o.min_records}: a claim about no records proves nothing"))
    if len(recs) < max(o.min_records, 1):
        quoted = next(
            (line for line in reversed(o.collector_log) if "no samples" in line or "ERROR" in line),
            o.collector_log[-1] if o.collector_log else None,  # else its last word, rather than nothing
        )
        misses.append(
            Miss(
                want,
                f"{len(recs)} record(s) for {o.node}, expected at least {o.min_records} consecutive"
                + (
                    f"; the collector said: {quoted!r}"
                    if quoted
                    else "; the collector log has no explanation"
                ),
            )
        )
    starts = [r["ChargePeriodStart"] for r in recs]
    if len(set(starts)) != len(starts):
        misses.append(Miss(want, f"one interval recorded twice: {starts}"))
    for a, b in pairwise(recs):
        if (
            a["ChargePeriodEnd"] != b["ChargePeriodStart"]
            and a["ChargePeriodStart"] != b["ChargePeriodStart"]
        ):
            misses.append(
                Miss(want, f"records not consecutive: {a['ChargePeriodEnd']} then {b['ChargePeriodStart']}")
            )
    return misses


def records_are_of_the_node(o: CostObs) -> list[Miss]:
    misses = [
        Miss(
            f"records of {o.node}",
            f"{r['ChargePeriodStart']}: record of {r.get('ResourceName')!r}, not of the act's node {o.node}",
        )
        for r in ordered(o)
        if r.get("ResourceName") != o.node
    ]
    machines = sorted({str(r.get("ResourceId")) for r in ordered(o)})
    if len(machines) > 1:  # one node name, several instances: a node re-created under its name
        misses.append(
            Miss(
                f"records of {o.node}, one machine", f"the records name {len(machines)} machines: {machines}"
            )
        )
    return misses


def instance_seconds_match_the_node_life(o: CostObs) -> list[Miss]:
    want = "instance-seconds = the node's life inside each interval (1 s)"
    if o.node_created is None:
        return [
            Miss(
                want,
                f"the node {o.node}'s creation time was not observed: instance-seconds cannot be checked",
            )
        ]
    misses = []
    for r in ordered(o):
        at = r["ChargePeriodStart"]
        start, end = parse_iso(r["ChargePeriodStart"]), parse_iso(r["ChargePeriodEnd"])
        secs = r.get("x_InstanceSeconds")
        length = (end - start).total_seconds()
        if not _number(secs) or not 0 <= secs <= length:
            misses.append(
                Miss(want, f"{at}: instance-seconds {secs} do not fit inside the {length:g}s interval")
            )
            continue
        alive_from = max(start, o.node_created.replace(microsecond=0))
        alive_to = min(end, o.node_deleted or end)
        lived = max(0.0, (alive_to - alive_from).total_seconds())
        if abs(secs - lived) > SECONDS_TOLERANCE:
            misses.append(
                Miss(
                    want,
                    f"{at}: {secs}s charged, but the node lived {lived:g}s of this interval (created "
                    f"{o.node_created.isoformat()}, deleted {o.node_deleted and o.node_deleted.isoformat()})",
                )
            )
    return misses


def every_figure_from_every_gpu(o: CostObs) -> list[Miss]:
    """A record's figures are the node's only when the collector says so: status ok, and as many GPUs
    reporting as the node has (a figure from some of its GPUs, or none, is not the node's)."""
    want = "status ok, every GPU of the node reporting"
    misses = []
    for r in ordered(o):
        at, status = r["ChargePeriodStart"], r.get("x_Status")
        gpus, reporting = r.get("x_GpuCount"), r.get("x_GpusReporting")
        if status != "ok":
            misses.append(Miss(want, f"{at}: status {status!r} ({r.get('x_Message') or 'no message'})"))
        elif not _number(gpus) or gpus < 1 or reporting != gpus:
            misses.append(
                Miss(
                    want,
                    f"{at}: {reporting} GPUs reporting of the node's {gpus}: its figures are not the node's",
                )
            )
        else:
            misses += _each_figure_from_every_gpu(r, want)
    return misses


# each figure, the columns saying how many cards reported it and from which series
PROVENANCE = {
    "GPU_UTIL": ("x_GpuUtilPercent", "x_GpusReportingGpuUtil", "x_GpuUtilSeries"),
    "SM_ACTIVE": ("x_SmActive", "x_GpusReportingSmActive", "x_SmActiveSeries"),
}


def _each_figure_from_every_gpu(r: Mapping[str, Any], want: str) -> list[Miss]:
    """A figure the record gives is the node's only when every card reported it, from a series it names."""
    misses = []
    for figure, (value, cards, series) in PROVENANCE.items():
        if r.get(value) is None:
            continue  # the figure's own clause says it is missing
        named = r.get(series)
        if r.get(cards) != r["x_GpuCount"] or not isinstance(named, str) or not named.strip():
            misses.append(
                Miss(
                    want,
                    f"{r['ChargePeriodStart']}: {figure} from {r.get(cards)} of the node's {r['x_GpuCount']} cards, "
                    f"series {named!r}: a figure is the node's only from every card, read from a series it names",
                )
            )
    return misses


def gpu_util_is_a_percentage(o: CostObs) -> list[Miss]:
    misses = []
    for r in ordered(o):
        util = r.get("x_GpuUtilPercent")
        if util is None:
            misses.append(Miss("GPU_UTIL in 0-100", f"{r['ChargePeriodStart']}: GPU_UTIL missing"))
        elif not _number(util) or not 0 <= util <= 100:
            misses.append(
                Miss(
                    "GPU_UTIL in 0-100",
                    f"{r['ChargePeriodStart']}: GPU_UTIL={util!r} is not a percentage in 0-100",
                )
            )
    return misses


def sm_active_is_the_ratio_the_load_ran_at(o: CostObs) -> list[Miss]:
    want = "SM_ACTIVE a ratio in [0, 1]" + (
        f", {o.expected_sm_active} +- {o.sm_tolerance}" if o.expected_sm_active is not None else ""
    )
    misses = []
    for r in ordered(o):
        at, sm = r["ChargePeriodStart"], r.get("x_SmActive")
        if sm is None:
            misses.append(
                Miss(
                    want,
                    f"{at}: SM_ACTIVE missing (the collector said: {r.get('x_Status')}: {r.get('x_Message')})",
                )
            )
        elif not _number(sm) or not 0 <= sm <= 1:
            misses.append(
                Miss(want, f"{at}: SM_ACTIVE={sm} is not a ratio in [0, 1] (a percentage stored as a ratio?)")
            )
        elif o.expected_sm_active is not None and abs(sm - o.expected_sm_active) > o.sm_tolerance:
            misses.append(
                Miss(
                    want,
                    f"{at}: SM_ACTIVE={sm}, but the workload ran at {o.expected_sm_active} "
                    f"(tolerance {o.sm_tolerance})",
                )
            )
    return misses


def _util(r: Mapping[str, Any]) -> float | None:
    """The record's GPU_UTIL when it is a percentage in [0, 100]; None otherwise (other clauses say why)."""
    util = r.get("x_GpuUtilPercent")
    return float(util) if _number(util) and 0 <= util <= 100 else None


def _seen_while_the_load_ran(
    o: CostObs, metric: str, read: Callable[[Mapping[str, Any]], float | None], *, says_no_overlap: bool
) -> list[Miss]:
    """A compute load ran: `metric` exactly zero in every interval it ran is the metric that was never there.
    Only one of the metrics' clauses (`says_no_overlap`) names a load span no record overlaps."""
    if not o.compute_load:
        if not says_no_overlap:
            return []  # sm_active_seen_while_the_load_ran says no load ran
        return [
            Miss(
                f"{metric} recorded in some interval the compute load ran",
                "no compute load is said to have run on the node's GPU: SM_ACTIVE and GPU_UTIL identically zero "
                "would be idle silicon or a metric never there, and nothing tells them apart",
            )
        ]
    recs = ordered(o)
    h = o.holder
    during = [
        r
        for r in recs
        if h is None or h.overlaps(parse_iso(r["ChargePeriodStart"]), parse_iso(r["ChargePeriodEnd"]))
    ]
    if recs and not during:
        if not says_no_overlap:
            return []  # sm_active_seen_while_the_load_ran names the span no record overlaps
        return [
            Miss(
                f"{metric} recorded in some interval the compute load ran",
                f"no record's interval overlaps the load's span ({h.held_from.isoformat() if h else '?'} to "
                f"{h.held_until.isoformat() if h and h.held_until else 'still running'}): whether {metric} "
                "was there while it ran is unobserved",
            )
        ]
    values = [read(r) for r in during]
    if not during or any(v is None for v in values):
        return []  # no record at all (the count clause says so), or a value other clauses reject
    if any(values):
        # an interval the load ran from its start to its end, reading exactly zero, is a gap in the metric
        through = [
            r["ChargePeriodStart"]
            for r, v in zip(during, values, strict=True)
            if v == 0
            and h is not None
            and h.held_from <= parse_iso(r["ChargePeriodStart"])
            and (h.held_until is None or parse_iso(r["ChargePeriodEnd"]) <= h.held_until)
        ]
        if not through:
            return []
        return [
            Miss(
                f"{metric} above zero in every interval the compute load ran throughout",
                f"{metric} was 0 in interval(s) {through}, which the compute load ran from start to end: the "
                "metric was missing there",
            )
        ]
    return [
        Miss(
            f"{metric} above zero in some interval the compute load ran",
            f"{metric} was 0 in all {len(during)} interval(s) the compute load ran "
            f"({during[0]['ChargePeriodStart']} to {during[-1]['ChargePeriodEnd']}): the metric was never there",
        )
    ]


def sm_active_seen_while_the_load_ran(o: CostObs) -> list[Miss]:
    """A compute load ran: SM_ACTIVE exactly zero in every interval it ran is the metric that was never there."""
    return _seen_while_the_load_ran(o, "SM_ACTIVE", _sm, says_no_overlap=True)


def gpu_util_seen_while_the_load_ran(o: CostObs) -> list[Miss]:
    """A compute load ran: GPU_UTIL exactly zero in every interval it ran is the metric that was never there
    (SM_ACTIVE within its tolerance above GPU_UTIL/100 does not catch it)."""
    return _seen_while_the_load_ran(o, "GPU_UTIL", _util, says_no_overlap=False)


def sm_active_within_gpu_util(o: CostObs) -> list[Miss]:
    misses = []
    for r in ordered(o):
        sm, util = _sm(r), r.get("x_GpuUtilPercent")
        if sm is None or not _number(util) or not 0 <= util <= 100:
            continue  # the two clauses above say what is wrong with each
        if sm > util / 100 + SM_OVER_UTIL_TOLERANCE:
            misses.append(
                Miss(
                    f"SM_ACTIVE <= GPU_UTIL/100 + {SM_OVER_UTIL_TOLERANCE}",
                    f"{r['ChargePeriodStart']}: SM_ACTIVE={sm} but GPU_UTIL={util}%: SMs cannot be busier than "
                    "the time any kernel ran",
                )
            )
    return misses


def cost_is_the_rate_times_seconds(o: CostObs) -> list[Miss]:
    want = f"cost = {_price_words(o.expected_unit_price)} x seconds > 0" + (
        f", rate source {o.expected_rate_source}" if o.expected_rate_source else ""
    )
    misses = []
    for r in ordered(o):
        at, cost = r["ChargePeriodStart"], r.get("EffectiveCost")
        if not _number(cost) or cost <= 0:
            misses.append(Miss(want, f"{at}: interval cost {cost}, expected > 0"))
            continue
        if o.expected_rate_source and r.get("x_RateSource") != o.expected_rate_source:
            misses.append(
                Miss(
                    want,
                    f"{at}: charged from rate source {r.get('x_RateSource')!r}, expected "
                    f"{o.expected_rate_source!r} ({r.get('x_Message') or 'no message'})",
                )
            )
        unit = o.unit_price(at)
        if unit is None or not _number(unit) or unit <= 0:
            misses.append(
                Miss(
                    want, f"{at}: no expected price for this interval to check the cost against (read {unit})"
                )
            )
            continue
        secs = r.get("x_InstanceSeconds")
        expected = unit * (secs if _number(secs) else 0) / 3600
        if abs(cost - expected) > TOLERANCE:
            misses.append(
                Miss(want, f"{at}: cost {cost:.6f} != rate {unit:.6f}/h x {secs}s = {expected:.6f}")
            )
    return misses


def idle_is_cost_times_unused_share(o: CostObs) -> list[Miss]:
    misses = []
    for r in ordered(o):
        cost, idle, sm = r.get("EffectiveCost"), r.get("x_IdleCost"), _sm(r)
        if sm is None or not _number(cost) or cost <= 0:
            continue  # SM_ACTIVE or the cost is wrong already, and its clause says so
        if not _number(idle) or abs(idle - cost * (1 - sm)) > TOLERANCE:
            misses.append(
                Miss(
                    "idle = cost x (1 - SM_ACTIVE)",
                    f"{r['ChargePeriodStart']}: idle cost {idle} != cost x (1 - SM_ACTIVE) = "
                    f"{cost * (1 - sm):.6f}",
                )
            )
    return misses


CLAUSES = (
    enough_consecutive_records,
    records_are_of_the_node,
    every_figure_from_every_gpu,
    instance_seconds_match_the_node_life,
    gpu_util_is_a_percentage,
    sm_active_is_the_ratio_the_load_ran_at,
    sm_active_seen_while_the_load_ran,
    gpu_util_seen_while_the_load_ran,
    sm_active_within_gpu_util,
    cost_is_the_rate_times_seconds,
    idle_is_cost_times_unused_share,
    holdings_name_the_acts_pod,
)


def check_cost(o: CostObs) -> Verdict:
    """Act 6's claim: every clause of `CLAUSES` over the node's records."""
    recs = ordered(o)
    total = sum(r.get("EffectiveCost") or 0 for r in recs)
    idle_total = sum(r.get("x_IdleCost") or 0 for r in recs)
    return compose(
        CLAIM,
        f">= {o.min_records} consecutive records, each with GPU_UTIL and SM_ACTIVE (ratio, <= GPU_UTIL/100 + "
        f"{SM_OVER_UTIL_TOLERANCE}), cost = {_price_words(o.expected_unit_price)} x seconds > 0, idle = cost x "
        "(1 - SM_ACTIVE)"
        + (f", rate source {o.expected_rate_source}" if o.expected_rate_source else "")
        + (
            "; SM_ACTIVE and GPU_UTIL not identically zero while the compute load ran"
            if o.compute_load
            else ""
        )
        + (
            f"; GPU holdings recorded naming {o.holder.namespace}/{o.holder.pod} for tenant "
            f"{o.holder.tenant} in each interval it ran"
            if o.holder
            else ""
        ),
        CLAUSES,
        o,
        lambda: f"{len(recs)} records, ${total:.6f} of which ${idle_total:.6f} idle",
        node=o.node,
        records=len(recs),
        holdings_recorded=len(o.holdings),
        cost=total,
        idle=idle_total,
    )


def _price_words(p: float | Mapping[str, float]) -> str:
    if isinstance(p, Mapping):
        return f"the interval's spot price ({len(p)} intervals priced)"
    return f"${p}/h"
