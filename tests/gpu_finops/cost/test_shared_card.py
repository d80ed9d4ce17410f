"""A time-sliced card under dcgm-exporter's KUBERNETES_VIRTUAL_GPUS shape (docs/infra.md, "Time-sliced
attribution"), scraped by a real Prometheus: the collector's GPU_UTIL and the diagnosis's VRAM are the
card's, not the card averaged with its sharers' shares; each sharer is still named with its share."""

from __future__ import annotations

import pytest

from gpu_finops.clients.promql import PrometheusClient
from gpu_finops.diagnose import activity as act
from gpu_finops.diagnose.prom_observer import read_gpu_stats
from gpu_finops.facts import dcgm
from local.sim.dcgm_sim import SimGpu
from tests.gpu_finops.cost.conftest import node
from tests.gpu_finops.cost.test_collector import collector, last_minute, wait_for_series

HOST = "shared-node"
CARD = {
    dcgm.GPU_UTIL: 90.0,
    dcgm.SM_ACTIVE: 0.05,
    dcgm.SM_OCCUPANCY: 0.02,
    dcgm.POWER_USAGE: 95.0,
    dcgm.SM_CLOCK: 1980.0,
    dcgm.FB_USED: 41400.0,
    dcgm.FB_FREE: 4600.0,
}
SHARERS = ("srv-0", "srv-1", "srv-2")


def sharers() -> list[SimGpu]:
    return [
        SimGpu(HOST, 0, "GPU-shared", values=dict(CARD), pod=("ml", p, "c"), vgpu=str(i), pod_uid=f"uid-{i}")
        for i, p in enumerate(SHARERS)
    ]


@pytest.fixture(scope="module")
def shared(sim, prometheus):
    sim.set_gpus(sharers())
    wait_for_series(PrometheusClient(prometheus.url), HOST, dcgm.SM_ACTIVE)
    return prometheus


def test_the_collector_reads_the_cards_gpu_util_not_the_mean_with_the_shares(shared):
    c = collector([node(HOST)], shared.url)
    (record,) = c.cycle(*last_minute()).records
    assert record.x_GpuUtilPercent == pytest.approx(90.0)
    assert record.x_SmActive == pytest.approx(0.05)


def test_near_miss_the_plain_mean_reads_the_card_at_half(shared):
    """The query before: every series of the card averaged, the card's 90 with three shares of 30."""
    prom = PrometheusClient(shared.url)
    q = f'avg by (hostname, gpu, UUID) (avg_over_time({dcgm.GPU_UTIL}{{hostname="{HOST}"}}[60s]))'
    (sample,) = prom.query(q)
    assert sample.value == pytest.approx(45.0)


def test_the_diagnosis_sees_the_card_resident_and_each_sharer_with_its_share(shared):
    rows = [r for r in read_gpu_stats(PrometheusClient(shared.url), 60) if r.node == HOST]
    holders = sorted(r.holder for r in rows if r.holder)
    assert holders == [f"ml/{p}" for p in SHARERS]  # every sharer named, not the last one only
    card = act.card_activity(rows)
    assert card is not None and card.fb_ratio == pytest.approx(0.9) and card.fb_ratio >= act.FB_RESIDENT
    for r in rows:
        if r.holder:
            assert r.fb_used_mib == pytest.approx(CARD[dcgm.FB_USED] / 3) and r.sm_active == pytest.approx(
                0.05
            )
    # near miss: averaging the card row with the shares, as before, hides the residency
    plain = act.activity(rows)
    assert plain is not None and plain.fb_ratio is not None and plain.fb_ratio < act.FB_RESIDENT
