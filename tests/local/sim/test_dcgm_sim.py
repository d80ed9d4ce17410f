"""The simulated exporter renders once per change and serves those bytes to every scrape."""

from __future__ import annotations

import urllib.request

from facts import dcgm
from local.sim.dcgm_sim import DcgmSimulator, SimGpu


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


def test_the_node_label_is_spelled_as_the_pinned_exporter_spells_it_unless_asked_otherwise():
    sim = DcgmSimulator([dcgm.SM_ACTIVE])
    pinned = SimGpu("n-new", 0, "GPU-new-0", values={dcgm.SM_ACTIVE: 0.5})
    old = SimGpu("n-old", 0, "GPU-old-0", values={dcgm.SM_ACTIVE: 0.5}, hostname_label="Hostname")
    nameless = SimGpu("n-none", 0, "GPU-none-0", values={dcgm.SM_ACTIVE: 0.5}, hostname_label="")
    sim.set_gpus([pinned, old, nameless])
    lines = sim.render().splitlines()
    (new_line,) = [line for line in lines if "GPU-new-0" in line]
    (old_line,) = [line for line in lines if "GPU-old-0" in line]
    (none_line,) = [line for line in lines if "GPU-none-0" in line]
    # dcgm-exporter 4.8.3 (pinned) spells it `hostname`; before 4.8.3 `Hostname`; a misconfigured one, none
    assert 'hostname="n-new"' in new_line and "Hostname" not in new_line
    assert 'Hostname="n-old"' in old_line and 'hostname="' not in old_line
    assert "n-none" not in none_line and "ostname" not in none_line
    # an unheld card carries no pod labels, as the real exporter's
    assert "pod=" not in new_line and "namespace=" not in new_line
