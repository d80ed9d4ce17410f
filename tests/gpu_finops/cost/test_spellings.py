"""Inputs as fleets spell them: one GPU (GPU_UTIL 100 %, SM_ACTIVE 0.4582, 180 W, 1980 MHz, 20 GiB used),
served by a real Prometheus under each exporter spelling, gives the collector and the diagnosis the same
figures as the pinned exporter (the reference figures of test_collector.py), and says which unit it found.
Where the data cannot tell GPU_UTIL's unit, or SM_ACTIVE is absent, the cycle says so by name."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpu_finops.clients.promql import PrometheusClient
from gpu_finops.cost.collector import Collector
from gpu_finops.cost.records import STATUS_MISSING_SM_ACTIVE, STATUS_OK
from gpu_finops.cost.store import SqliteCostStore
from gpu_finops.diagnose.prom_observer import read_gpu_stats
from gpu_finops.facts import dcgm
from gpu_finops.facts.dcgm_inputs import PERCENT, PINNED, PRESETS, RATIO, Spelling, spelling_from_dict
from local.cluster.prometheus_server import PrometheusServer
from local.sim.dcgm_sim import DcgmSimulator, SimGpu
from tests.gpu_finops.cost.conftest import FakeNodes, node
from tests.gpu_finops.cost.test_collector import RATES, wait_for_series

# An OpenTelemetry pipeline that renamed the families, moved the node into `k8s_node_name` and turned
# GPU_UTIL into a ratio (declared: the data alone could not tell).
OTEL = spelling_from_dict(
    {
        "name": "otel-ratio",
        "gpu_util": "gpu_utilization_ratio",
        "sm_active": "gpu_sm_active_ratio",
        "sm_occupancy": "gpu_sm_occupancy_ratio",
        "power": "gpu_power_watts",
        "sm_clock": "gpu_sm_clock_hertz",
        "sm_clock_per_mhz": 1_000_000,
        "fb_used": "gpu_memory_used_bytes",
        "fb_free": "gpu_memory_free_bytes",
        "fb_per_mib": 1_048_576,
        "hostname_labels": ["k8s_node_name"],
        "gpu_util_unit": "ratio",
    }
)
# 4.9 moves GPU memory from MiB to bytes under names no upstream text read here gives (gpu_finops/facts/dcgm_inputs.py
# RENAMES, confirmed=False): the fleet names them in a spelling file; these names stand for the fleet's.
FLEET_FB_BYTES = spelling_from_dict(
    {
        "preset": "dcgm-exporter-4.9",
        "name": "4.9+fleet-fb-bytes",
        "fb_used": "FLEET_FB_USED_BYTES",
        "fb_free": "FLEET_FB_FREE_BYTES",
        "fb_per_mib": 1_048_576,
    }
)
# (spelling, its node label, GPU_UTIL in its unit, the unit the record must say)
VARIANTS: dict[str, tuple[Spelling, str, float, str]] = {
    "pinned 4.8.3": (PINNED, dcgm.HOSTNAME_LABEL, 100.0, PERCENT),
    "before 4.8.3 (Hostname)": (PRESETS["dcgm-exporter-pre-4.8.3"], dcgm.OLD_HOSTNAME_LABEL, 100.0, PERCENT),
    "4.9 (DCGM 4.7 names, ratio)": (PRESETS["dcgm-exporter-4.9"], dcgm.HOSTNAME_LABEL, 1.0, RATIO),
    "4.10 (byte rates renamed)": (PRESETS["dcgm-exporter-4.10"], dcgm.HOSTNAME_LABEL, 1.0, RATIO),
    "4.9-bytes (reported rename, fleet-named)": (FLEET_FB_BYTES, dcgm.HOSTNAME_LABEL, 1.0, RATIO),
    "otel pipeline (renamed, Hz, bytes, ratio)": (OTEL, "k8s_node_name", 1.0, RATIO),
}
FB_USED_MIB = 20480.0


def spelled_gpu(host: str, spelling: Spelling, label: str, util: float, *, sm: bool = True) -> SimGpu:
    values = {
        spelling.gpu_util: util,
        spelling.sm_occupancy: 0.3,
        spelling.power: 180.0,
        spelling.sm_clock: 1980.0 * spelling.sm_clock_per_mhz,
        spelling.fb_used: FB_USED_MIB * spelling.fb_per_mib,
        spelling.fb_free: 25000.0 * spelling.fb_per_mib,
    }
    if sm:
        values[spelling.sm_active] = 0.4582
    return SimGpu(hostname=host, index=0, uuid=f"GPU-{host}", values=values, hostname_label=label)


def host_of(variant: str) -> str:
    return "v-" + "".join(c for c in variant.split(" ")[0] if c.isalnum()).lower()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    """Every variant's node at once, plus one of each whose exporter serves no SM_ACTIVE."""
    gpus = []
    for variant, (spelling, label, util, _) in VARIANTS.items():
        gpus.append(spelled_gpu(host_of(variant), spelling, label, util))
        gpus.append(spelled_gpu(host_of(variant) + "-nosm", spelling, label, util, sm=False))
    fields = {m for g in gpus for m in g.values}
    sim = DcgmSimulator(fields)
    sim.set_gpus(gpus)
    server = sim.serve()
    workdir: Path = tmp_path_factory.mktemp("prometheus-spellings")
    with PrometheusServer(workdir, [f"127.0.0.1:{server.server_port}"], scrape_interval="1s") as prom:
        yield prom
    server.shutdown()


