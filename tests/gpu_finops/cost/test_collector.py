"""The collector against a real Prometheus scraping DCGM-shaped series."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from gpu_finops.clients.promql import PrometheusClient, PrometheusUnavailable
from gpu_finops.cost.collector import Collector, align
from gpu_finops.cost.metrics import CollectorMetrics
from gpu_finops.cost.pricing import CatalogRates
from gpu_finops.cost.records import (
    STATUS_MISSING_SM_ACTIVE,
    STATUS_NO_GPU_SERIES,
    STATUS_NO_RATE,
    STATUS_OK,
    STATUS_STARTING,
)
from gpu_finops.cost.store import SqliteCostStore
from gpu_finops.facts import dcgm, timeouts
from harness.waits import eventually
from tests.gpu_finops.cost.conftest import FakeNodes, gpu, node

RATES = CatalogRates(
    {("g6e.xlarge", "on-demand"): 1.861, ("g6e.xlarge", "spot"): 0.95, ("g6e.12xlarge", "on-demand"): 10.493}
)


def wait_for_series(
    prom: PrometheusClient, host: str, metric: str = dcgm.GPU_UTIL, label: str = dcgm.HOSTNAME_LABEL
) -> None:
    eventually(
        lambda: prom.query(f'{metric}{{{label}="{host}"}}'),
        lambda s: len(s) > 0,
        timeout=timeouts.PROM_FIRST_SAMPLES,
        interval=0.5,
        what=f"{metric} for {host} in Prometheus",
    )


def last_minute() -> tuple[datetime, datetime]:
    end = datetime.now(UTC)
    return end - timedelta(seconds=60), end


def collector(nodes, prom_url, store=None, **kw) -> Collector:
    return Collector(
        FakeNodes(nodes),
        PrometheusClient(prom_url),
        kw.pop("rates", RATES),
        store or SqliteCostStore(":memory:"),
        **kw,
    )


def test_reference_figures_gpu_util_100_sm_active_4582(sim, prometheus):
    sim.set_gpus([gpu("ref-node", 0, util=100.0, sm=0.4582)])
    c = collector([node("ref-node")], prometheus.url)
    wait_for_series(c.prom, "ref-node", dcgm.SM_ACTIVE)
    result = c.cycle(*last_minute())
    (record,) = result.records
    assert record.x_Status == STATUS_OK, record.x_Message
    assert record.x_GpuUtilPercent == pytest.approx(100.0)
    assert record.x_SmActive == pytest.approx(0.4582)
    assert round(record.EffectiveCost, 6) == 0.031017
    assert round(record.x_IdleCost, 6) == 0.016805
    assert record.x_InstanceSeconds == pytest.approx(60)
    assert record.x_RateSource == "catalog"
    assert result.healthy


def test_constant_number_of_queries_whatever_the_fleet_size(sim, prometheus):
    hosts = [f"fleet-{i}" for i in range(40)]
    sim.set_gpus([gpu(h, g) for h in hosts for g in range(8)])
    c = collector([node(h, instance_type="g6e.12xlarge", gpus=8) for h in hosts], prometheus.url)
    wait_for_series(c.prom, "fleet-39", dcgm.SM_ACTIVE)
    result = c.cycle(*last_minute())
    assert result.queries == len(dcgm.COLLECTED)
    assert len(result.records) == 40
    assert all(r.x_GpusReporting == 8 and r.x_Status == STATUS_OK for r in result.records)
    assert {(r.x_GpusReportingGpuUtil, r.x_GpusReportingSmActive, r.x_GpuUtilSeries, r.x_SmActiveSeries)
            for r in result.records} == {(8, 8, dcgm.GPU_UTIL, dcgm.SM_ACTIVE)}  # fmt: skip


def test_missing_sm_active_is_a_configuration_error_kept_as_a_gap(sim, prometheus):
    sim.set_gpus([gpu("nosm-node", 0, sm=None)])
    metrics = CollectorMetrics()
    c = collector([node("nosm-node")], prometheus.url, metrics=metrics)
    wait_for_series(c.prom, "nosm-node")
    result = c.cycle(*last_minute())
    (record,) = result.records
    assert record.x_Status == STATUS_MISSING_SM_ACTIVE
    assert record.x_SmActive is None and record.x_IdleCost is None  # a gap, not 0 or 1
    assert record.x_GpuUtilPercent == pytest.approx(100.0)
    assert record.EffectiveCost > 0
    assert "metrics CSV" in record.x_Message
    assert not result.healthy
    assert metrics.healthy._value.get() == 0
    assert metrics.missing_metric.labels(dcgm.SM_ACTIVE, "nosm-node")._value.get() == 1


def test_young_node_without_series_is_starting_not_an_error(sim, prometheus):
    sim.set_gpus([])
    c = collector([node("young", age=timedelta(seconds=90))], prometheus.url, grace_seconds=300)
    result = c.cycle(*last_minute())
    (record,) = result.records
    assert record.x_Status == STATUS_STARTING
    assert record.x_SmActive is None and record.x_IdleCost is None
    assert result.healthy


def test_old_node_without_any_series_is_an_error_naming_the_exporter(sim, prometheus, caplog):
    sim.set_gpus([])
    c = collector([node("silent", age=timedelta(hours=2))], prometheus.url)
    result = c.cycle(*last_minute())
    (record,) = result.records
    assert record.x_Status == STATUS_NO_GPU_SERIES
    assert "dcgm-exporter" in record.x_Message
    assert not result.healthy
    assert any("no samples" in m for m in caplog.messages)


def test_no_price_is_a_gap_with_a_reason(sim, prometheus):
    sim.set_gpus([gpu("odd-type", 0)])
    c = collector([node("odd-type", instance_type="x9.huge")], prometheus.url)
    wait_for_series(c.prom, "odd-type")
    (record,) = c.cycle(*last_minute()).records
    assert record.x_Status == STATUS_NO_RATE
    assert record.EffectiveCost is None and record.x_IdleCost is None
    assert "x9.huge" in record.x_Message


def test_prometheus_down_retries_then_says_so():
    from local.cluster.prometheus_server import free_port

    prom = PrometheusClient(f"http://127.0.0.1:{free_port()}", retry_for=1.5)
    c = Collector(FakeNodes([node("n")]), prom, RATES, SqliteCostStore(":memory:"))
    with pytest.raises(PrometheusUnavailable, match="did not answer .* for 1.5s"):
        c.cycle(*last_minute())


def test_node_deleted_mid_interval_is_charged_for_what_was_observed(sim, prometheus):
    sim.set_gpus([gpu("leaver", 0)])
    now = [datetime.now(UTC)]
    nodes = FakeNodes([node("leaver", now=now[0])])
    c = Collector(
        nodes, PrometheusClient(prometheus.url), RATES, SqliteCostStore(":memory:"), clock=lambda: now[0]
    )
    wait_for_series(c.prom, "leaver")
    first_end = now[0]
    c.cycle(first_end - timedelta(seconds=60), first_end)
    # The node disappears; it was last listed at first_end + 0, and had a deletion time 20 s later.
    nodes.nodes = []
    c._seen["leaver"] = (node("leaver", now=now[0], deleted=first_end + timedelta(seconds=20)), first_end)
    now[0] = first_end + timedelta(seconds=60)
    (record,) = c.cycle(first_end, now[0]).records
    assert record.x_InstanceSeconds == pytest.approx(20)
    assert record.EffectiveCost == pytest.approx(1.861 * 20 / 3600)


def test_node_created_mid_interval_is_charged_from_its_creation(sim, prometheus):
    sim.set_gpus([gpu("arriver", 0)])
    start, end = last_minute()
    arrived = node("arriver", age=timedelta(seconds=15), now=end)
    c = collector([arrived], prometheus.url)
    wait_for_series(c.prom, "arriver")
    (record,) = c.cycle(start, end).records
    assert record.x_InstanceSeconds == pytest.approx(15)


def test_restart_mid_run_never_double_counts(sim, prometheus, tmp_path):
    sim.set_gpus([gpu("steady", 0)])
    path = tmp_path / "cost.sqlite"
    end = align(datetime.now(UTC), 60)
    start = end - timedelta(seconds=60)
    first = collector([node("steady")], prometheus.url, SqliteCostStore(path))
    wait_for_series(first.prom, "steady")
    first.cycle(start, end)
    # A new process (restart) collects the same interval again, then the next one.
    second = collector([node("steady")], prometheus.url, SqliteCostStore(path))
    second.cycle(start, end)
    second.cycle(end, end + timedelta(seconds=60))
    rows = SqliteCostStore(path).records()
    assert [(r.ResourceName, r.ChargePeriodStart) for r in rows] == [
        ("steady", start.strftime("%Y-%m-%dT%H:%M:%SZ")),
        ("steady", end.strftime("%Y-%m-%dT%H:%M:%SZ")),
    ]


def _our_packages() -> tuple[str, ...]:
    """Our top-level packages, as import-linter's contracts name them (one list, in pyproject.toml)."""
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())
    return tuple(pyproject["tool"]["importlinter"]["root_packages"])


