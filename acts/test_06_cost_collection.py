"""Act 6 — cost collection: every record of the GPU node has GPU_UTIL, SM_ACTIVE, interval cost and idle share."""

from __future__ import annotations

import logging
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acts.jobs import gpu_job
from assertions.cost import CostObs, check_cost
from assertions.verdict import require
from finops.collector import Collector, align
from finops.pricing import CatalogRates
from finops.store import SqliteCostStore
from harness import timeouts
from harness.nodes import KubeNodeSource
from harness.observe import job_pods
from harness.prometheus import PrometheusClient
from harness.waits import eventually
from infra.metrics_csv import exported_fields, render

pytestmark = pytest.mark.timeout(timeouts.NODE_READY + timeouts.COST_RECORDS + 300)
INTERVAL = 10  # seconds per record on the local target (60 in-cluster)
INTERVALS = 3
SM_ACTIVE = 0.4582


def metrics_csv() -> str:
    """The CSV the simulated exporter honours: the project's, or GPU_FINOPS_DCGM_CSV (to prove failure)."""
    path = os.environ.get("GPU_FINOPS_DCGM_CSV")
    return Path(path).read_text() if path else render()


def test_every_record_has_gpu_util_sm_active_cost_and_idle_share(
    kube, act_target, tenant_namespaces, config, report, tmp_path, caplog
):
    if not act_target.simulated:
        pytest.skip(
            "on AWS the in-cluster collector writes DynamoDB; run `gpu-finops cost report --store "
            f"dynamodb:{config.cluster_name}-cost` (the AWS reader for this act is not wired yet)"
        )
    from local.catalog import prices
    from local.gpu_sim import ClusterGpuSimulator
    from local.prometheus import PrometheusServer

    run = uuid.uuid4().hex[:6]
    tenant = config.tenants[0].name
    ns = tenant_namespaces[tenant]
    sim = ClusterGpuSimulator(kube, exported_fields(metrics_csv()))
    port = sim.start()
    try:
        with (
            PrometheusServer(tmp_path / "prom", [f"127.0.0.1:{port}"], scrape_interval="1s") as prom,
            report.phase("a GPU job runs; the collector records its node"),
        ):
            kube.batch.create_namespaced_job(
                ns,
                gpu_job(
                    act_target,
                    f"cost-{run}",
                    ns,
                    tenant,
                    run,
                    seconds=INTERVAL * (INTERVALS + 4),
                    sm_active=SM_ACTIVE,
                ),
            )
            (pod,) = eventually(
                lambda: job_pods(kube, ns, f"cost-{run}"),
                lambda ps: len(ps) == 1 and ps[0].running,
                timeout=timeouts.NODE_READY + timeouts.POD_RUNNING,
                interval=2,
                what="GPU pod Running",
            )
            store = SqliteCostStore(tmp_path / "cost.sqlite")
            collector = Collector(
                KubeNodeSource(kube.core),
                PrometheusClient(prom.url),
                CatalogRates(prices()),
                store,
                interval=INTERVAL,
                grace_seconds=INTERVAL,
            )
            first = align(pod.running.start, INTERVAL) + timedelta(
                seconds=INTERVAL * 2
            )  # samples in every interval
            for i in range(INTERVALS):
                end = first + timedelta(seconds=INTERVAL * (i + 1))
                eventually(
                    lambda end=end: datetime.now(UTC),
                    lambda now, end=end: now >= end + timedelta(seconds=2),
                    timeout=INTERVAL * (INTERVALS + 4),
                    interval=0.5,
                    what=f"interval ending {end} complete",
                )
                collector.cycle(end - timedelta(seconds=INTERVAL), end)
            records = [r.to_dict() for r in store.records() if r.ResourceName == pod.node]
    finally:
        sim.stop()
    node = kube.core.read_node(pod.node)
    labels = node.metadata.labels
    price = prices()[(labels["node.kubernetes.io/instance-type"], labels["karpenter.sh/capacity-type"])]
    log = [
        f"{r.levelname} {r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING
    ]
    obs = CostObs(
        node=pod.node, records=records, expected_unit_price=price, collector_log=log, min_records=INTERVALS
    )
    require(report.record(check_cost(obs)))