def cycle(prom_url: str, spelling: Spelling, hosts: list[str]):
    c = Collector(FakeNodes([node(h) for h in hosts]), PrometheusClient(prom_url), RATES,
                  SqliteCostStore(":memory:"), spelling=spelling)  # fmt: skip
    for h in hosts:
        wait_for_series(c.prom, h, spelling.gpu_util, label=spelling.hostname_labels[0])
    end = datetime.now(UTC)
    return c.cycle(end - timedelta(seconds=60), end)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_collector_gives_the_pinned_figures_under_every_spelling(fleet, variant):
    spelling, _, _, unit = VARIANTS[variant]
    host = host_of(variant)
    result = cycle(fleet.url, spelling, [host])
    (record,) = result.records
    assert record.x_Status == STATUS_OK, record.x_Message
    assert record.x_GpuUtilPercent == pytest.approx(100.0)
    assert record.x_GpuUtilUnit == unit
    # each figure says which of the fleet's series it came from and from how many cards
    assert (record.x_GpuUtilSeries, record.x_SmActiveSeries) == (spelling.gpu_util, spelling.sm_active)
    assert record.x_GpusReportingGpuUtil == record.x_GpusReportingSmActive == 1
    assert record.x_SmActive == pytest.approx(0.4582)
    assert record.x_SmClockMHz == pytest.approx(1980.0)
    assert record.x_PowerWatts == pytest.approx(180.0)
    assert round(record.EffectiveCost, 6) == 0.031017
    assert round(record.x_IdleCost, 6) == 0.016805


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_diagnosis_reads_the_same_gpu_under_every_spelling(fleet, variant):
    spelling, label, _, _ = VARIANTS[variant]
    prom = PrometheusClient(fleet.url)
    wait_for_series(prom, host_of(variant), spelling.sm_active, label=label)
    (row,) = [r for r in read_gpu_stats(prom, 60, spelling=spelling) if r.node == host_of(variant)]
    assert row.sm_active == pytest.approx(0.4582)
    assert row.fb_used_mib == pytest.approx(FB_USED_MIB)
    assert row.power_w == pytest.approx(180.0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_without_sm_active_the_record_names_the_exporters_csv_and_the_fix(fleet, variant):
    spelling, _, _, _ = VARIANTS[variant]
    host = host_of(variant) + "-nosm"
    result = cycle(fleet.url, spelling, [host])
    (record,) = result.records
    assert record.x_Status == STATUS_MISSING_SM_ACTIVE
    assert f"{spelling.gpu_util} has series for {host} but {spelling.sm_active} has none" in record.x_Message
    assert (
        "metrics CSV" in record.x_Message and "`gpu-finops dcgm-csv > dcgm-metrics.csv`" in record.x_Message
    )
    assert record.x_IdleCost is None and not result.healthy


def test_ratio_data_under_an_undeclared_unit_is_an_error_naming_the_series(fleet):
    """Near miss of the OTel row: the same ratio data with `gpu_util_unit: auto`. Every value is within
    0..1, so it could be a busy ratio or a nearly idle percentage: GPU_UTIL is left empty and the cycle
    names the series and the fix, while SM_ACTIVE (and so the idle cost) is still recorded."""
    auto = dataclasses.replace(OTEL, gpu_util_unit="auto")
    host = host_of("otel")
    result = cycle(fleet.url, auto, [host])
    (record,) = result.records
    assert record.x_GpuUtilPercent is None and record.x_GpuUtilUnit is None
    assert record.x_SmActive == pytest.approx(0.4582) and round(record.x_IdleCost, 6) == 0.016805
    (problem,) = [p for p in result.problems if "unit" in p]
    assert "cannot tell gpu_utilization_ratio's unit from the data" in problem
    assert f'gpu_utilization_ratio{{UUID="GPU-{host}' in problem and "gpu_util_unit: ratio" in problem
    assert not result.healthy


def test_percent_data_under_a_declared_ratio_is_an_error(fleet):
    """The pinned exporter's percentages read under a spelling that says ratio: a value of 100 cannot be
    a ratio, so the cycle says the declaration is wrong instead of reporting 10,000 %."""
    wrong = dataclasses.replace(PINNED, name="wrong", gpu_util_unit="ratio")
    result = cycle(fleet.url, wrong, [host_of("pinned")])
    (problem,) = [p for p in result.problems if "unit" in p]
    assert "is declared a 0-1 ratio (spelling wrong)" in problem and "= 100" in problem
    assert result.records[0].x_GpuUtilPercent is None
