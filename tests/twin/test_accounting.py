"""The ledger's partition over a replay: every installed GPU-second in exactly one bucket, by the ledger's rules."""

from __future__ import annotations

import pytest

from twin.accounting import Ledger
from twin.observe import Observer, PodSeen, WorkloadSeen
from twin.readout import peak_admitted_gpus, percentile


def _observer() -> Observer:
    return Observer(None, ("a",), "run", "r1", lambda p: 0, "class", "profile")


def _node(unschedulable: bool = False, reason: str | None = None) -> dict:
    labels = {"gpu-finops.io/unschedulable-reason": reason} if reason else {}
    return {"labels": labels, "unschedulable": unschedulable, "capacity": {"nvidia.com/gpu": "8"}}


def test_each_node_splits_into_one_bucket_per_gpu() -> None:
    obs = _observer()
    obs.nodes = {"n1": _node(), "n2": _node(), "n3": _node(True, "repair-queue"), "n4": _node(True)}
    obs.pods = {
        "a/p1": PodSeen("a", "p1", "j1", 6, "training-stepping", "training-stepping", "n1", running=0.0),
        "a/p2": PodSeen("a", "p2", "j2", 2, "serving-traffic", "serving-busy", "n2", running=0.0),
        "a/p3": PodSeen("a", "p3", "j3", 8, "serving-traffic", "serving-busy", "n2", running=0.0, ended=1.0),
    }
    obs.workloads = {
        "a/w4": WorkloadSeen("a", "w4", "j4", "uid-4", 0.0, 0.0),  # waiting for 4 GPUs
        "a/w0": WorkloadSeen(
            "a", "w0", "j0", "uid-0", 0.0, 0.0
        ),  # an earlier run's, for 1: not this run's demand
    }
    obs.job_uids = {"uid-4"}
    led = Ledger(shapes={"j4": 4, "j0": 1})
    led.tick(obs, 0.0, dict.fromkeys(obs.nodes, 8))
    led.tick(obs, 10.0, dict.fromkeys(obs.nodes, 8))
    assert dict(led.gpu_seconds) == pytest.approx(
        {
            "allocated_training_stepping": 60,
            "allocated_serving_traffic": 20,
            "free_stranded": 20,  # n1's 2 free GPUs cannot hold the waiting 4-GPU job
            "free_placeable": 60,  # n2's 6 can (its ended pod holds nothing)
            "unschedulable_repair_queue": 80,
            "unschedulable_other": 80,
        }
    )
    assert sum(led.gpu_seconds.values()) == pytest.approx(led.installed_gpu_seconds) == 320
    assert led.stranded_peak == 2 and led.peak_pending == 1


def test_no_demand_strands_nothing() -> None:
    obs = _observer()
    obs.nodes = {"n1": _node()}
    obs.pods = {
        "a/p1": PodSeen("a", "p1", "j1", 7, "training-stepping", "training-stepping", "n1", running=0.0)
    }
    led = Ledger(shapes={})
    led.tick(obs, 0.0, dict.fromkeys(obs.nodes, 8))
    led.tick(obs, 1.0, dict.fromkeys(obs.nodes, 8))
    assert led.gpu_seconds["free_placeable"] == 1 and "free_stranded" not in led.gpu_seconds


def test_percentiles_and_the_peak_of_admitted_gpus() -> None:
    assert percentile([5, 1, 3, 2, 4], 50) == 3 and percentile([5, 1, 3, 2, 4], 99) == 5
    assert percentile(list(range(1, 101)), 95) == 95
    rows = [
        {"start_s": 0, "end_s": 10, "gpus": 4},
        {"start_s": 10, "end_s": 20, "gpus": 4},  # starts as the first ends: never 8 at once
        {"start_s": 5, "end_s": None, "gpus": 2},
        {"start_s": None, "end_s": None, "gpus": 8},
    ]
    assert peak_admitted_gpus(rows) == 6


def test_an_admitted_pod_that_cannot_be_placed_is_demand_too() -> None:
    obs = _observer()
    obs.nodes = {"n1": _node()}
    obs.pods = {
        "a/p1": PodSeen("a", "p1", "j1", 6, "training-stepping", "training-stepping", "n1", running=0.0),
        "a/p2": PodSeen(
            "a", "p2", "j2", 4, "training-stepping", "training-stepping", None
        ),  # admitted, no node fits
    }
    led = Ledger(shapes={})
    led.tick(obs, 0.0, dict.fromkeys(obs.nodes, 8))
    led.tick(obs, 1.0, dict.fromkeys(obs.nodes, 8))
    assert led.gpu_seconds["free_stranded"] == 2 and led.stranded_peak == 2


def test_only_the_fleets_nodes_count_and_others_are_named() -> None:
    """A GPU node another module left adds nothing to installed or
    free; a node of the fleet's Karpenter pool counts by its advertised capacity."""
    obs = _observer()
    pool = {**_node(), "labels": {"karpenter.sh/nodepool": "gpu"}}
    obs.nodes = {"twin-node-00000": _node(), "ledger-a": _node(), "karp-1": pool}
    led = Ledger(shapes={}, pools=frozenset({"gpu"}))
    led.tick(obs, 0.0, {"twin-node-00000": 8})
    led.tick(obs, 1.0, {"twin-node-00000": 8})
    assert led.installed_gpu_seconds == 16 and led.gpu_seconds["free_placeable"] == 16
    assert led.foreign_nodes == {"ledger-a"}
    static_only = Ledger(shapes={})
    static_only.tick(obs, 0.0, {"twin-node-00000": 8})
    static_only.tick(obs, 1.0, {"twin-node-00000": 8})
    assert static_only.installed_gpu_seconds == 8 and static_only.foreign_nodes == {"ledger-a", "karp-1"}
