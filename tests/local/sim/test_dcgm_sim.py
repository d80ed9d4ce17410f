"""The simulated exporter renders once per change and serves those bytes to every scrape."""

from __future__ import annotations

import urllib.request

from gpu_finops.facts import dcgm
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


def _series(text: str, metric: str) -> list[tuple[dict[str, str], float]]:
    out = []
    for line in text.splitlines():
        if line.startswith(metric + "{"):
            body, value = line[len(metric) + 1 :].rsplit("} ", 1)
            labels = dict(part.split("=", 1) for part in body.split(","))
            out.append(({k: v.strip('"') for k, v in labels.items()}, float(value)))
    return out


def shared_card(*, own: dict[str, float] | None = None) -> list[SimGpu]:
    """One card time-sliced between three pods (replicas 0, 2, 3), each seeing the card at 90 % VRAM."""
    values = {dcgm.SM_ACTIVE: 0.05, dcgm.GPU_UTIL: 30.0, dcgm.FB_USED: 41400.0, dcgm.FB_FREE: 4600.0}
    return [
        SimGpu(
            "n",
            0,
            "GPU-s",
            values=dict(values),
            pod=("ml", f"srv-{r}", "c"),
            vgpu=str(r),
            pod_uid=f"u{r}",
            own=dict(own or {}),
        )
        for r in (0, 2, 3)
    ]


FIELDS = [dcgm.SM_ACTIVE, dcgm.GPU_UTIL, dcgm.FB_USED, dcgm.FB_FREE]


def test_a_time_sliced_card_has_the_label_shape_of_dcgm_exporter_with_kubernetes_virtual_gpus():
    """internal/pkg/transformation/kubernetes.go at 4.6.0-4.8.3 (`Process`, `createPerProcessMetrics`):
    each field's card value copied onto every sharer's series, with `vgpu` = its replica; GPU_UTIL and
    FB_USED keep the card's own series, without pod labels, and each pod's series is its share."""
    sim = DcgmSimulator(FIELDS)
    sim.set_gpus(shared_card())
    text = sim.render()
    sm = _series(text, dcgm.SM_ACTIVE)
    assert sorted((s["pod"], s["vgpu"], s["pod_uid"], v) for s, v in sm) == [
        ("srv-0", "0", "u0", 0.05),
        ("srv-2", "2", "u2", 0.05),
        ("srv-3", "3", "u3", 0.05),
    ]
    for metric, card in ((dcgm.GPU_UTIL, 30.0), (dcgm.FB_USED, 41400.0)):
        series = _series(text, metric)
        (whole,) = [(s, v) for s, v in series if "pod" not in s]
        assert whole[1] == card and "vgpu" not in whole[0] and whole[0]["hostname"] == "n"
        shares = sorted((s["pod"], s["vgpu"], s["pod_uid"], v) for s, v in series if "pod" in s)
        assert shares == [(f"srv-{r}", str(r), f"u{r}", card / 3) for r in (0, 2, 3)]
    assert all("pod" in s for s, _ in _series(text, dcgm.FB_FREE))  # a copy per sharer, no card series


def test_a_holders_own_processes_give_its_share():
    sim = DcgmSimulator(FIELDS)
    sim.set_gpus(shared_card(own={dcgm.FB_USED: 13000.0}))
    shares = {s["pod"]: v for s, v in _series(sim.render(), dcgm.FB_USED) if "pod" in s}
    assert shares == {"srv-0": 13000.0, "srv-2": 13000.0, "srv-3": 13000.0}


def test_without_the_flag_a_card_names_its_last_sharer_only():
    """Near miss, the exporter's default (`toDeviceToPod`): one pod per device ID, the last one met."""
    sim = DcgmSimulator(FIELDS, virtual_gpus=False)
    sim.set_gpus(shared_card())
    for metric in FIELDS:
        ((labels, _),) = _series(sim.render(), metric)
        assert labels["pod"] == "srv-3" and "vgpu" not in labels


def test_a_whole_card_keeps_its_figures_and_gains_the_card_series_of_the_per_process_fields():
    sim = DcgmSimulator(FIELDS)
    sim.set_gpus(
        [SimGpu("n", 0, "GPU-w", values={dcgm.GPU_UTIL: 100.0, dcgm.SM_ACTIVE: 0.4}, pod=("ml", "t", "c"))]
    )
    text = sim.render()
    assert sorted(("pod" in s, v) for s, v in _series(text, dcgm.GPU_UTIL)) == [(False, 100.0), (True, 100.0)]
    ((labels, value),) = _series(text, dcgm.SM_ACTIVE)
    assert value == 0.4 and labels["pod"] == "t" and "vgpu" not in labels