OUR_PACKAGES = _our_packages()


def test_dockerfile_runs_the_collector_with_only_what_it_imports():
    """No Docker engine here: the image copies exactly the entry point, finops, diagnose (the chart's diagnosis
    exporter runs the same image), clients and facts; `collect`, every finops module and the diagnosis
    exporter import nothing of ours beyond those, and `collect` no heavy synthesis library."""
    import json
    import re
    import subprocess
    import sys
    from pathlib import Path

    from gpu_finops.facts.names import COLLECTOR_PORT

    text = (Path(__file__).resolve().parents[3] / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["gpu-finops"]' in text and '"collect"' in text and "USER 10001" in text
    assert f"EXPOSE {COLLECTOR_PORT}" in text and f'"--port", "{COLLECTOR_PORT}"' in text
    copied = {m.group(1) for m in re.finditer(r"^COPY (\w+) \1$", text, re.M)}
    assert copied == {"gpu_finops"}, f"the image copies {sorted(copied)}"
    probe = f"""
import importlib, json, pkgutil, sys
import gpu_finops.cli as c
importlib.import_module(c.SUBCOMMANDS["collect"][0])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("cdktn", "cdktn_provider_aws", "jsii", "matplotlib"))
import gpu_finops.cost as cost
for m in pkgutil.iter_modules(cost.__path__, "gpu_finops.cost."):
    importlib.import_module(m.name)
importlib.import_module(c.SUBCOMMANDS["diagnose"][0])
importlib.import_module("gpu_finops.diagnose.exporter")
ours = sorted({{m.split(".")[0] for m in sys.modules}} & set({OUR_PACKAGES!r}))
print(json.dumps({{"heavy": heavy, "ours": ours}}))
"""
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    seen = json.loads(result.stdout.splitlines()[-1])
    assert seen["heavy"] == [], f"`collect` imports {seen['heavy']}"
    assert set(seen["ours"]) <= copied, (
        f"finops or the diagnosis imports {sorted(set(seen['ours']) - copied)}, not in the image"
    )


# --- the exporter's node label: `Hostname` before dcgm-exporter 4.8.3, `hostname` since ---------------------
def test_both_spellings_of_the_exporters_node_label_join_to_their_nodes(sim, prometheus):
    old = replace(gpu("spelled-old", 0, sm=0.25), hostname_label="Hostname")
    new = replace(gpu("spelled-new", 0, sm=0.75), hostname_label="hostname")
    sim.set_gpus([old, new])
    c = collector([node("spelled-old"), node("spelled-new")], prometheus.url)
    wait_for_series(c.prom, "spelled-old", dcgm.SM_ACTIVE, label="Hostname")
    wait_for_series(c.prom, "spelled-new", dcgm.SM_ACTIVE, label="hostname")
    result = c.cycle(*last_minute())
    by_name = {r.ResourceName: r for r in result.records}
    assert {n: (r.x_Status, r.x_SmActive) for n, r in by_name.items()} == {
        "spelled-old": (STATUS_OK, pytest.approx(0.25)),
        "spelled-new": (STATUS_OK, pytest.approx(0.75)),
    }
    assert result.healthy, result.problems


def test_a_series_with_neither_node_label_is_reported_by_name_not_dropped(sim, prometheus):
    """Near miss: the GPU reports, but nothing says which node it is on. The node is not charged for
    readings it cannot be joined to, and the cycle names the series instead of losing it silently."""
    labelled = replace(gpu("labelled", 0), hostname_label="hostname")
    nameless = replace(gpu("nameless", 0), hostname_label="")
    sim.set_gpus([labelled, nameless])
    c = collector([node("labelled"), node("nameless")], prometheus.url)
    wait_for_series(c.prom, "labelled", dcgm.SM_ACTIVE, label="hostname")
    wait_for_series(c.prom, "GPU-nameless-0", dcgm.SM_ACTIVE, label="UUID")
    result = c.cycle(*last_minute())
    by_name = {r.ResourceName: r for r in result.records}
    assert by_name["labelled"].x_Status == STATUS_OK
    assert by_name["nameless"].x_Status == STATUS_NO_GPU_SERIES
    (problem,) = [p for p in result.problems if "neither" in p]
    assert "carry no node label (neither `hostname` nor `Hostname`)" in problem
    assert f'{dcgm.SM_ACTIVE}{{UUID="GPU-nameless-0",gpu="0"}}' in problem, problem
    assert not result.healthy
