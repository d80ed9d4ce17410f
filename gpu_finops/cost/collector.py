"""The GPU cost collector: of what each GPU node cost in an interval, how much bought no computation.

Every cycle: list GPU nodes from Kubernetes; run one range-aware PromQL query per DCGM metric for all
GPUs at once (a constant number of queries, whatever the fleet size), joined to nodes by the exporter's
`hostname` label (`Hostname` before dcgm-exporter 4.8.3: either is read); price the observed instance-seconds;
write one record per node per interval, and beside it who held the node's GPUs in that interval
(gpu_finops.cost.holdings_record), when a holdings reader is given.
Missing data is kept as a gap (None) with a status saying why, never a made-up 0 or 1.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from statistics import fmean
from typing import Protocol

from gpu_finops.clients.nodes import GpuNode
from gpu_finops.clients.promql import PrometheusClient
from gpu_finops.cost.holdings_record import HoldingsReader, HoldingsRecorder, IntervalHoldings, for_intervals
from gpu_finops.cost.metrics import CollectorMetrics
from gpu_finops.cost.pricing import IntervalCost, RateBook
from gpu_finops.cost.rates import RateUnavailable
from gpu_finops.cost.records import (
    STATUS_MISSING_SM_ACTIVE,
    STATUS_NO_GPU_SERIES,
    STATUS_NO_RATE,
    STATUS_OK,
    STATUS_PARTIAL,
    STATUS_STARTING,
    CostRecord,
    CycleResult,
)
from gpu_finops.cost.store import CostStore
from gpu_finops.facts import dcgm, dcgm_inputs
from gpu_finops.facts.dcgm_inputs import PINNED, Spelling
from gpu_finops.facts.errors import failure_line
from gpu_finops.facts.timestamps import iso
from gpu_finops.model import holding

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 60  # seconds
DEFAULT_GRACE = 300  # seconds a new node may show no GPU series before that is an error
CONFIG_ERRORS = frozenset({STATUS_MISSING_SM_ACTIVE, STATUS_NO_GPU_SERIES, STATUS_NO_RATE})


class NodeSource(Protocol):
    def gpu_nodes(self) -> list[GpuNode]: ...


# hostname -> metric (the pinned exporter's name) -> gpu id -> mean value over the interval
GpuReadings = dict[str, dict[str, dict[str, float]]]


@dataclass
class Readings:
    """What one round of queries returned: values by node, and the series no node can be joined to."""

    by_host: GpuReadings = field(default_factory=dict)
    unjoinable: list[str] = field(default_factory=list)  # series with no node label, by name
    util_unit: str | None = None  # GPU_UTIL's unit as the data showed it (dcgm_inputs.util_unit)
    unit_error: str | None = None  # why the unit could not be read: GPU_UTIL is then left empty
    # hostname -> reading key of a MIG GPU instance (`<card UUID>/<GPU_I_ID>`) -> its profile (GPU_I_PROFILE)
    instances: dict[str, dict[str, str]] = field(default_factory=dict)


def _per_gpu_query(metric: str, key: str, by: str, window_seconds: int) -> str:
    """The window mean of one metric per GPU. For the fields dcgm-exporter reports per process on a held
    card (GPU_UTIL; docs/infra.md, "Time-sliced attribution"), the card's own series, the one without pod
    labels, where it has one; else the mean of its series (copies of one value, or the one series)."""
    mean = f"avg by ({by}) (avg_over_time({metric}[{window_seconds}s]))"
    if key not in dcgm.PER_PROCESS:
        return mean
    card = f'avg by ({by}) (avg_over_time({metric}{{pod="", exported_pod=""}}[{window_seconds}s]))'
    return f"{card} or {mean}"


def gpu_readings(
    prom: PrometheusClient,
    end: datetime,
    window_seconds: int,
    spelling: Spelling = PINNED,
) -> Readings:
    """One query per metric for every GPU: the mean over (end - window, end], by node and GPU, under the
    fleet's spelling of each metric and of the node label (every spelling of it, so an exporter rollout
    joins); values are keyed by the pinned exporter's name and put in its units (GPU_UTIL in percent,
    its unit read from the data; SM clock in MHz). A series with no node label is kept by name in
    `unjoinable`, never dropped silently. Per GPU, not per holder: the pod labels change when a GPU
    changes hands, and a mean per holder would split one GPU's interval."""
    out = Readings()
    # under MIG the exporter reports each GPU instance (GPU_I_PROFILE, GPU_I_ID) with its card's UUID
    by = ", ".join(
        (*spelling.hostname_labels, "gpu", "UUID", dcgm.MIG_PROFILE_LABEL, dcgm.MIG_INSTANCE_LABEL)
    )
    util: list[tuple[str, str, str, float]] = []  # (host, gpu, series, value) until the unit is known
    for metric in spelling.collected:
        key = spelling.canonical(metric)
        for sample in prom.query(_per_gpu_query(metric, key, by, window_seconds), at=end):
            host = spelling.hostname_of(sample.labels)
            if not host:
                out.unjoinable.append(dcgm.describe_series(metric, sample.labels))
                continue
            gpu = sample.labels.get("UUID") or sample.labels.get("gpu") or "?"
            instance = sample.labels.get(dcgm.MIG_INSTANCE_LABEL)
            if instance:  # one GPU instance of a MIG card: its own reading, weighed by its share later
                gpu = f"{gpu}/{instance}"
                out.instances.setdefault(host, {})[gpu] = sample.labels.get(dcgm.MIG_PROFILE_LABEL, "")
            if key == dcgm.GPU_UTIL:
                util.append((host, gpu, dcgm.describe_series(metric, sample.labels), sample.value))
                continue
            value = sample.value / spelling.sm_clock_per_mhz if key == dcgm.SM_CLOCK else sample.value
            out.by_host.setdefault(host, {}).setdefault(key, {})[gpu] = value
    try:
        out.util_unit = dcgm_inputs.util_unit(spelling, [(series, v) for _, _, series, v in util])
    except dcgm_inputs.SpellingError as exc:
        out.unit_error = str(exc)
    for host, gpu, _, value in util:
        percent = dcgm_inputs.as_percent(value, out.util_unit) if out.util_unit else math.nan
        out.by_host.setdefault(host, {}).setdefault(dcgm.GPU_UTIL, {})[gpu] = percent
    return out


