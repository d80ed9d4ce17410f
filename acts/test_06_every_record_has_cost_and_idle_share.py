"""Act 6 — cost collection: every record of the GPU node has GPU_UTIL, SM_ACTIVE, interval cost and idle share.

On the local target the act runs the collector itself against a real Prometheus scraping the cluster-driven
DCGM simulator, priced from the local catalog, recording who held the GPUs (the Kubernetes API and the
simulated kubelets' pod-resources answer); its store is left in the report folder (`STORE_NAME`), for
`gpu-finops cost export`. On AWS the in-cluster collector (deployed by the addons
stack) writes the DynamoDB table `<cluster>-cost`; the act reads it back and prices each interval itself
from spot price history, so a collector that charged the wrong rate cannot agree with itself. On both, the
holdings the collector recorded for the node must name the act's own GPU pod, for its tenant.

The claim, clause by clause (assertions/cost.py, one function each):
1. enough_consecutive_records: at least three consecutive records, one per interval.
2. records_are_of_the_node: each of the act's node.
3. every_figure_from_every_gpu: each the collector marked ok, every GPU of the node reporting.
4. instance_seconds_match_the_node_life: each charges the seconds the node lived in it.
5. gpu_util_is_a_percentage: GPU_UTIL in 0-100.
6. sm_active_is_the_ratio_the_load_ran_at: SM_ACTIVE a ratio (locally: the simulated load, 0.005).
7. sm_active_seen_while_the_load_ran: not identically zero while the compute load ran.
8. gpu_util_seen_while_the_load_ran: nor GPU_UTIL.
9. sm_active_within_gpu_util: SM_ACTIVE <= GPU_UTIL/100 + 0.05.
10. cost_is_the_rate_times_seconds: cost = the interval's price x seconds, from the expected rate source.
11. idle_is_cost_times_unused_share: idle = cost x (1 - SM_ACTIVE).
12. holdings_name_the_acts_pod: the holdings name the act's pod, for its tenant, in each interval it ran.
"""

from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from acts.expect import at_least, eventually_expect, the_one_pod_running
from acts.jobs import gpu_job
from acts.report import REPORT_DIR
from assertions.cost import check_cost
from assertions.cost_obs import CostObs, HolderObs
from assertions.verdict import require
from gpu_finops.cost.collector import align
from gpu_finops.cost.records import RATE_CATALOG, RATE_ON_DEMAND, RATE_SPOT
from gpu_finops.dcgm.metrics_csv import exported_fields, render
from gpu_finops.facts import timeouts
from gpu_finops.facts.kube_keys import LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE, LABEL_ZONE
from gpu_finops.facts.timestamps import iso
from harness.cost_table import collector_log, expected_unit_prices, node_records
from harness.observe import job_pods
from harness.waits import WaitTimeout

INTERVAL = 10  # seconds per record on the local target (the in-cluster collector uses the config's, 60)
INTERVALS = 3
SM_ACTIVE = 0.4582
STORE_NAME = "act-6-cost.sqlite"  # the local run's cost store, in the report folder
pytestmark = pytest.mark.timeout(timeouts.NODE_READY + timeouts.COST_RECORDS + 300 + 60 * (INTERVALS + 4))


@dataclass
class Collected:
    node: str
    records: list[dict[str, Any]]
    unit_price: float | dict[str, float]
    rate_source: str
    log: list[str]
    created: datetime | None = None
    deleted: datetime | None = None
    expected_sm: float | None = None  # what the simulator was told (local); None on real silicon
    holdings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # start -> recorded holdings
    holder: HolderObs | None = None


def metrics_csv() -> str:
    """The CSV the simulated exporter honours: the project's, or GPU_FINOPS_DCGM_CSV (to prove failure)."""
    path = os.environ.get("GPU_FINOPS_DCGM_CSV")
    return Path(path).read_text() if path else render()


def test_every_record_has_gpu_util_sm_active_cost_and_idle_share(
    kube, act_target, tenant_namespaces, config, report, tmp_path, caplog
):
    run = uuid.uuid4().hex[:6]
    tenant = config.tenants[0].name
    ns = tenant_namespaces[tenant]
    with report.phase("a GPU job runs; the collector records its node"):
        if act_target.simulated:
            got = collect_locally(kube, act_target, ns, tenant, run, tmp_path, caplog)
        else:
            got = collect_on_aws(kube, act_target, config, ns, tenant, run)
    obs = CostObs(
        node=got.node,
        records=got.records,
        expected_unit_price=got.unit_price,
        collector_log=got.log,
        min_records=INTERVALS,
        expected_rate_source=got.rate_source,
        node_created=got.created,
        node_deleted=got.deleted,
        expected_sm_active=got.expected_sm,
        holdings=got.holdings,
        holder=got.holder,
        # both targets run a compute load over the pod's span: locally the simulator's SM_ACTIVE, on AWS
        # vectorAdd in a loop (LOAD_COMMAND), so SM_ACTIVE identically zero is the metric never being there
        compute_load=True,
    )
    require(report.record(check_cost(obs)))


def load_command(seconds: int) -> list[str]:
    """On real silicon: CUDA kernels back to back for `seconds`, so the GPU is busy across the records."""
    loop = (
        f"end=$(( $(date +%s) + {seconds} )); while [ $(date +%s) -lt $end ]; do "
        "/cuda-samples/vectorAdd > /dev/null || exit 1; done"
    )
    return ["/bin/sh", "-c", loop]


