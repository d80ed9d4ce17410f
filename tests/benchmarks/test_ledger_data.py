"""The ledger benchmarks' data generators produce what they claim, and the benchmark refuses to report a
figure over data that is not there (an empty Prometheus, a ledger that reads back something else)."""

from __future__ import annotations

import itertools
import shutil
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

from benchmarks import ledger as bench
from benchmarks.ledger_data import (
    JULY_TYPICAL,
    fleet_exposition,
    month_composition,
    month_openmetrics,
    node_counts,
)
from benchmarks.processes import prometheus
from gpu_finops.ledger import accounting, rules, source
from gpu_finops.ledger.conventions import BUCKETS, DCGM_INPUTS, DCGM_UNPLACED, KSM_INPUTS, RUNGS
from gpu_finops.ledger.rules import BUCKET, INPUTS, LARGEST_PLACEABLE, RUNG

START = datetime(2026, 7, 1, tzinfo=UTC)


def test_month_composition_is_julys_typical_hour_at_10000_gpus_and_scales():
    assert month_composition(10_000) == {b: JULY_TYPICAL.get(b, 0) for b in BUCKETS}
    small = month_composition(800)
    assert sum(small.values()) == 800
    assert small["unschedulable_repair_queue"] == 16 and small["allocated_serving_traffic"] == 240
    with pytest.raises(ValueError, match="gpus must be positive"):
        month_composition(0)


def test_month_openmetrics_holds_the_series_and_sums_it_claims():
    lines, data = month_openmetrics(800, START, 1, 60)
    text = "\n".join(lines) + "\n"
    families = {f.name: f for f in parse_openmetrics(text)}  # an independent OpenMetrics parser
    assert set(families) == {RUNG, BUCKET, LARGEST_PLACEABLE, INPUTS}
    per_series: dict[tuple[str, tuple], list] = defaultdict(list)
    for family in families.values():
        for s in family.samples:
            per_series[(s.name, tuple(sorted(s.labels.items())))].append((s.timestamp, s.value))
    inputs = len(KSM_INPUTS) + len(DCGM_INPUTS) + len(DCGM_UNPLACED)
    assert len(per_series) == data.series == len(RUNGS) + len(BUCKETS) + 1 + inputs
    assert {len(v) for v in per_series.values()} == {data.samples_per_series} == {1440}
    assert data.samples == 33 * 1440
    times = [float(t) for t, _ in per_series[(RUNG, (("rung", "installed"),))]]
    assert times[0] == START.timestamp() and all(b - a == 60 for a, b in itertools.pairwise(times))
    assert times[-1] < (START + timedelta(days=1)).timestamp()
    buckets = {dict(k[1])["bucket"]: [v for _, v in vs] for k, vs in per_series.items() if k[0] == BUCKET}
    assert {b: sum(v) for b, v in buckets.items()} == data.bucket_sums
    # a partition at every sample, and not a constant one (values vary as a real month's do)
    assert all(sum(col) == 800 for col in zip(*buckets.values(), strict=True))
    assert len(set(buckets["allocated_serving_traffic"])) > 10
    assert data.installed_sum == 800 * 1440


def _parse_exposition(page: bytes) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list] = defaultdict(list)
    for family in parse_text(page.decode()):
        for s in family.samples:
            out[s.name].append((s.labels, s.value))
    return out