def align(t: datetime, interval: int) -> datetime:
    """Floor t to the interval grid (so restarts produce the same keys and never double count)."""
    epoch = int(t.timestamp()) // interval * interval
    return datetime.fromtimestamp(epoch, tz=UTC)


def _mean(values: dict[str, float] | None) -> float | None:
    if not values:
        return None
    mean = fmean(values.values())
    return None if math.isnan(mean) else mean  # NaN: GPU_UTIL whose unit could not be read


def mig_sm_active(
    node: GpuNode, sm: dict[str, float] | None, instances: dict[str, str]
) -> tuple[float | None, str | None]:
    """A MIG node's SM_ACTIVE: each GPU instance's reading (the fraction of its own SMs active) weighed by the
    part of its card's compute it has (its compute slices of 7), each card left whole at 1, over the node's
    cards. So compute a layout leaves unused (1g.20gb x 4 uses 4 of 7) counts as idle, and the idle cost,
    cost x (1 - SM_ACTIVE), is exactly the sum of each share's own, cost x (share - compute part x its
    SM_ACTIVE), never below zero since a slice's share is at least its compute part. (value, None), or (None,
    why): the node cannot be read, or its readings are not exactly its slices and whole cards (one missing, a
    profile it does not advertise, more than its layout has: a series left from a layout changed within the
    window)."""
    try:
        read = holding.read_node(node.name, node.labels, node.capacity, strict=True)
    except holding.NodeGpusError as exc:
        return None, f"{exc}; SM_ACTIVE per MIG instance cannot be weighed, idle cost left empty"
    expected: dict[str, int] = {}  # profile -> its slices on the node; "" -> cards left whole
    compute: dict[str, Fraction] = {"": Fraction(1)}
    for offer in read.offers.values():
        key = offer.profile.name if offer.kind is holding.Kind.MIG_SLICE and offer.profile else ""
        expected[key] = expected.get(key, 0) + offer.count // offer.replicas
        if offer.profile is not None:
            compute[key] = offer.profile.compute_fraction
    got: dict[str, int] = {}
    total = Fraction(0)
    for reading, value in (sm or {}).items():
        profile = instances.get(reading, "")  # a card left whole reports as a GPU, without instance labels
        if profile not in compute:
            return None, (
                f"a GPU instance of profile {profile!r} reports {dcgm.SM_ACTIVE} on {node.name}, which advertises "
                f"{sorted(p for p in expected if p) or 'no MIG slices'}: idle cost left empty rather than guessed"
            )
        got[profile] = got.get(profile, 0) + 1
        total += compute[profile] * Fraction(value)
    if got != {p: n for p, n in expected.items() if n}:

        def said(counts: dict[str, int]) -> str:
            return ", ".join(f"{n} {p or 'whole card(s)'}" for p, n in sorted(counts.items()) if n) or "none"

        return None, (
            f"{dcgm.SM_ACTIVE} on {node.name} reads {said(got)}, not its slices and whole cards ({said(expected)}): "
            "one not reporting, or a series left from an earlier layout; idle cost left empty rather than guessed"
        )
    return float(total / read.cards) if read.cards else None, None


