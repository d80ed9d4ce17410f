"""Reads the ledger's recorded series from Prometheus over a window: sample sums, counts, snapshots and
per-day series. Plain data out; the arithmetic lives in `accounting`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gpu_finops.clients.promql import PrometheusClient, PrometheusQueryError
from gpu_finops.facts.kube_keys import LABEL_GPU_REPLICAS, LABEL_UNSCHEDULABLE_REASON, LABEL_WORKLOAD_CLASS
from gpu_finops.ledger import accounting
from gpu_finops.ledger.conventions import (
    DCGM_INPUTS,
    DCGM_UNPLACED,
    DRA_UNAGREED,
    KSM_INPUTS,
    OFF_INSTALLED,
    RUNGS,
    UNCLAIMED,
    UNSHARED,
)
from gpu_finops.ledger.rules import BUCKET, INPUTS, INSTALLED, LARGEST_PLACEABLE, RUNG

# What goes wrong when an input is missing, said next to its name.
INPUT_CONSEQUENCES: dict[str, str] = {
    "kube_node_status_capacity": "installed GPUs are unknown; the whole window is unobserved",
    "kube_node_status_allocatable": "no GPU counts as schedulable or free",
    "kube_node_spec_unschedulable": "cordons are invisible",
    "kube_node_status_condition": "no node counts as Ready, so nothing is schedulable",
    "kube_node_labels": "every unschedulable GPU reads `other` and time-sliced replicas count as cards "
    f"(allowlist the labels: --metric-labels-allowlist=nodes=[{LABEL_UNSCHEDULABLE_REASON},"
    f"{LABEL_GPU_REPLICAS}])",
    "kube_pod_container_resource_limits": "no GPU counts as allocated",
    "kube_pod_status_phase": "no pod counts as Running, so nothing is allocated",
    "kube_pod_labels": "every allocated GPU reads unclassified (allowlist the class label: "
    f"--metric-labels-allowlist=pods=[{LABEL_WORKLOAD_CLASS}])",
    "kube_pod_info": "pods have no node, so nothing is allocated",
    "DCGM_FI_DEV_GPU_UTIL": "busy by the metric reads 0",
    "DCGM_FI_DEV_POWER_USAGE": "live by physics reads 0 and busy-but-idle cannot be judged",
    "DCGM_FI_DEV_SM_CLOCK": "live by physics reads 0 and busy-but-idle cannot be judged",
}


class NoLedgerData(RuntimeError):
    """The window has no ledger samples at all."""


class RangeClient(PrometheusClient):
    """The harness's Prometheus reader plus range queries (matrix results)."""

    def query_range(
        self, promql: str, start: datetime, end: datetime, step_seconds: int
    ) -> list[tuple[dict[str, str], list[tuple[float, Decimal]]]]:
        params = {
            "query": promql,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": str(step_seconds),
        }
        self.queries += 1
        body = self._get_with_retries("/api/v1/query_range", params)
        if body.get("status") != "success":
            raise PrometheusQueryError(f"query {promql!r} failed: {body.get('error')}")
        with self.reading("/api/v1/query_range"):
            return [
                (dict(s["metric"]), [(float(t), Decimal(v)) for t, v in s["values"]])
                for s in body["data"]["result"]
            ]

    def query_exact(self, promql: str, at: datetime) -> list[tuple[dict[str, str], Decimal]]:
        """An instant query whose values come back as exact Decimals (the JSON carries them as strings)."""
        self.queries += 1
        body = self._get_with_retries("/api/v1/query", {"query": promql, "time": f"{at.timestamp():.3f}"})
        if body.get("status") != "success":
            raise PrometheusQueryError(f"query {promql!r} failed: {body.get('error')}")
        with self.reading("/api/v1/query"):
            return [(dict(s["metric"]), Decimal(s["value"][1])) for s in body["data"]["result"]]


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime  # exclusive

    @property
    def seconds(self) -> int:
        return int((self.end - self.start).total_seconds())

    @property
    def at(self) -> datetime:
        """Evaluate at end - 1 ms: a range of `seconds` then holds the samples in [start, end)."""
        return self.end - timedelta(milliseconds=1)

    def selector(self, series: str) -> str:
        return f"{series}[{self.seconds}s]"

    def label(self) -> str:
        return f"{self.start:%Y-%m-%dT%H:%MZ} .. {self.end:%Y-%m-%dT%H:%MZ}"


