"""The simulator's ledger behaviours (power and clock per workload) against the ledger's own thresholds,
and the workload metrics simulated pods export for the per-class measures (docs/ledger.md)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from gpu_finops.facts import dcgm
from gpu_finops.ledger.conventions import Conventions
from local.sim.dcgm_sim import DcgmSimulator
from local.sim.gpu_sim import gpus_from_cluster
from local.sim.profiles import (
    LEDGER_BEHAVIOURS,
    SERVING_BUSY,
    SERVING_IDLE,
    TRAINING_STALLED,
    TRAINING_STEPPING,
    UNHELD,
    profile_values,
)
from local.sim.workload_sim import WorkloadSimulator

C = Conventions()


def judged(values: dict[str, float]) -> tuple[bool, bool]:
    """(busy by the metric, live by physics), as the ledger's rules judge one GPU."""
    busy = values[dcgm.GPU_UTIL] > C.busy_util_percent
    live = values[dcgm.POWER_USAGE] > C.live_power_watts and values[dcgm.SM_CLOCK] > C.live_sm_clock_mhz
    return busy, live


@pytest.mark.parametrize(
    ("behaviour", "busy", "live"),
    [
        (TRAINING_STEPPING, True, True),
        (TRAINING_STALLED, True, False),  # busy by the metric, idle by physics
        (SERVING_IDLE, False, False),
        (SERVING_BUSY, True, True),
        (UNHELD, False, False),
    ],
)
def test_each_behaviour_reads_as_named_against_the_ledgers_floors(behaviour, busy, live):
    assert judged(profile_values(behaviour)) == (busy, live)


def test_the_stalled_rank_is_idle_by_both_physics_readings_not_just_one():
    v = profile_values(TRAINING_STALLED)
    assert v[dcgm.POWER_USAGE] <= C.live_power_watts and v[dcgm.SM_CLOCK] <= C.live_sm_clock_mhz
    assert v[dcgm.GPU_UTIL] == 100.0


def node(name: str, cards: int) -> NS:
    return NS(
        metadata=NS(name=name, labels={"nvidia.com/gpu.count": str(cards)}),
        status=NS(capacity={"nvidia.com/gpu": str(cards)}),
    )


def pod(name: str, on: str, ann: dict[str, str], gpus: int = 1, phase: str = "Running", ns: str = "ml") -> NS:
    return NS(
        metadata=NS(namespace=ns, name=name, annotations=ann),
        spec=NS(node_name=on, containers=[NS(name="c", resources=NS(limits={"nvidia.com/gpu": str(gpus)}))]),
        status=NS(phase=phase),
    )


def test_each_behaviour_drives_power_and_clock_of_the_card_its_pod_holds():
    pods = [pod(b, "n1", {"gpu-finops.io/gpu-profile": b}) for b in LEDGER_BEHAVIOURS]
    gpus = gpus_from_cluster([node("n1", 4)], pods)
    by_pod = {g.pod[1]: g.values for g in gpus}
    assert set(by_pod) == set(LEDGER_BEHAVIOURS)
    for b in LEDGER_BEHAVIOURS:
        assert by_pod[b][dcgm.POWER_USAGE] == profile_values(b)[dcgm.POWER_USAGE]
        assert by_pod[b][dcgm.SM_CLOCK] == profile_values(b)[dcgm.SM_CLOCK]


RUN = {
    "gpu-finops.io/training-run": "r1",
    "gpu-finops.io/model-parameters": "7e9",
    "gpu-finops.io/tokens-per-step": "4096",
    "gpu-finops.io/step-seconds": "2.5",
}


def series(text: str) -> dict[str, float]:
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line[:1] != "#"
    }


def test_a_run_counts_useful_seconds_only_while_every_rank_is_stepping():
    sim = WorkloadSimulator()
    stepping = {**RUN, "gpu-finops.io/gpu-profile": TRAINING_STEPPING}
    ranks = [pod("r1-0", "n1", stepping, gpus=2), pod("r1-1", "n2", stepping, gpus=2)]
    sim.update(ranks, now=100.0)
    out = series(sim.update(ranks, now=110.0))
    assert out['training_useful_seconds_total{run="r1"}'] == 10.0
    assert out['training_world_size{run="r1",gpu_model="l40s"}'] == 4.0
    assert out['training_model_parameters{run="r1"}'] == 7e9
    assert out['training_tokens_per_step{run="r1"}'] == 4096.0
    assert out['training_step_seconds{run="r1"}'] == 2.5
    # one rank stalls in a collective: wall clock runs on, useful time does not
    ranks[1] = pod("r1-1", "n2", {**RUN, "gpu-finops.io/gpu-profile": TRAINING_STALLED}, gpus=2)
    out = series(sim.update(ranks, now=130.0))
    assert out['training_useful_seconds_total{run="r1"}'] == 10.0
    # the restarted rank is Pending: the run is down to 2 GPUs, and steps again
    ranks[1] = pod("r1-1", "", stepping, gpus=2, phase="Pending")
    out = series(sim.update(ranks, now=135.0))
    assert out['training_useful_seconds_total{run="r1"}'] == 15.0
    assert out['training_world_size{run="r1",gpu_model="l40s"}'] == 2.0


def test_serving_tokens_grow_only_while_busy_and_leave_with_the_pod():
    sim = WorkloadSimulator()
    model = {"gpu-finops.io/serving-model": "m1", "gpu-finops.io/tokens-per-second": "120"}
    busy = pod("s1", "n1", {**model, "gpu-finops.io/gpu-profile": SERVING_BUSY}, ns="web")
    idle = pod("s2", "n1", {**model, "gpu-finops.io/gpu-profile": SERVING_IDLE}, ns="web")
    sim.update([busy, idle], now=0.0)
    out = series(sim.update([busy, idle], now=5.0))
    assert out['serving_tokens_total{model="m1",namespace="web",pod="s1"}'] == 600.0
    assert out['serving_tokens_total{model="m1",namespace="web",pod="s2"}'] == 0.0
    out = series(sim.update([idle], now=6.0))
    assert 'serving_tokens_total{model="m1",namespace="web",pod="s1"}' not in out


def test_a_non_numeric_annotation_drops_that_series_only():
    sim = WorkloadSimulator()
    bad = pod(
        "r1-0",
        "n1",
        {**RUN, "gpu-finops.io/step-seconds": "fast", "gpu-finops.io/gpu-profile": TRAINING_STEPPING},
    )
    out = series(sim.update([bad], now=0.0))
    assert 'training_step_seconds{run="r1"}' not in out
    assert out['training_model_parameters{run="r1"}'] == 7e9


def test_pods_without_workload_annotations_export_nothing_and_the_dcgm_exposition_carries_the_rest():
    assert WorkloadSimulator().update([pod("plain", "n1", {})], now=0.0) == ""
    sim = DcgmSimulator([dcgm.GPU_UTIL])
    sim.set_gpus(gpus_from_cluster([node("n1", 1)], []), extra='serving_tokens_total{model="m"} 1.0\n')
    body = sim.exposition().decode()
    assert body.startswith("# HELP DCGM_FI_DEV_GPU_UTIL") and body.endswith(
        'serving_tokens_total{model="m"} 1.0\n'
    )
