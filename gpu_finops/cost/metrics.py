"""The collector's own Prometheus metrics and its health endpoint."""

from __future__ import annotations

from collections.abc import Sequence
from http.server import ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from gpu_finops.clients.metrics_http import serve as serve_registry
from gpu_finops.clients.nodes import GpuNode
from gpu_finops.cost.gpu_holdings import GpuHolding
from gpu_finops.cost.holdings_record import IntervalHoldings
from gpu_finops.cost.records import STATUS_MISSING_SM_ACTIVE, STATUS_NO_GPU_SERIES, CycleResult
from gpu_finops.facts import collector_metrics as names
from gpu_finops.facts.kube_keys import ksm_sanitized
from gpu_finops.model import holding


class CollectorMetrics:
    """Cycle time, records written, missing metrics, idle dollars per node; plus health state."""

    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.cycle_seconds = Histogram(names.CYCLE_SECONDS, "Wall time of one collector cycle", registry=r)
        self.records_written = Counter(names.RECORDS_WRITTEN, "Cost records written", registry=r)
        self.missing_metric = Counter(
            names.MISSING_METRIC,
            "Node-intervals where a required DCGM metric had no series",
            ["metric", "node"],
            registry=r,
        )
        self.cycle_failures = Counter(names.CYCLE_FAILURES, "Cycles that raised", registry=r)
        self.idle_dollars = Gauge(
            names.NODE_IDLE_DOLLARS,
            "Idle dollars of the node in the last interval",
            ["node"],
            registry=r,
        )
        self.gpu_dollars_per_hour = Gauge(
            names.GPU_DOLLARS_PER_HOUR,
            "What one GPU of the node cost per hour in the last interval (cost / hours / GPUs)",
            ["node", "capacity_type", "instance_type"],
            registry=r,
        )
        self.idle_dollars_per_hour = Gauge(
            names.NODE_IDLE_DOLLARS_PER_HOUR,
            "Idle dollars per hour of the node in the last interval (cost x (1 - SM_ACTIVE) / hours)",
            ["node"],
            registry=r,
        )
        self.tenant_idle_dollars_per_hour = Gauge(
            names.TENANT_IDLE_DOLLARS_PER_HOUR,
            "A node's idle dollars per hour in the last interval, split by the tenants holding its GPUs "
            '(tenant="": held by nobody)',
            ["tenant", "node"],
            registry=r,
        )
        self.device_share = Gauge(
            names.DEVICE_SHARE,
            "Cards' worth of one device of the GPU resource on the node, as the held-GPU model reads the node "
            "(nodes whose devices are not worth their cards are left out)",
            ["node", "resource"],
            registry=r,
        )
        self.dra_gpus = Gauge(
            names.DRA_GPUS,
            "Cards the node's DRA driver publishes (state=installed) and those no device taint keeps off "
            "(state=schedulable), on a node that advertises no GPU resource",
            ["node", "state"],
            registry=r,
        )
        self.pod_dra_gpus = Gauge(
            names.POD_DRA_GPUS,
            "Cards a pod holds through the devices its ResourceClaims allocate, as last read",
            ["namespace", "pod", "node"],
            registry=r,
        )
        self.node_unreadable = Gauge(
            names.NODE_UNREADABLE,
            "1 for a GPU node the held-GPU model refuses (its labels and capacity disagree; /healthz says why)",
            ["node"],
            registry=r,
        )
        self.last_record_end = Gauge(
            names.LAST_RECORD_END,
            "End of the last interval whose records were written (unix seconds); stale when it stops moving",
            registry=r,
        )
        self.healthy = Gauge(names.HEALTHY, "1 when the last cycle found no configuration error", registry=r)
        self.problems: list[str] = ["no cycle has completed yet"]
        self.healthy.set(0)

    def observe_cycle(self, result: CycleResult) -> None:
        self.cycle_seconds.observe(result.seconds)
        self.records_written.inc(len(result.records))
        for record in result.records:
            if record.x_Status == STATUS_MISSING_SM_ACTIVE:
                self.missing_metric.labels("DCGM_FI_PROF_SM_ACTIVE", record.ResourceName).inc()
            elif record.x_Status == STATUS_NO_GPU_SERIES:
                self.missing_metric.labels("DCGM_FI_DEV_GPU_UTIL", record.ResourceName).inc()
            if record.x_IdleCost is not None:
                self.idle_dollars.labels(record.ResourceName).set(record.x_IdleCost)
            hours = record.PricingQuantity
            if record.EffectiveCost is not None and hours > 0 and record.x_GpuCount > 0:
                per_gpu = record.EffectiveCost / hours / record.x_GpuCount
                labels = (record.ResourceName, record.x_CapacityType or "", record.x_InstanceType or "")
                self.gpu_dollars_per_hour.labels(*labels).set(per_gpu)
            if record.x_IdleCost is not None and hours > 0:
                self.idle_dollars_per_hour.labels(record.ResourceName).set(record.x_IdleCost / hours)
        if result.records:
            self.last_record_end.set(result.end.timestamp())
        self.problems = list(result.problems)
        self.healthy.set(1 if result.healthy else 0)

    def observe_tenants(self, result: CycleResult, intervals: Sequence[IntervalHoldings]) -> None:
        """Each node's idle dollars per hour, split by the share of its GPU-seconds each tenant held
        (whole node-average SM_ACTIVE: a record has no per-GPU idle). Only where holdings were recorded:
        an interval nobody recorded is not split (the export says no-holdings)."""
        self.tenant_idle_dollars_per_hour.clear()
        held = {(h.node, h.start): h for h in intervals}
        seconds = (result.end - result.start).total_seconds()
        for record in result.records:
            h = held.get((record.ResourceName, record.ChargePeriodStart))
            hours = record.PricingQuantity
            if h is None or record.x_IdleCost is None or hours <= 0 or record.x_GpuCount <= 0 or seconds <= 0:
                continue
            per_gpu = record.x_IdleCost / hours / record.x_GpuCount
            shares: dict[str, float] = {}
            for held_by in h.holdings:
                gpu_seconds = held_by.physical_gpus * held_by.seconds_within(result.start, result.end)
                shares[held_by.tenant] = shares.get(held_by.tenant, 0.0) + float(gpu_seconds) / seconds
            shares[""] = max(0.0, record.x_GpuCount - sum(shares.values()))
            for tenant, gpus in shares.items():
                self.tenant_idle_dollars_per_hour.labels(tenant, record.ResourceName).set(per_gpu * gpus)

    def observe_shares(self, nodes: Sequence[GpuNode]) -> list[str]:
        """Each node's GPU resources at the share of a card one device is worth (the ledger's rules count
        capacity and requests in cards with it). A node the model cannot read, or whose devices are not worth
        its cards, exports none, is marked unreadable (the ledger then guesses no share for it from its
        replicas label) and is returned as a problem naming it."""
        self.device_share.clear()
        self.node_unreadable.clear()
        self.dra_gpus.clear()
        problems = []
        for node in nodes:
            if node.dra is not None:
                self.dra_gpus.labels(node.name, "installed").set(float(node.dra.installed))
                self.dra_gpus.labels(node.name, "schedulable").set(float(node.dra.schedulable))
                continue  # its GPUs are devices, not a resource: no share of a resource to export
            try:
                read = holding.read_node(node.name, node.labels, node.capacity, strict=True)
            except holding.NodeGpusError as exc:
                problems.append(
                    f"{exc}; its devices' shares are not exported, so the ledger cannot count them"
                )
                self.node_unreadable.labels(node.name).set(1)
                continue
            for resource, offer in read.offers.items():
                self.device_share.labels(node.name, ksm_sanitized(resource)).set(float(offer.share))
        return problems

    def observe_claims(self, held: Sequence[GpuHolding] | None) -> None:
        """Each pod still holding GPUs through ResourceClaims, at the cards it holds (none when holdings were
        not read: the ledger then counts such pods nowhere and its input check names them)."""
        self.pod_dra_gpus.clear()
        for h in held or ():
            if h.claims and h.end is None:
                self.pod_dra_gpus.labels(h.namespace, h.pod, h.node).inc(float(h.physical_gpus))

    def cycle_failed(self) -> None:
        self.cycle_failures.inc()
        # a share from an earlier cycle may be a layout's since changed: none is better than a stale one
        self.device_share.clear()
        self.node_unreadable.clear()
        self.dra_gpus.clear()
        self.pod_dra_gpus.clear()
        self.problems = ["the last cycle raised; see the collector log"]
        self.healthy.set(0)


def serve(metrics: CollectorMetrics, port: int, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """Serve /metrics and /healthz (200 healthy, 503 with the reasons) on a background thread."""
    return serve_registry(metrics.registry, lambda: metrics.problems, port, host)