def test_fleet_exposition_series_and_the_ledger_it_claims_follow_from_the_series():
    pages, fleet = fleet_exposition(96)  # 12 nodes: one of each kind, two training stepping
    assert fleet.nodes == node_counts(12) == dict.fromkeys(fleet.nodes, 1) | {"stepping": 2}
    assert sum(node_counts(1250).values()) == 1250 and node_counts(1250)["stranded"] == 249
    series = _parse_exposition(pages["ksm"]) | _parse_exposition(pages["dcgm"])
    assert {name: len(v) for name, v in series.items()} == fleet.series
    assert len(series["DCGM_FI_DEV_GPU_UTIL"]) == 96 and len(series["kube_node_status_capacity"]) == 12
    # every running pod has 5 phase series, one of them 1; the pending pods hold no node
    assert len(series["kube_pod_status_phase"]) == 5 * (fleet.pods + fleet.pending_pods)
    # recompute the ledger from the series alone, by docs/ledger.md's per-node definitions
    val = {name: {tuple(sorted(lab.items())): v for lab, v in rows} for name, rows in series.items()}
    nodes = [lab["node"] for lab, _ in series["kube_node_status_capacity"]]
    ready = {
        lab["node"] for lab, v in series["kube_node_status_condition"] if lab["status"] == "true" and v == 1
    }
    cordoned = {lab["node"] for lab, v in series["kube_node_spec_unschedulable"] if v == 1}
    reason = {
        lab["node"]: lab.get("label_gpu_finops_io_unschedulable_reason")
        for lab, _ in series["kube_node_labels"]
    }
    running = {
        lab["pod"] for lab, v in series["kube_pod_status_phase"] if lab["phase"] == "Running" and v == 1
    }
    cls = {
        lab["pod"]: lab.get("label_gpu_finops_io_workload_class", "unclassified")
        for lab, _ in series["kube_pod_labels"]
    }
    limits = {lab["pod"]: (lab["node"], v) for lab, v in series["kube_pod_container_resource_limits"]}
    smallest = min(v for _, v in limits.values())
    dcgm = {
        lab["UUID"]: (lab.get("pod"), v, val["DCGM_FI_DEV_POWER_USAGE"][k], val["DCGM_FI_DEV_SM_CLOCK"][k])
        for k, v in val["DCGM_FI_DEV_GPU_UTIL"].items()
        for lab in [dict(k)]
    }
    idle_busy = defaultdict(int)
    for pod, util, power, clock in dcgm.values():
        if pod and util > 10 and not (power > 40 and clock > 600):
            idle_busy[pod] += 1
    got = dict.fromkeys(BUCKETS, 0)
    for node in nodes:
        pods = [p for p, (n, _) in limits.items() if n == node and p in running]
        alloc = sum(limits[p][1] for p in pods)
        for p in pods:
            carved = idle_busy[p] if cls[p] in ("serving-traffic", "training-stepping", "unclassified") else 0
            got[f"allocated_{cls[p].replace('-', '_')}"] += limits[p][1] - carved
            got["busy_by_metric_idle_by_physics"] += carved
        if node in ready and node not in cordoned:
            free = 8 - alloc
            got["free_stranded" if 0 < free < smallest else "free_placeable"] += free
        else:
            key = {
                "repair-queue": "unschedulable_repair_queue",
                "driver-rollout": "unschedulable_driver_rollout",
            }
            got[key.get(reason[node] or "", "unschedulable_other")] += 8 - alloc
    assert got == fleet.buckets and sum(got.values()) == 96
    assert all(v > 0 for b, v in got.items()), "every bucket is exercised at the tiny size"
    busy = sum(1 for _, u, _, _ in dcgm.values() if u > 10)
    live = sum(1 for _, _, p, c in dcgm.values() if p > 40 and c > 600)
    assert (fleet.rungs["busy_by_metric"], fleet.rungs["live_by_physics"]) == (busy, live)
    assert fleet.rungs["installed"] == 96 and fleet.rungs["schedulable"] == 8 * (12 - 3)


def test_fleet_sizes_the_generator_refuses():
    with pytest.raises(ValueError, match="multiple of 8"):
        fleet_exposition(100)
    with pytest.raises(ValueError, match="at least 88 GPUs for one node of each kind, got 80"):
        fleet_exposition(80)


def _ledger(data, step: int = 60) -> accounting.Ledger:
    return accounting.reconcile(
        start="s",
        end="e",
        step_seconds=step,
        installed_sum=Decimal(data.installed_sum),
        bucket_sums={b: Decimal(v) for b, v in data.bucket_sums.items()},
        observed_samples=data.samples_per_series,
        expected_samples=data.samples_per_series,
        owners=accounting.load_owners(),
    )


