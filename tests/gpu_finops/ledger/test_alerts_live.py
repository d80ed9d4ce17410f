"""The alerts firing, and the dashboards answering, in a running Prometheus (Debian's) that scrapes the DCGM
simulator and the collector's real /metrics endpoint while the collector runs real cycles, and evaluates
the ledger's rules and the chart's alerts. No cluster: the nodes are the collector's test boundary
(FakeNodes) and kube-state-metrics' series are served beside the simulator's, in its exposition format
(tests/local/test_alerts_dashboards_on_local.py does the same on the local target with the real one).

  n-idle   one card held by ml/starved, SM_ACTIVE 0.02: GpuFinopsGpuHeldIdle fires, priced by the collector
  n-busy   one card held by ml/trainer, SM_ACTIVE 0.85: the near miss, silent
  n-nosm   one card whose exporter serves GPU_UTIL and no SM_ACTIVE: GpuFinopsSmActiveMissing fires

The collector's holdings reader is a fixed list (team-a holds both held cards), as the local target's
would read them from pods. The diagnosis exporter's /metrics serves one cycle over the same world (ml/wait
pending for a card while both cards are held: allocation), read from plain facts, not a cluster. The `for:` windows are shortened to seconds (AlertSettings); tests/gpu_finops/ledger/alerts proves the real ones.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpu_finops.clients.metrics_http import serve as serve_registry
from gpu_finops.clients.promql import PrometheusClient
from gpu_finops.cost.collector import Collector
from gpu_finops.cost.gpu_holdings import GpuHolding
from gpu_finops.cost.holdings_record import HoldingsReader
from gpu_finops.cost.metrics import CollectorMetrics, serve
from gpu_finops.cost.pricing import CatalogRates
from gpu_finops.cost.store import SqliteCostStore
from gpu_finops.diagnose.exporter import DiagnosisMetrics, read_once
from gpu_finops.diagnose.model import Cluster, Holder, NodeFacts, PodFacts
from gpu_finops.facts import dcgm
from gpu_finops.facts.kube_keys import GPU_RESOURCE
from gpu_finops.ledger import alerts, rules
from gpu_finops.ledger.conventions import Conventions
from harness.waits import eventually
from local.cluster.prometheus_server import PrometheusServer, free_port
from local.sim.dcgm_sim import DcgmSimulator, SimGpu
from tests.gpu_finops.cost.conftest import FakeNodes, node

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
C = Conventions(interval="2s")
FAST = alerts.AlertSettings(idle_for="4s", missing_sm_active_for="4s", pending_for="4s", busy_idle_for="4s")
RATES = CatalogRates({("g6e.xlarge", "on-demand"): 1.861})
INTERVAL_S = 3


def card(host: str, sm: float | None, pod: str | None) -> SimGpu:
    values = {dcgm.GPU_UTIL: 100.0, dcgm.POWER_USAGE: 95.0, dcgm.SM_CLOCK: 1980.0, dcgm.SM_OCCUPANCY: 0.02}
    if sm is not None:
        values[dcgm.SM_ACTIVE] = sm
    return SimGpu(host, 0, f"GPU-{host}", values=values, pod=("ml", pod, "main") if pod else None)


def ksm_text(hosts: list[str]) -> str:
    """kube-state-metrics' series for the hosts, one card each, two Running pods and one Pending asking
    for a card: what the ledger's rules and the dashboards' pending-pods panel read."""
    lines = []
    for h in hosts:
        lines += [
            f'kube_node_status_capacity{{node="{h}",resource="nvidia_com_gpu",unit="integer"}} 1',
            f'kube_node_status_allocatable{{node="{h}",resource="nvidia_com_gpu",unit="integer"}} 1',
            f'kube_node_status_condition{{node="{h}",condition="Ready",status="true"}} 1',
            f'kube_node_spec_unschedulable{{node="{h}"}} 0',
            f'kube_node_labels{{node="{h}"}} 1',
        ]
    for pod, host, phase in (
        ("starved", "n-idle", "Running"),
        ("trainer", "n-busy", "Running"),
        ("wait", "", "Pending"),
    ):
        lines += [
            f'kube_pod_container_resource_limits{{namespace="ml",pod="{pod}",uid="u-{pod}",container="main",'
            f'node="{host}",resource="nvidia_com_gpu",unit="integer"}} 1',
            f'kube_pod_status_phase{{namespace="ml",pod="{pod}",uid="u-{pod}",phase="{phase}"}} 1',
            f'kube_pod_info{{namespace="ml",pod="{pod}",uid="u-{pod}",node="{host}"}} 1',
            f'kube_pod_labels{{namespace="ml",pod="{pod}",uid="u-{pod}"}} 1',
            f'kube_pod_status_scheduled{{namespace="ml",pod="{pod}",uid="u-{pod}",condition="{"true" if host else "false"}"}} 1',
            f'kube_pod_status_unschedulable{{namespace="ml",pod="{pod}",uid="u-{pod}"}} {0 if host else 1}',
        ]
    return "\n".join(lines) + "\n"


def diagnosis_metrics() -> DiagnosisMetrics:
    """One diagnosis cycle over this world: ml/wait asks for a card, both cards are held (allocation)."""
    nodes = tuple(NodeFacts(h, {}, (), {GPU_RESOURCE: 1}) for h in ("n-idle", "n-busy"))
    holders = (
        Holder("ml", "starved", "n-idle", {GPU_RESOURCE: 1}),
        Holder("ml", "trainer", "n-busy", {GPU_RESOURCE: 1}),
    )
    wait = PodFacts("ml", "wait", gpu_requests={GPU_RESOURCE: 1})
    cluster = Cluster(nodes=nodes, holders=holders, stats=())
    metrics = DiagnosisMetrics()
    metrics.reading = read_once(lambda: [wait], lambda: ([wait], cluster))
    return metrics


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, Collector]]:
    hosts = ["n-idle", "n-busy", "n-nosm"]
    gpus = [card("n-idle", 0.02, "starved"), card("n-busy", 0.85, "trainer"), card("n-nosm", None, None)]
    sim = DcgmSimulator({m for g in gpus for m in g.values})
    sim.set_gpus(gpus, extra=ksm_text(hosts))
    sim_server = sim.serve()
    work: Path = tmp_path_factory.mktemp("alerts-live")
    (work / "rules.yaml").write_text(rules.render(C))
    (work / "alerts.yaml").write_text(alerts.render(C, FAST))
    metrics = CollectorMetrics()
    metrics_port = free_port()
    http = serve(metrics, metrics_port, host="127.0.0.1")
    diagnosis, diagnosis_port = diagnosis_metrics(), free_port()
    diagnosis_http = serve_registry(
        diagnosis.registry, lambda: diagnosis.problems, diagnosis_port, "127.0.0.1"
    )
    prom = PrometheusServer(work / "prom", [f"127.0.0.1:{sim_server.server_port}"], scrape_interval="1s",
                            evaluation_interval="2s", rule_files=[work / "rules.yaml", work / "alerts.yaml"],
                            jobs={"gpu-finops-collector": [f"127.0.0.1:{metrics_port}"],
                                  "gpu-finops-diagnosis": [f"127.0.0.1:{diagnosis_port}"]})  # fmt: skip
    try:
        prom.start()
        since = datetime.now(UTC) - timedelta(hours=1)
        held = [
            GpuHolding("ml", "team-a", pod, host, 1, since)
            for pod, host in (("starved", "n-idle"), ("trainer", "n-busy"))
        ]
        collector = Collector(FakeNodes([node(h) for h in hosts]), PrometheusClient(prom.url), RATES,
                              SqliteCostStore(":memory:"), interval=INTERVAL_S, metrics=metrics,
                              holdings=HoldingsReader(lambda: held, "test"))  # fmt: skip
        yield prom, collector
    finally:
        prom.stop()
        http.shutdown()
        diagnosis_http.shutdown()
        sim_server.shutdown()


def cycle_then_firing(prom: PrometheusServer, collector: Collector) -> list[dict]:
    end = datetime.now(UTC)
    collector.cycle(end - timedelta(seconds=INTERVAL_S), end)
    with urllib.request.urlopen(f"{prom.url}/api/v1/alerts", timeout=10) as resp:
        return [a for a in json.load(resp)["data"]["alerts"] if a["state"] == "firing"]


def named(found: list[dict], alert: str, host: str) -> list[dict]:
    return [a for a in found if a["labels"]["alertname"] == alert and a["labels"].get("hostname") == host]


def test_held_idle_and_missing_sm_active_fire_and_the_near_misses_stay_silent(running):
    prom, collector = running
    found = eventually(
        lambda: cycle_then_firing(prom, collector),
        lambda f: bool(named(f, "GpuFinopsGpuHeldIdle", "n-idle")) and bool(named(f, "GpuFinopsSmActiveMissing", "n-nosm")),
        timeout=120,
        interval=2,
        what="GpuFinopsGpuHeldIdle on n-idle and GpuFinopsSmActiveMissing on n-nosm",
    )  # fmt: skip
    (held,) = named(found, "GpuFinopsGpuHeldIdle", "n-idle")
    # the collector's price of one card-hour on n-idle (1.861 $/h, one card) x (1 - 0.02)
    assert float(held["value"]) == pytest.approx(1.861 * 0.98, rel=1e-6), held
    assert "about $1.82 per hour buys no computation" in held["annotations"]["description"], held
    assert (held["labels"]["namespace"], held["labels"]["pod"]) == ("ml", "starved")
    assert not named(found, "GpuFinopsGpuHeldIdle", "n-busy"), "a working card is not idle"
    assert not named(found, "GpuFinopsGpuHeldIdle", "n-nosm"), "no SM_ACTIVE is not idle: it is unknown"
    assert not named(found, "GpuFinopsSmActiveMissing", "n-idle")
    pending = [a for a in found if a["labels"]["alertname"] == "GpuFinopsPodsPendingWhileGpusIdle"]
    assert pending and float(pending[0]["value"]) == 1, found  # ml/wait asks 1 card while n-idle idles


def test_every_dashboard_query_returns_series_from_the_rules_and_the_collector(running):
    from tools.dashboards import DASHBOARDS_DIR, queries

    prom, collector = running
    client = PrometheusClient(prom.url)
    panels = [(f.name, title, expr) for f in sorted(DASHBOARDS_DIR.glob("*.json")) for title, expr in queries(f.read_text())]  # fmt: skip
    assert len(panels) == 12, panels

    def empty() -> list[str]:
        cycle_then_firing(prom, collector)
        return [f"{name}: {title}" for name, title, expr in panels if not client.query(expr)]

    assert (
        eventually(
            empty, lambda m: not m, timeout=120, interval=2, what="every dashboard query to return series"
        )
        == []
    )


def test_the_waiting_pods_panel_shows_the_pending_pod_under_allocation(running):
    from gpu_finops.facts.collector_metrics import PENDING_GPU_PODS
    from tools.dashboards import DASHBOARDS_DIR, queries

    prom, _collector = running
    client = PrometheusClient(prom.url)
    (expr,) = [e for t, e in queries((DASHBOARDS_DIR / "gpu-finops-activity.json").read_text())
               if PENDING_GPU_PODS in e]  # fmt: skip
    found = eventually(lambda: {s.labels["cause"]: s.value for s in client.query(expr)},
                       lambda c: c.get("allocation") == 1, timeout=60, interval=1, what=f"{expr}: allocation 1")  # fmt: skip
    assert {c: v for c, v in found.items() if v} == {"allocation": 1.0}, found