def month_window(month: str) -> Window:
    try:
        start = datetime.strptime(month, "%Y-%m").replace(tzinfo=UTC)
        end = (start + timedelta(days=32)).replace(day=1)  # 9999-12 has no next month: OverflowError
    except (ValueError, OverflowError):
        raise ValueError(
            f"--month {month!r} is not a calendar month: give YYYY-MM (UTC), e.g. 2026-07"
        ) from None
    return Window(start, end)


@dataclass(frozen=True)
class WindowSums:
    installed_sum: Decimal
    observed_samples: int
    bucket_sums: dict[str, Decimal]
    missing_inputs: list[str]  # warnings, one per input with no series in the window


def _scalar(rows: list[tuple[dict[str, str], Decimal]]) -> Decimal | None:
    return rows[0][1] if rows else None


def missing_inputs(client: RangeClient, window: Window) -> list[str]:
    """Inputs the rules saw no series of in the window, or at some of its evaluations, each said by name
    with what it costs."""
    selector = window.selector(INPUTS)
    rows = client.query_exact(f"max by (input) (max_over_time({selector}))", window.at)
    seen = {labels.get("input", ""): value for labels, value in rows}
    if not seen:
        return [
            f"no {INPUTS} either: the ledger's recording rules (gpu_finops/ledger/rules.yaml) did not run "
            "in this Prometheus over the window, so missing inputs cannot be named"
        ]
    lowest = {
        labels.get("input", ""): value
        for labels, value in client.query_exact(f"min by (input) (min_over_time({selector}))", window.at)
    }
    messages = []
    for name in (*KSM_INPUTS, *DCGM_INPUTS):
        source = "dcgm-exporter" if name in DCGM_INPUTS else "kube-state-metrics"
        if seen.get(name, Decimal(0)) <= 0:
            messages.append(f"{name}: no series in the window ({source}): {INPUT_CONSEQUENCES[name]}")
        elif lowest.get(name, Decimal(0)) <= 0:
            messages.append(
                f"{name}: no series at some evaluations in the window ({source}); "
                f"while it was missing: {INPUT_CONSEQUENCES[name]}"
            )
    # counts that must be zero: each input that names a count, and what the count costs
    counted = {
        **{
            name: "series in the window name no node (dcgm-exporter): their GPUs are not counted as busy or "
            "live. The exporter labels each series with its node, `hostname` since 4.8.3 (`Hostname` "
            "before); check its NODE_NAME / kubernetes settings"
            for name in DCGM_UNPLACED
        },
        **{
            name: "nodes in the window: their devices' worth in cards is read only by the collector (the "
            "held-GPU model: a MIG slice's share of its card), so their GPUs are not counted installed, "
            "schedulable or allocated. Is `gpu-finops collect` running and scraped, and does its /healthz "
            "name the node?"
            for name in UNSHARED
        },
        **{
            name: "pods in the window held GPUs on a node with no installed GPUs at the same evaluation (its "
            "kube_node_status_capacity not yet in kube-state-metrics, or already gone from it), so their GPUs "
            "are not counted allocated. At a node's creation or deletion this lasts a scrape; longer, check "
            "kube-state-metrics' node series"
            for name in OFF_INSTALLED
        },
        **{
            name: "pods in the window asked for GPUs on a node whose GPUs are DRA devices, and the collector "
            "reported no claim allocating any to them, so their GPUs are not counted allocated. Is `gpu-finops "
            "collect` running with holdings read from Kubernetes (`--holdings kube`), and may it list "
            "resourceclaims and resourceslices?"
            for name in UNCLAIMED
        },
        **{
            name: "nodes in the window whose DRA cards two collectors exported differently, so their GPUs are not "
            "counted installed or schedulable. Run one collector, or find the one reading another cluster"
            for name in DRA_UNAGREED
        },
    }
    for name, costs in counted.items():
        most = seen.get(name, Decimal(0))
        if most > 0:
            messages.append(f"{name}: up to {most} {costs}")
    return messages