def test_check_month_accepts_exactly_what_was_generated_and_names_each_difference():
    lines, data = month_openmetrics(800, START, 1, 60)
    list(lines)
    bench.check_month(_ledger(data), data, 60)
    short = replace(
        data, bucket_sums=data.bucket_sums | {"free_stranded": data.bucket_sums["free_stranded"] - 1}
    )
    with pytest.raises(
        bench.BenchmarkDataError, match=r"free_stranded: 479.98333\d* GPU-hours, generated 480\b"
    ):
        bench.check_month(_ledger(short), data, 60)
    fewer = replace(data, samples_per_series=data.samples_per_series - 1)
    with pytest.raises(bench.BenchmarkDataError, match="observed 1439 samples of installed, generated 1440"):
        bench.check_month(_ledger(fewer), data, 60)


needs_prometheus = pytest.mark.skipif(
    not (shutil.which("prometheus") and shutil.which("promtool")),
    reason="Debian's prometheus package not installed",
)


@needs_prometheus
def test_the_month_benchmark_errors_on_an_empty_prometheus(tmp_path: Path):
    config = {"global": {}, "scrape_configs": []}
    with prometheus(tmp_path, config, tmp_path / "data") as (url, _):
        window = source.Window(START, START + timedelta(days=1))
        with pytest.raises(source.NoLedgerData, match="has no samples"):
            bench._month_once(url, window, 60, accounting.load_owners())


@needs_prometheus
def test_the_month_benchmark_reads_back_a_tiny_backfill(capsys):
    result = bench.bench_month(800, 1, runs=1)
    assert result["queries"] == 5
    # the input-series counts are read twice: their max (absent in the window; unplaced DCGM series) and
    # their min (absent at some evaluations)
    inputs = len(KSM_INPUTS) + len(DCGM_INPUTS) + len(DCGM_UNPLACED)
    assert result["samples"] == 1440 * (2 + 2 * inputs + len(BUCKETS))
    assert "ledger month, 800 GPUs, 1 days at 60s" in capsys.readouterr().out


@needs_prometheus
def test_the_real_rules_over_the_generated_fleet_give_the_ledger_it_claims(tmp_path: Path, promtool):
    """`promtool test rules`: gpu_finops/ledger/rules.yaml over the tiny fleet's series, held for 5 minutes,
    records exactly the buckets and rungs the generator states (what the rules benchmark waits for)."""
    pages, fleet = fleet_exposition(96)
    # a fleet mid dcgm-exporter rollout: both spellings of the node label, half the nodes each
    assert b'hostname="gpu-node-00000"' in pages["dcgm"] and b'Hostname="gpu-node-00001"' in pages["dcgm"]
    inputs = []
    for page in pages.values():
        for name, rows in _parse_exposition(page).items():
            for labels, value in rows:
                selector = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                inputs.append({"series": f"{name}{{{selector}}}", "values": f"{value:g}x5"})
    expected = [{"labels": f'{BUCKET}{{bucket="{b}"}}', "value": v} for b, v in fleet.buckets.items()] + [
        {"labels": f'{RUNG}{{rung="{r}"}}', "value": v} for r, v in fleet.rungs.items()
    ]
    test = {
        "rule_files": [str(rules.RULES_PATH)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": inputs,
                "promql_expr_test": [
                    {
                        "expr": f'{BUCKET} or {RUNG}{{rung!~"useful_training"}}',
                        "eval_time": "4m",
                        "exp_samples": expected,
                    }
                ],
            }
        ],
    }
    path = tmp_path / "fleet.test.yaml"
    path.write_text(yaml.safe_dump(test))
    promtool.test_rules(path)
    assert len(expected) == len(BUCKETS) + 5 and len(inputs) == sum(fleet.series.values())