def _cards(per_gpu: dict[str, float] | None) -> int:
    """How many cards a figure's readings came from (a MIG instance's key is `<card>/<instance>`)."""
    return len({k.partition("/")[0] for k in per_gpu or {}})


def make_record(
    node: GpuNode,
    start: datetime,
    end: datetime,
    observed: tuple[datetime, datetime],
    priced: IntervalCost | None,
    rate_error: str | None,
    readings: dict[str, dict[str, float]] | None,
    *,
    grace_seconds: float,
    util_unit: str | None = dcgm_inputs.PERCENT,
    spelling: Spelling = PINNED,
    instances: dict[str, str] | None = None,
) -> CostRecord:
    """Build one record. Pure: every input is passed in. `instances`: the node's MIG GPU instances among the
    readings' keys, with their profiles (`mig_sm_active` weighs them)."""
    obs_start, obs_end = observed
    seconds = max(0.0, (obs_end - obs_start).total_seconds())
    readings = readings or {}
    util, sm = readings.get(dcgm.GPU_UTIL), readings.get(dcgm.SM_ACTIVE)
    age = (end - node.created).total_seconds()
    message = priced.message if priced else None

    mig = mig_sm_active(node, sm, instances) if instances and sm else None
    if priced is None:
        status, message = STATUS_NO_RATE, rate_error
    elif mig is not None:
        status, message = (STATUS_OK, None) if mig[0] is not None else (STATUS_PARTIAL, mig[1])
    elif sm and len(sm) >= node.gpu_count:
        status = STATUS_OK
    elif sm:
        status = STATUS_PARTIAL
        message = (
            f"{len(sm)} of {node.gpu_count} GPUs on {node.name} report {dcgm.SM_ACTIVE}; "
            "idle cost left empty rather than guessed"
        )
    elif util:
        status = STATUS_MISSING_SM_ACTIVE
        message = (
            f"{spelling.gpu_util} has series for {node.name} but {spelling.sm_active} has none: the "
            "dcgm-exporter metrics CSV (its --collectors file, the chart's `arguments` ConfigMap) does not "
            "export it (dcgm-exporter's default-counters.csv leaves it out). Fix: `gpu-finops dcgm-csv > "
            "dcgm-metrics.csv` and deploy that CSV to the exporter, or lint yours with "
            "`gpu-finops check-metrics-csv FILE`"
        )
    elif age < grace_seconds:
        status = STATUS_STARTING
        message = f"node {node.name} is {age:.0f}s old, within the {grace_seconds:.0f}s grace period; no GPU series yet"
    else:
        status = STATUS_NO_GPU_SERIES
        message = (
            f"no DCGM series with {' or '.join(spelling.hostname_labels)}={node.name} for {age:.0f}s "
            f"(spelling {spelling.name}): is dcgm-exporter "
            "running on that node, and is Prometheus scraping it?"
        )

    if status != STATUS_OK:
        sm_active = None
    elif mig is not None:
        sm_active = mig[0]
    else:
        sm_active = _mean(sm)
    cost = priced.cost if priced else None
    idle = cost * (1 - sm_active) if (cost is not None and sm_active is not None) else None
    hours = seconds / 3600
    return CostRecord(
        ChargePeriodStart=iso(start),
        ChargePeriodEnd=iso(end),
        ResourceId=node.instance_id or node.name,
        ResourceName=node.name,
        ResourceType="GPU node",
        RegionId=node.region,
        AvailabilityZone=node.zone,
        PricingCategory="Dynamic" if node.capacity_type == "spot" else "Standard",
        PricingUnit="Hours",
        PricingQuantity=hours,
        ListUnitPrice=priced.list_unit_price if priced else None,
        EffectiveCost=cost,
        x_InstanceType=node.instance_type,
        x_CapacityType=node.capacity_type,
        x_NodePool=node.nodepool,
        x_GpuCount=node.gpu_count,
        x_InstanceSeconds=seconds,
        x_EffectiveUnitPrice=(cost / hours) if (cost is not None and hours > 0) else None,
        x_RateSource=priced.source if priced else None,
        x_RateStale=bool(priced and priced.stale),
        x_GpuUtilPercent=_mean(util),
        x_SmActive=sm_active,
        x_SmOccupancy=_mean(readings.get(dcgm.SM_OCCUPANCY)),
        x_PowerWatts=_mean(readings.get(dcgm.POWER_USAGE)),
        x_SmClockMHz=_mean(readings.get(dcgm.SM_CLOCK)),
        x_GpusReporting=_cards(sm or util),  # cards, not MIG instances
        x_IdleCost=idle,
        x_Status=status,
        x_Message=message,
        x_GpuUtilUnit=util_unit if util else None,
        x_GpusReportingGpuUtil=_cards(util),
        x_GpusReportingSmActive=_cards(sm),
        x_GpuUtilSeries=spelling.gpu_util if util else None,
        x_SmActiveSeries=spelling.sm_active if sm else None,
    )


