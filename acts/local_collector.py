"""The collector as the acts run it on the local target (acts 6, 8 and 9): the DCGM simulator, which reads who
holds each card or slice from the kubelet's pod-resources answer as dcgm-exporter does, scraped each second by a
real Prometheus; the catalog's prices; the Collector over both, writing a SQLite store; and one priced
node-interval split into FOCUS rows per tenant, as `gpu-finops cost export` splits it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from assertions.card_shares import Bill, Billed
from harness.waits import eventually


@dataclass(frozen=True)
class LocalCollector:
    collector: Any  # gpu_finops.cost.collector.Collector
    store: Any  # gpu_finops.cost.store.SqliteCostStore
    prometheus: Any  # gpu_finops.clients.promql.PrometheusClient, the one the collector queries
    interval: int  # seconds

    def cycle_until(self, end: datetime) -> None:
        """Wait until the interval ending at `end` is complete (its samples scraped), then collect it."""
        ahead = max(0.0, (end - datetime.now(UTC)).total_seconds())
        eventually(lambda: datetime.now(UTC), lambda now: now >= end + timedelta(seconds=2),
                   timeout=ahead + self.interval * 2 + 5, interval=0.5, what=f"the interval ending {end} complete")  # fmt: skip
        self.collector.cycle(end - timedelta(seconds=self.interval), end)

    def bill(self, node: str, after: datetime, name: str) -> Bill:
        """One interval of `node` starting after `after`, priced and split into FOCUS rows (`name`: the
        FOCUS provider context's, e.g. "act 8"); the card's dollars summed on the split's money quantum."""
        from gpu_finops.cost.allocation import to_decimal
        from gpu_finops.cost.collector import align
        from gpu_finops.cost.focus import FocusContext, focus_dataset
        from gpu_finops.cost.focus13 import SHARE_KEY
        from gpu_finops.facts.catalog import prices
        from gpu_finops.facts.timestamps import iso

        start = align(after, self.interval) + timedelta(seconds=self.interval)
        end = start + timedelta(seconds=self.interval)
        self.cycle_until(end)
        written = self.store.records(since=iso(start))
        records = [r for r in written if r.ResourceName == node]
        if not records:
            seen = sorted({r.ResourceName for r in written}) or "none"
            raise LookupError(
                f"the collector wrote no record for node {node} in the interval {iso(start)} to {iso(end)} "
                f"(nodes it did price: {seen}); a bill of nothing would read as zero dollars: check that the "
                f"node was Ready and its instance type priced in the catalog"
            )
        rows = focus_dataset(
            records, self.store.holdings(since=iso(start)), FocusContext("000000000000", name)
        ).rows
        billed = tuple(
            Billed(r["x_Tenant"], r["x_Namespace"], r[SHARE_KEY].gpu_seconds, r["EffectiveCost"])
            for r in rows
        )
        unpriced = [r.x_Status for r in records if r.EffectiveCost is None]
        if unpriced:
            raise LookupError(
                f"the collector priced no rate for node {node} in the interval {iso(start)} to {iso(end)} "
                f"(status {unpriced[0]}): add its instance type to the catalog"
            )
        card_usd = sum((to_decimal(r.EffectiveCost) for r in records), Decimal(0))
        rate = Decimal(str(prices()[(records[0].x_InstanceType, records[0].x_CapacityType)]))
        return Bill(billed, start, end, card_usd, rate)


@contextlib.contextmanager
def local_collector(
    kube: Any, tmp_path: Path, store: Path, *, interval: int, fields: Any
) -> Iterator[LocalCollector]:
    """The simulator exporting `fields` (the metrics CSV's, gpu_finops.dcgm.metrics_csv.exported_fields), a
    1-second Prometheus under `tmp_path`, and the Collector at `interval` writing `store` (replaced)."""
    from acts.targets import local_description
    from gpu_finops.clients.nodes import KubeNodeSource
    from gpu_finops.clients.promql import PrometheusClient
    from gpu_finops.cost.collector import Collector
    from gpu_finops.cost.holdings_record import kube_reader
    from gpu_finops.cost.pricing import CatalogRates
    from gpu_finops.cost.store import SqliteCostStore
    from gpu_finops.facts.catalog import prices
    from local.cluster.prometheus_server import PrometheusServer
    from local.sim.gpu_sim import ClusterGpuSimulator

    pod_resources = local_description()["pod_resources_url"]
    sim = ClusterGpuSimulator(kube, fields, pod_resources_url=pod_resources)
    port = sim.start()
    try:
        with PrometheusServer(tmp_path / "prom", [f"127.0.0.1:{port}"], scrape_interval="1s") as prom:
            store.unlink(missing_ok=True)  # this run's records alone
            sqlite = SqliteCostStore(store)
            client = PrometheusClient(prom.url)
            collector = Collector(
                KubeNodeSource(kube.core), client, CatalogRates(prices()), sqlite, interval=interval,
                grace_seconds=interval, holdings=kube_reader(kube, pod_resources),
            )  # fmt: skip
            yield LocalCollector(collector, sqlite, client, interval)
    finally:
        sim.stop()
