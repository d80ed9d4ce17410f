"""What the collector serves for the alerts and dashboards (per-GPU price, idle dollars per hour by node
and by tenant, the end of the last recorded interval), and the defaults that used to hide things: holdings
recorded wherever pods can be read, and the reaper's NodePool named or discovered, never assumed."""

from __future__ import annotations

import argparse
import logging
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry

from gpu_finops.cost.cli_collect import holdings_reader
from gpu_finops.cost.cli_reap import nodepool_of
from gpu_finops.cost.holdings_record import IntervalHoldings
from gpu_finops.cost.metrics import CollectorMetrics
from gpu_finops.cost.records import CycleResult
from gpu_finops.facts import collector_metrics as names
from gpu_finops.facts.errors import UsageError
from tests.gpu_finops.cost.conftest import node
from tests.gpu_finops.cost.focus_fixtures import T0, hold, iso, record


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_the_collector_serves_price_idle_per_hour_and_the_tenants_split():
    registry = CollectorRegistry()
    metrics = CollectorMetrics(registry)
    rec = record("gpu-a", gpus=2, seconds=60, cost=0.06, sm_active=0.25)  # idle 0.045 over a minute
    result = CycleResult(T0, T0 + timedelta(seconds=60), [rec], 5, 0.1)
    # team-a held one of the two cards the whole interval, team-b one for the second half
    holdings = (hold("team-a", node="gpu-a"), hold("team-b", node="gpu-a", start=T0 + timedelta(seconds=30)))
    interval = IntervalHoldings("gpu-a", rec.ResourceId, iso(T0), iso(T0 + timedelta(seconds=60)), "kube",
                                iso(T0), holdings)  # fmt: skip
    metrics.observe_cycle(result)
    metrics.observe_tenants(result, [interval])
    assert value(registry, names.GPU_DOLLARS_PER_HOUR, node="gpu-a", capacity_type="spot",
                 instance_type="g6e.xlarge") == pytest.approx(0.06 * 60 / 2)  # fmt: skip
    assert value(registry, names.NODE_IDLE_DOLLARS_PER_HOUR, node="gpu-a") == pytest.approx(0.045 * 60)
    per_card = 0.045 * 60 / 2
    split = {t: value(registry, names.TENANT_IDLE_DOLLARS_PER_HOUR, tenant=t, node="gpu-a")
             for t in ("team-a", "team-b", "")}  # fmt: skip
    assert split == pytest.approx({"team-a": per_card, "team-b": per_card / 2, "": per_card / 2})
    assert value(registry, names.LAST_RECORD_END) == (T0 + timedelta(seconds=60)).timestamp()


def test_an_interval_nobody_recorded_is_not_split_and_a_cycle_without_records_keeps_the_last_end():
    registry = CollectorRegistry()
    metrics = CollectorMetrics(registry)
    rec = record("gpu-a")
    metrics.observe_cycle(CycleResult(T0, T0 + timedelta(seconds=60), [rec], 5, 0.1))
    metrics.observe_tenants(CycleResult(T0, T0 + timedelta(seconds=60), [rec], 5, 0.1), [])
    assert value(registry, names.TENANT_IDLE_DOLLARS_PER_HOUR, tenant="", node="gpu-a") is None
    metrics.observe_cycle(CycleResult(T0 + timedelta(seconds=60), T0 + timedelta(seconds=120), [], 5, 0.1))
    assert value(registry, names.LAST_RECORD_END) == (T0 + timedelta(seconds=60)).timestamp()


def test_holdings_auto_records_none_when_nodes_come_from_a_file_and_says_so(caplog):
    args = argparse.Namespace(
        holdings="auto", nodes="file:/tmp/nodes.json", kubeconfig=None, pod_resources_url=None
    )
    with caplog.at_level(logging.WARNING):
        assert holdings_reader(args) is None
    assert "--holdings auto: GPU nodes come from file:/tmp/nodes.json, not Kubernetes" in caplog.text
    assert holdings_reader(argparse.Namespace(holdings="none")) is None


def test_the_collects_help_says_holdings_are_recorded_by_default(capsys):
    from gpu_finops.cli import main

    with pytest.raises(SystemExit):
        main(["collect", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "'auto' (default: from the Kubernetes API whenever GPU nodes come from it" in out
    assert "--exporter-spelling" in out


def reap_args(nodepool: str | None = None, apply: bool = False) -> argparse.Namespace:
    return argparse.Namespace(nodepool=nodepool, apply=apply)


def test_the_reapers_nodepool_is_named_or_discovered_never_assumed():
    one = [node("a", nodepool="gpu-ondemand"), node("b", nodepool="gpu-ondemand")]
    two = [*one, node("c", nodepool="gpu-spot")]
    assert nodepool_of(reap_args("gpu-spot"), two) == ("gpu-spot", "NodePool gpu-spot (--nodepool)")
    assert nodepool_of(reap_args(apply=True), one) == (
        "gpu-ondemand", "NodePool gpu-ondemand (discovered: the only NodePool with GPU nodes)")  # fmt: skip
    assert nodepool_of(reap_args(), two) == (
        None, "no NodePool chosen (GPU nodes' NodePools: gpu-ondemand, gpu-spot): name one with --nodepool")  # fmt: skip
    with pytest.raises(UsageError, match=r"--apply needs --nodepool NAME: the GPU nodes are in 2 NodePools "
                       r"\(gpu-ondemand, gpu-spot\)"):  # fmt: skip
        nodepool_of(reap_args(apply=True), two)