class Collector:
    """Collects one record per GPU node per interval into a cost store."""

    def __init__(
        self,
        nodes: NodeSource,
        prom: PrometheusClient,
        rates: RateBook,
        store: CostStore,
        *,
        interval: int = DEFAULT_INTERVAL,
        grace_seconds: float = DEFAULT_GRACE,
        metrics: CollectorMetrics | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        holdings: HoldingsReader | None = None,
        spelling: Spelling = PINNED,
    ):
        self.nodes, self.prom, self.rates, self.store = nodes, prom, rates, store
        self.spelling = (
            spelling  # how the fleet's exporter spells the inputs (gpu_finops/facts/dcgm_inputs.py)
        )
        self._util_unit: str | None = None  # GPU_UTIL's unit in the cycle being recorded
        self._instances: dict[str, dict[str, str]] = {}  # the cycle's MIG GPU instances per node
        self.interval, self.grace_seconds = interval, grace_seconds
        self.metrics = metrics or CollectorMetrics()
        self.clock = clock
        # name -> (facts, when last listed): a node gone since the last cycle is still charged for the
        # part of the interval it was observed in.
        self._seen: dict[str, tuple[GpuNode, datetime]] = {}
        # who held the GPUs, read each cycle; None: nothing recorded (the export says `no-holdings`)
        self.holdings = HoldingsRecorder(holdings) if holdings else None

    def last_complete_interval(self) -> tuple[datetime, datetime]:
        end = align(self.clock(), self.interval)
        return end - timedelta(seconds=self.interval), end

    def cycle(self, start: datetime | None = None, end: datetime | None = None) -> CycleResult:
        """Collect one interval (default: the last complete one) and write its records."""
        began = time.perf_counter()
        if start is None or end is None:
            start, end = self.last_complete_interval()
        listed_at = self.clock()
        listed = {n.name: n for n in self.nodes.gpu_nodes()}
        gone = {name: seen for name, seen in self._seen.items() if name not in listed}
        held, holdings_problem = None, None
        if self.holdings is not None:
            try:
                held = self.holdings.read(listed_at)
            except Exception as exc:  # recorded as missing, so the export says so; the cost is still written
                holdings_problem = (
                    f"GPU holdings ({self.holdings.reader.source}) could not be read: {type(exc).__name__}: "
                    f"{str(exc)[:300]}; the intervals of [{iso(start)}, {iso(end)}) have no holdings "
                    "recorded and will export as unallocated (x_Status no-holdings)"
                )
        queries_before = self.prom.queries
        got = gpu_readings(self.prom, end, int((end - start).total_seconds()), self.spelling)
        readings = got.by_host
        self._util_unit = got.util_unit
        self._instances = got.instances
        queries = self.prom.queries - queries_before

        records: list[CostRecord] = []
        for node in listed.values():
            obs_end = min(end, node.deleted) if node.deleted and node.deleted > start else end
            records.append(self._record(node, start, end, (max(start, node.created), obs_end), readings))
        for node, last_seen in gone.values():
            # Observed until it was last listed (or its deletion time, if later); never past the interval.
            until = min(end, max(last_seen, node.deleted or last_seen))
            if until > start:
                records.append(self._record(node, start, end, (max(start, node.created), until), readings))
        records = [r for r in records if r.x_InstanceSeconds > 0]

        self._seen = {name: (node, listed_at) for name, node in listed.items()}
        problems = [
            f"{r.ResourceName}: {r.x_Status}: {r.x_Message}" for r in records if r.x_Status in CONFIG_ERRORS
        ]
        if got.unit_error:
            problems.append(
                got.unit_error + f"; x_GpuUtilPercent is left empty in [{iso(start)}, {iso(end)})"
            )
        if got.unjoinable:
            labels = " nor ".join(f"`{label}`" for label in self.spelling.hostname_labels)
            problems.append(
                f"{len(got.unjoinable)} DCGM series carry no node label (neither {labels}), so no "
                f"node can be charged for them: {', '.join(got.unjoinable[:5])}"
                + (" ..." if len(got.unjoinable) > 5 else "")
                + "; is Prometheus dropping the exporter's labels (relabelling), or is this not dcgm-exporter?"
            )
        problems += self.metrics.observe_shares(list(listed.values()))
        self.metrics.observe_claims(held)
        settled = [n for n in listed.values() if (end - n.created).total_seconds() >= self.grace_seconds]
        if holdings_problem:
            problems.append(holdings_problem)
        if settled and not any(n.name in readings for n in settled):
            problems.append(
                f"no samples: Prometheus returned no DCGM series for any of the {len(settled)} GPU "
                f"node(s) past their grace period, in [{iso(start)}, {iso(end)})"
            )
        for problem in problems:
            log.error("%s", problem)
        if not listed:
            log.info("no GPU nodes in [%s, %s): nothing to record", iso(start), iso(end))
        intervals: list[IntervalHoldings] = []
        if held is not None and self.holdings is not None:
            keys = [(r.ResourceName, r.ResourceId, start, end) for r in records]
            intervals = for_intervals(keys, held, self.holdings.reader.source, iso(listed_at))
        self.store.upsert(records, intervals)
        elapsed = time.perf_counter() - began
        result = CycleResult(start, end, records, queries, elapsed, problems)
        self.metrics.observe_cycle(result)
        self.metrics.observe_tenants(result, intervals)
        log.info(
            "cycle [%s, %s): %d record(s), %d queries, %.2fs, %s",
            iso(start),
            iso(end),
            len(records),
            queries,
            elapsed,
            "healthy" if result.healthy else f"{len(problems)} problem(s)",
        )
        return result

    def _record(
        self,
        node: GpuNode,
        start: datetime,
        end: datetime,
        observed: tuple[datetime, datetime],
        readings: GpuReadings,
    ) -> CostRecord:
        priced: IntervalCost | None = None
        error = None
        try:
            priced = self.rates.interval_cost(node, *observed)
        except RateUnavailable as exc:
            error = str(exc)
        return make_record(
            node,
            start,
            end,
            observed,
            priced,
            error,
            readings.get(node.name),
            grace_seconds=self.grace_seconds,
            util_unit=self._util_unit,
            spelling=self.spelling,
            instances=self._instances.get(node.name),
        )

    def run_forever(self, stop: Callable[[], bool] = lambda: False, scrape_lag: float = 5.0) -> None:
        """Collect each interval once it is complete (plus a scrape lag), until `stop()` is true."""
        while not stop():
            _, end = self.last_complete_interval()
            next_end = end + timedelta(seconds=self.interval)
            wake = (next_end - self.clock()).total_seconds() + scrape_lag
            if wake > 0:
                time.sleep(wake)
            try:
                self.cycle()
            except Exception as exc:  # the daemon reports and keeps going; health shows the failure
                log.error("collector cycle failed: %s", failure_line(exc))  # one line; -v adds the traceback
                log.debug("collector cycle failed", exc_info=True)
                self.metrics.cycle_failed()
