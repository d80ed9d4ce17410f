"""The alerts and the dashboards, live, on the local target: a real Prometheus scrapes the GPU simulator,
kube-state-metrics and the collector's /metrics, and evaluates the ledger's rules and the chart's alerts.

  alert-idle   a kwok g6e.xlarge whose one card a data-starved pod holds (SM_ACTIVE 0.02): the alert on a
               held but idle GPU fires, with the collector's dollars per hour in its description
  ext-nosm     an exporter (a second simulator, as a fleet whose CSV lacks it) serving GPU_UTIL and no
               SM_ACTIVE: the missing-SM_ACTIVE alert fires for it
  waits-16     a pod asking for 16 GPUs on alert-idle, pending: the only card it could use is held by the
               data-starved pod, so ownership is not the story and the diagnosis names `application`
               (docs/diagnose.md); the diagnosis exporter counts it there (the waiting-pods panel's series)

The alerts are the generator's, with their `for:` windows shortened to seconds (the committed file waits
30 and 10 minutes; tests/gpu_finops/ledger/alerts proves those windows with promtool). Then every query of every
committed dashboard runs against this Prometheus: each is valid PromQL and returns series.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpu_finops.facts import dcgm
from gpu_finops.facts.kube_keys import LABEL_TENANT
from gpu_finops.ledger import alerts, rules
from gpu_finops.ledger.conventions import Conventions
from harness.waits import eventually

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(900)]
NS = "alerts-live"
IDLE_NODE, NOSM_HOST, WAITING = "alert-idle", "ext-nosm", "waits-16"
STEP_S, INTERVAL_S = 2, 5
C = Conventions(interval=f"{STEP_S}s")
FAST = alerts.AlertSettings(idle_for="5s", missing_sm_active_for="5s", pending_for="5s", busy_idle_for="5s")


@pytest.fixture(scope="module")
def live(local_cluster, tmp_path_factory):
    from gpu_finops.clients.metrics_http import serve as serve_registry
    from gpu_finops.clients.nodes import KubeNodeSource
    from gpu_finops.clients.promql import PrometheusClient
    from gpu_finops.cost.collector import Collector
    from gpu_finops.cost.holdings_record import kube_reader
    from gpu_finops.cost.metrics import CollectorMetrics, serve
    from gpu_finops.cost.pricing import CatalogRates
    from gpu_finops.cost.store import SqliteCostStore
    from gpu_finops.dcgm.metrics_csv import exported_fields, render
    from gpu_finops.diagnose.exporter import DiagnosisMetrics, kube_pending, read_once
    from gpu_finops.diagnose.kube_observer import KubeObserver
    from gpu_finops.diagnose.read import read_cluster
    from gpu_finops.facts.catalog import prices
    from local.cluster import kube_state_metrics
    from local.cluster.prometheus_server import PrometheusServer, free_port
    from local.sim.dcgm_sim import DcgmSimulator, SimGpu
    from local.sim.gpu_sim import ClusterGpuSimulator
    from tests.local.test_ledger_on_local import gpu_pod, kwok_node

    kube = local_cluster.kube()
    work = tmp_path_factory.mktemp("alerts-live")
    (work / "rules.yaml").write_text(rules.render(C))
    (work / "alerts.yaml").write_text(alerts.render(C, FAST))
    kube.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": {LABEL_TENANT: "team-a"}}},
                kwok_node(IDLE_NODE, "g6e.xlarge")])  # fmt: skip
    pod = gpu_pod("starved-0", IDLE_NODE, 1, "training-stepping", "data-starved")
    pod["metadata"]["namespace"] = NS
    waiting = gpu_pod(WAITING, IDLE_NODE, 16, "training-stepping", "busy-trainer")
    waiting["metadata"]["namespace"] = NS
    del waiting["spec"]["nodeName"]  # the scheduler's to place: more GPUs than any node has, so it waits
    waiting["spec"]["nodeSelector"] = {"kubernetes.io/hostname": IDLE_NODE}  # nothing Karpenter can launch
    kube.apply([pod, waiting])
    pod_resources = json.loads(local_cluster.describe().read_text())["pod_resources_url"]
    sim = ClusterGpuSimulator(kube, exported_fields(render()), pod_resources_url=pod_resources)
    port = sim.start()
    nosm = DcgmSimulator({dcgm.GPU_UTIL, dcgm.POWER_USAGE, dcgm.SM_CLOCK})
    nosm.set_gpus([SimGpu(NOSM_HOST, 0, "GPU-ext-nosm", values={dcgm.GPU_UTIL: 100.0, dcgm.POWER_USAGE: 300.0,
                                                                  dcgm.SM_CLOCK: 1980.0})])  # fmt: skip
    nosm_server = nosm.serve()
    metrics = CollectorMetrics()
    metrics_port = free_port()
    http = serve(metrics, metrics_port, host="127.0.0.1")
    diagnosis = DiagnosisMetrics()
    diagnosis_port = free_port()
    diagnosis_http = serve_registry(
        diagnosis.registry, lambda: diagnosis.problems, diagnosis_port, "127.0.0.1"
    )
    prom = PrometheusServer(
        work / "prom",
        [f"127.0.0.1:{port}", f"127.0.0.1:{nosm_server.server_port}"],
        scrape_interval="1s",
        evaluation_interval=f"{STEP_S}s",
        rule_files=[work / "rules.yaml", work / "alerts.yaml"],
        jobs={
            "kube-state-metrics": [kube_state_metrics.url().removeprefix("http://")],
            "gpu-finops-collector": [f"127.0.0.1:{metrics_port}"],
            "gpu-finops-diagnosis": [f"127.0.0.1:{diagnosis_port}"],
        },
    )
    try:
        prom.start()
        collector = Collector(KubeNodeSource(kube.core), PrometheusClient(prom.url), CatalogRates(prices()),
                              SqliteCostStore(work / "cost.sqlite"), interval=INTERVAL_S, grace_seconds=0,
                              metrics=metrics, holdings=kube_reader(kube, pod_resources))  # fmt: skip
        observer = KubeObserver(kube)

        def diagnose_once() -> None:  # what `diagnose --all --port` does every interval
            diagnosis.reading = read_once(kube_pending(observer, lambda fn, *a, **kw: fn(*a, **kw)),
                                          lambda: read_cluster(observer, prom.url, 60, retry_for=5))  # fmt: skip

        yield prom, Cycle(collector, diagnose_once)
    finally:
        prom.stop()
        http.shutdown()
        diagnosis_http.shutdown()
        nosm_server.shutdown()
        sim.stop()
        kube.core.delete_namespace(NS)
        kube.core.delete_node(IDLE_NODE)


@dataclass
class Cycle:
    """One round of what the chart runs every interval: the collector's cycle and the diagnosis'."""

    collector: Any
    diagnose_once: Callable[[], None]

    def run(self) -> None:
        end = datetime.now(UTC)
        self.collector.cycle(end - timedelta(seconds=INTERVAL_S), end)
        self.diagnose_once()


def firing(prom_url: str) -> list[dict]:
    with urllib.request.urlopen(f"{prom_url}/api/v1/alerts", timeout=10) as resp:
        body = json.load(resp)
    return [a for a in body["data"]["alerts"] if a["state"] == "firing"]


def collect_then_alerts(prom, cycle: Cycle) -> list[dict]:
    cycle.run()
    return firing(prom.url)


def test_the_held_idle_and_missing_sm_active_alerts_fire_in_a_running_prometheus(live):
    prom, cycle = live

    def both(found: list[dict]) -> bool:
        held = [a for a in found if a["labels"]["alertname"] == "GpuFinopsGpuHeldIdle"
                and a["labels"].get("hostname") == IDLE_NODE and "per hour" in a["annotations"]["description"]]  # fmt: skip
        missing = [a for a in found if a["labels"]["alertname"] == "GpuFinopsSmActiveMissing"
                   and a["labels"].get("hostname") == NOSM_HOST]  # fmt: skip
        return bool(held) and bool(missing)

    found = eventually(lambda: collect_then_alerts(prom, cycle), both, timeout=180, interval=3,
                       what="GpuFinopsGpuHeldIdle on alert-idle (priced) and GpuFinopsSmActiveMissing on ext-nosm")  # fmt: skip
    (held,) = [a for a in found if a["labels"]["alertname"] == "GpuFinopsGpuHeldIdle"
               and a["labels"].get("hostname") == IDLE_NODE]  # fmt: skip
    assert held["labels"]["namespace"] == NS and held["labels"]["pod"] == "starved-0", held
    assert float(held["value"]) > 0, held  # the card's idle dollars per hour, priced by the collector
    assert held["annotations"]["runbook_url"].endswith("#gpufinopsgpuheldidle")
    assert not [a for a in found if a["labels"]["alertname"] == "GpuFinopsSmActiveMissing"
                and a["labels"].get("hostname") == IDLE_NODE], "the node that serves SM_ACTIVE is not flagged"  # fmt: skip


def test_every_dashboard_query_is_valid_promql_and_returns_series(live):
    from gpu_finops.clients.promql import PrometheusClient
    from tools.dashboards import DASHBOARDS_DIR, queries

    prom, cycle = live
    client = PrometheusClient(prom.url)
    panels = [(f.name, title, expr) for f in sorted(DASHBOARDS_DIR.glob("*.json"))
              for title, expr in queries(f.read_text())]  # fmt: skip
    assert len(panels) >= 8, panels

    def empty() -> list[str]:
        collect_then_alerts(prom, cycle)  # keeps the collector's and the diagnosis' series fresh
        return [f"{name}: {title}: {expr[:120]}" for name, title, expr in panels if not client.query(expr)]

    missing = eventually(
        empty, lambda m: not m, timeout=120, interval=3, what="every dashboard query to return series"
    )
    assert missing == []


def test_the_waiting_pods_panel_counts_the_pending_gpu_pod_under_its_diagnosed_cause(live):
    from gpu_finops.clients.promql import PrometheusClient
    from gpu_finops.facts.collector_metrics import PENDING_GPU_PODS
    from tools.dashboards import DASHBOARDS_DIR, queries

    prom, cycle = live
    client = PrometheusClient(prom.url)
    (expr,) = [e for t, e in queries((DASHBOARDS_DIR / "gpu-finops-activity.json").read_text())
               if t == "Waiting GPU pods by diagnosed cause" and PENDING_GPU_PODS in e]  # fmt: skip

    def by_cause() -> dict[str, float]:
        collect_then_alerts(prom, cycle)
        return {s.labels.get("cause", ""): s.value for s in client.query(expr)}

    found = eventually(by_cause, lambda c: c.get("application", 0) >= 1, timeout=120, interval=3,
                       what=f"the panel's query ({expr}) counting {NS}/{WAITING} under application")  # fmt: skip
    ours = {s.labels["cause"]: s.value for s in client.query(f'{PENDING_GPU_PODS}{{namespace="{NS}"}}')}
    assert ours == {"application": 1.0}, f"{NS}/{WAITING} alone, under application: {ours} (panel: {found})"