def window_sums(client: RangeClient, window: Window) -> WindowSums:
    installed = _scalar(client.query_exact(f"sum_over_time({window.selector(INSTALLED)})", window.at))
    count = _scalar(client.query_exact(f"count_over_time({window.selector(INSTALLED)})", window.at))
    missing = missing_inputs(client, window)
    if installed is None or count is None or count == 0:
        named = "; ".join(missing) if missing else "kube-state-metrics series were present"
        raise NoLedgerData(f"no ledger data in {window.label()}: {INSTALLED} has no samples ({named})")
    rows = client.query_exact(f"sum by (bucket) (sum_over_time({window.selector(BUCKET)}))", window.at)
    buckets = {labels.get("bucket", ""): value for labels, value in rows}
    return WindowSums(installed, int(count), buckets, missing)


@dataclass(frozen=True)
class RungReading:
    rung: str
    gpu_hours: Decimal  # over the window (sum x step / 3600)
    mean_gpus: Decimal
    latest: Decimal | None  # the snapshot at the window's end


@dataclass(frozen=True)
class Ladder:
    window: Window
    rungs: list[RungReading]
    largest_placeable: Decimal | None
    largest_placeable_series: list[tuple[float, Decimal]]
    missing_inputs: list[str]


def ladder(client: RangeClient, window: Window, step_seconds: int, trend_points: int = 48) -> Ladder:
    sums = {
        labels.get("rung", ""): value
        for labels, value in client.query_exact(f"sum_over_time({window.selector(RUNG)})", window.at)
    }
    means = {
        labels.get("rung", ""): value
        for labels, value in client.query_exact(f"avg_over_time({window.selector(RUNG)})", window.at)
    }
    if "installed" not in sums:
        named = "; ".join(missing_inputs(client, window))
        raise NoLedgerData(f"no ledger data in {window.label()}: {INSTALLED} has no samples ({named})")
    # the snapshot: the last sample at or before the window's end (lookback bounded by one step)
    latest = {
        labels.get("rung", ""): value
        for labels, value in client.query_exact(f"last_over_time({RUNG}[{step_seconds}s])", window.at)
    }
    rungs = [
        RungReading(
            r,
            sums.get(r, Decimal(0)) * step_seconds / 3600,
            means.get(r, Decimal(0)),
            latest.get(r),
        )
        for r in RUNGS
    ]
    placeable = _scalar(
        client.query_exact(f"last_over_time({LARGEST_PLACEABLE}[{step_seconds}s])", window.at)
    )
    trend_step = max(step_seconds, window.seconds // trend_points)
    # points end exactly at the window's end, so the trend's last point is the snapshot
    first = window.at - timedelta(seconds=trend_step * (window.seconds // trend_step - 1))
    series = client.query_range(
        f"last_over_time({LARGEST_PLACEABLE}[{trend_step}s])", first, window.at, trend_step
    )
    points = series[0][1] if series else []
    return Ladder(window, rungs, placeable, points, missing_inputs(client, window))


def buckets_by_day(
    client: RangeClient, window: Window, step_seconds: int
) -> dict[str, list[tuple[float, Decimal]]]:
    """GPU-hours per bucket per UTC day in the window, keyed by bucket; each point is (day start, hours)."""
    days = max(window.seconds // 86400, 1)
    first_end = window.start + timedelta(days=1) - timedelta(milliseconds=1)
    rows = client.query_range(
        f"sum by (bucket) (sum_over_time({BUCKET}[86400s])) * {step_seconds} / 3600",
        first_end,
        first_end + timedelta(days=days - 1),
        86400,
    )
    return {labels.get("bucket", ""): [(t + 0.001 - 86400, v) for t, v in points] for labels, points in rows}


def month_ledger(client: RangeClient, window: Window, step: int, owners: dict[str, str]) -> accounting.Ledger:
    """The window's ledger: its sums read from the recording rules, reconciled into 100 % of installed
    GPU-hours (`ledger month` and its benchmark both call this)."""
    sums = window_sums(client, window)
    return accounting.reconcile(
        start=window.start.isoformat(),
        end=window.end.isoformat(),
        step_seconds=step,
        installed_sum=sums.installed_sum,
        bucket_sums=sums.bucket_sums,
        observed_samples=sums.observed_samples,
        expected_samples=window.seconds // step,
        owners=owners,
        warnings=sums.missing_inputs,
    )