def run_gpu_job(kube, act_target, ns, tenant, run, seconds: int):
    job = gpu_job(act_target, f"cost-{run}", ns, tenant, run, seconds=seconds, sm_active=SM_ACTIVE)
    if not act_target.simulated:
        job["spec"]["template"]["spec"]["containers"][0]["command"] = load_command(seconds)
    kube.batch.create_namespaced_job(ns, job)
    (pod,) = eventually_expect(
        lambda: job_pods(kube, ns, f"cost-{run}"),
        the_one_pod_running,
        timeout=timeouts.NODE_READY + timeouts.POD_RUNNING,
        interval=2,
    )
    return pod


def recorded(store, kube, ns: str, tenant: str, run: str, node: str, since: str):
    """The holdings the collector recorded for the node (ChargePeriodStart -> holdings), and the act's pod
    read again now, so the holder's span has its end if it finished."""
    holdings = {
        start: [h.to_dict() for h in ih.holdings]
        for (name, start), ih in store.holdings(since=since).items()
        if name == node
    }
    pods = job_pods(kube, ns, f"cost-{run}")
    if len(pods) != 1 or pods[0].running is None:
        raise AssertionError(
            f"expected the one pod of Job {ns}/cost-{run}, with the interval it ran, to check the recorded "
            f"GPU holdings against; found {pods}"
        )
    pod = pods[0]
    job = kube.batch.read_namespaced_job(f"cost-{run}", ns)
    return holdings, HolderObs(
        ns, pod.name, tenant, pod.running.start, pod.running.end, submitted_at=job.metadata.creation_timestamp
    )


def collect_locally(kube, act_target, ns, tenant, run, tmp_path, caplog) -> Collected:
    from acts.local_collector import local_collector
    from gpu_finops.facts.catalog import prices

    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    fields = exported_fields(metrics_csv())
    with local_collector(kube, tmp_path, REPORT_DIR / STORE_NAME, interval=INTERVAL, fields=fields) as lc:
        pod = run_gpu_job(kube, act_target, ns, tenant, run, seconds=INTERVAL * (INTERVALS + 4))
        first = align(pod.running.start, INTERVAL) + timedelta(seconds=INTERVAL * 2)  # samples in each
        for i in range(INTERVALS):
            lc.cycle_until(first + timedelta(seconds=INTERVAL * (i + 1)))
        records = node_records(lc.store, pod.node, iso(first))
        holdings, holder = recorded(lc.store, kube, ns, tenant, run, pod.node, iso(first))
    node = kube.core.read_node(pod.node)
    labels = node.metadata.labels
    price = prices()[(labels[LABEL_INSTANCE_TYPE], labels[LABEL_CAPACITY_TYPE])]
    log = [
        f"{r.levelname} {r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING
    ]
    # Locally the price source is the catalog the collector also reads, so the price check is not
    # independent here; seconds (from the node's own timestamps) and SM_ACTIVE (the load the simulator was
    # told) are, and are what the local run proves.
    return Collected(
        pod.node, records, price, RATE_CATALOG, log,
        node.metadata.creation_timestamp, node.metadata.deletion_timestamp, SM_ACTIVE, holdings, holder,
    )  # fmt: skip


def collect_on_aws(kube, act_target, config, ns, tenant, run) -> Collected:
    import boto3

    from gpu_finops.cost.rates import PRICING_REGION, OnDemandPrices, SpotPrices
    from gpu_finops.cost.store import DynamoCostStore
    from gpu_finops.facts.names import MONITORING_NS

    interval = config.collector_interval_seconds
    table = f"{config.cluster_name}-cost"
    store = DynamoCostStore(table, boto3.resource("dynamodb", region_name=config.region))
    pod = run_gpu_job(kube, act_target, ns, tenant, run, seconds=interval * (INTERVALS + 3))
    first = align(pod.running.start, interval) + timedelta(seconds=interval)  # the first whole interval
    try:
        records = eventually_expect(
            lambda: node_records(store, pod.node, iso(first)),
            at_least(INTERVALS, f"records for node {pod.node} in dynamodb:{table}"),
            timeout=interval * (INTERVALS + 2) + timeouts.COST_RECORDS,
            interval=15,
        )
    except WaitTimeout as exc:  # the checker says what is missing, quoting the collector
        records = exc.last if isinstance(exc.last, list) else []
    holdings, holder = recorded(store, kube, ns, tenant, run, pod.node, iso(first))
    node = kube.core.read_node(pod.node)
    labels = node.metadata.labels
    instance_type, zone = labels[LABEL_INSTANCE_TYPE], labels[LABEL_ZONE]
    capacity = labels[LABEL_CAPACITY_TYPE]
    created = node.metadata.creation_timestamp.astimezone(UTC)
    if capacity == "spot":
        spot = SpotPrices(boto3.client("ec2", region_name=config.region))

        def cost_over(a: datetime, b: datetime) -> float:
            return spot.curve(instance_type, zone, a, b).cost(a, b)

        source = RATE_SPOT
    else:
        usd_h = OnDemandPrices(boto3.client("pricing", region_name=PRICING_REGION)).get(
            instance_type, config.region
        )

        def cost_over(a: datetime, b: datetime) -> float:
            return usd_h.usd_per_hour * (b - a).total_seconds() / 3600

        source = RATE_ON_DEMAND
    prices = expected_unit_prices(records, cost_over, created)
    return Collected(
        pod.node, records, prices, source, collector_log(kube.core, MONITORING_NS),
        created, node.metadata.deletion_timestamp, None, holdings, holder,
    )  # fmt: skip
