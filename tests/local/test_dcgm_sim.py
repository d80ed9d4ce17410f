"""The simulated exporter renders once per change and serves those bytes to every scrape."""

from __future__ import annotations

import urllib.request

from facts import dcgm
from local.dcgm_sim import DcgmSimulator, SimGpu


def gpus(sm: float) -> list[SimGpu]:
    return [
        SimGpu(f"node-{n}", g, f"GPU-{n}-{g}", values={dcgm.SM_ACTIVE: sm})
        for n in range(3)
        for g in range(2)
    ]


def test_scrapes_reuse_one_rendering_until_the_gpus_change():
    sim = DcgmSimulator([dcgm.SM_ACTIVE])
    sim.set_gpus(gpus(0.25))
    server = sim.serve()
    url = f"http://127.0.0.1:{server.server_port}/metrics"
    try:
        first = urllib.request.urlopen(url).read()
        second = urllib.request.urlopen(url).read()
        assert first == second == sim.render().encode()
        assert sim.scrapes == 2 and sim.renders == 1
        assert first.count(b"DCGM_FI_PROF_SM_ACTIVE{") == 6 and b" 0.25\n" in first
        sim.set_gpus(gpus(0.75))
        third = urllib.request.urlopen(url).read()
        assert sim.renders == 2 and b" 0.75\n" in third and b" 0.25\n" not in third
    finally:
        server.shutdown()
