"""SM_ACTIVE on a MIG node, through a real Prometheus scraping the simulated exporter's per-instance series:
each GPU instance weighed by the part of its card's compute it has, so compute a layout leaves unused counts
as idle; readings that are not exactly the node's slices (one missing, one of a profile the node does not
advertise, one more than its layout has) leave the idle cost empty, saying what was read."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpu_finops.cost.pricing import CatalogRates
from gpu_finops.cost.records import STATUS_OK, STATUS_PARTIAL
from gpu_finops.facts import dcgm
from harness.waits import eventually
from local.sim.dcgm_sim import SimGpu
from tests.gpu_finops.cost.conftest import node
from tests.gpu_finops.cost.test_collector import collector, last_minute, wait_for_series

RATES = CatalogRates({("p5.48xlarge", "on-demand"): 55.04})
# all-balanced on each of p5.48xlarge's 8 cards: two 1g.10gb (1/7 each), a 2g.20gb (2/7), a 3g.40gb (3/7)
LAYOUT = [("1g.10gb", 1), ("1g.10gb", 2), ("2g.20gb", 3), ("3g.40gb", 4)]
LABELS = {"node.kubernetes.io/instance-type": "p5.48xlarge", "nvidia.com/mig.strategy": "mixed"}
CAPACITY = {"nvidia.com/mig-1g.10gb": "16", "nvidia.com/mig-2g.20gb": "8", "nvidia.com/mig-3g.40gb": "8"}


def instances(host: str, busy: dict[tuple[int, int], float]) -> list[SimGpu]:
    """Every GPU instance of the node, idle but those in `busy` ((card, instance id) -> SM_ACTIVE); no GPU_UTIL."""
    return [
        SimGpu(host, card, f"GPU-{host}-{card}", "NVIDIA H100 80GB HBM3", instance=(profile, gi),
               values={dcgm.SM_ACTIVE: busy.get((card, gi), 0.0), dcgm.POWER_USAGE: 100.0, dcgm.SM_CLOCK: 1980.0})
        for card in range(8)
        for profile, gi in LAYOUT
    ]  # fmt: skip


def mig_node(name: str):
    return replace(node(name, instance_type="p5.48xlarge", gpus=8), labels=LABELS, capacity=CAPACITY)


def test_each_instance_counts_at_its_slices_share_of_the_card(sim, prometheus):
    # the 3g.40gb of card 0 fully active, a 1g.10gb of card 1 half: (3/7 x 1 + 1/7 x 0.5) / 8 cards = 1/16
    sim.set_gpus(instances("mig-a", {(0, 4): 1.0, (1, 2): 0.5}))
    c = collector([mig_node("mig-a")], prometheus.url, rates=RATES)
    wait_for_series(c.prom, "mig-a", dcgm.SM_ACTIVE)
    (record,) = c.cycle(*last_minute()).records
    assert record.x_Status == STATUS_OK, record.x_Message
    assert record.x_SmActive == pytest.approx(1 / 16)
    assert record.x_IdleCost == pytest.approx(record.EffectiveCost * 15 / 16)
    assert record.x_GpuUtilPercent is None, "DCGM reports no GPU_UTIL per MIG instance: missing, not zero"
    assert record.x_GpusReporting == 8, "cards, not their 32 instances"
    assert (record.x_GpusReportingSmActive, record.x_SmActiveSeries) == (8, dcgm.SM_ACTIVE)
    assert (record.x_GpusReportingGpuUtil, record.x_GpuUtilSeries) == (0, None), "no GPU_UTIL: from no card"


def test_an_instance_that_does_not_report_leaves_the_idle_cost_empty_naming_how_many(sim, prometheus):
    sim.set_gpus(instances("mig-b", {(0, 4): 1.0})[:-1])
    c = collector([mig_node("mig-b")], prometheus.url, rates=RATES)
    wait_for_series(c.prom, "mig-b", dcgm.SM_ACTIVE)
    (record,) = c.cycle(*last_minute()).records
    assert (record.x_Status, record.x_SmActive, record.x_IdleCost) == (STATUS_PARTIAL, None, None)
    assert record.x_Message == (
        "DCGM_FI_PROF_SM_ACTIVE on mig-b reads 16 1g.10gb, 8 2g.20gb, 7 3g.40gb, not its slices and whole cards "
        "(16 1g.10gb, 8 2g.20gb, 8 3g.40gb): one not reporting, or a series left from an earlier layout; idle "
        "cost left empty rather than guessed"
    )


def test_an_instance_of_a_profile_the_node_does_not_advertise_leaves_the_idle_cost_empty_naming_it(
    sim, prometheus
):
    gpus = instances("mig-c", {})
    gpus[0] = replace(gpus[0], instance=("4g.40gb", 1))
    sim.set_gpus(gpus)
    c = collector([mig_node("mig-c")], prometheus.url, rates=RATES)
    wait_for_series(c.prom, "mig-c", dcgm.SM_ACTIVE)
    (record,) = c.cycle(*last_minute()).records
    assert (record.x_Status, record.x_IdleCost) == (STATUS_PARTIAL, None)
    assert record.x_Message.startswith(
        "a GPU instance of profile '4g.40gb' reports DCGM_FI_PROF_SM_ACTIVE on mig-c, which advertises "
        "['1g.10gb', '2g.20gb', '3g.40gb']"
    )


@pytest.mark.parametrize(
    ("host", "extra", "said"),
    [  # a 1g.10gb instance from an earlier layout still in the window; a card-level series beside the instances
        ("mig-d1", ("1g.10gb", 9), "17 1g.10gb, 8 2g.20gb, 8 3g.40gb"),
        ("mig-d2", None, "1 whole card(s), 16 1g.10gb, 8 2g.20gb, 8 3g.40gb"),
    ],
)
def test_a_series_beyond_the_layout_leaves_the_idle_cost_empty_not_above_one(
    sim, prometheus, host, extra, said
):
    sim.set_gpus(
        [*instances(host, {}), SimGpu(host, 0, f"GPU-{host}-9", instance=extra, values={dcgm.SM_ACTIVE: 1.0})]
    )
    c = collector([mig_node(host)], prometheus.url, rates=RATES)
    eventually(
        lambda: len(c.prom.query(f'{dcgm.SM_ACTIVE}{{hostname="{host}"}}')), lambda n: n == 33,
        timeout=30, interval=0.5, what=f"33 series for {host}",
    )  # fmt: skip
    (record,) = c.cycle(*last_minute()).records
    assert (record.x_Status, record.x_SmActive, record.x_IdleCost) == (STATUS_PARTIAL, None, None)
    assert record.x_Message.startswith(f"DCGM_FI_PROF_SM_ACTIVE on {host} reads {said}, not its slices"), (
        record.x_Message
    )


def test_compute_a_layout_leaves_unused_counts_as_idle(sim, prometheus):
    # 1g.20gb x 4 on each card: 4 of its 7 compute slices, every instance fully active: 4/7, not 1
    gpus = [
        SimGpu("mig-e", card, f"GPU-mig-e-{card}", instance=("1g.20gb", gi), values={dcgm.SM_ACTIVE: 1.0})
        for card in range(8)
        for gi in range(1, 5)
    ]
    sim.set_gpus(gpus)
    n = replace(mig_node("mig-e"), capacity={"nvidia.com/mig-1g.20gb": "32"})
    c = collector([n], prometheus.url, rates=RATES)
    wait_for_series(c.prom, "mig-e", dcgm.SM_ACTIVE)
    (record,) = c.cycle(*last_minute()).records
    assert record.x_Status == STATUS_OK, record.x_Message
    assert record.x_SmActive == pytest.approx(4 / 7)
