"""The honest measure per class, as pure functions; the recording rules compute the same arithmetic
(rules/fleet_snapshot.test.yaml and rules/goodput.test.yaml check them in Prometheus)."""

from __future__ import annotations

import pytest

from gpu_finops.ledger import rules
from gpu_finops.ledger.measures import (
    DENSE_PEAKS,
    dense_peak,
    goodput,
    mfu,
    tokens_per_provisioned_gpu_hour,
    training_flops_per_step,
    warm_idle_share,
)


@pytest.mark.parametrize(
    ("name", "key", "dense_tflops"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm", 989),
        ("h100-sxm", "h100-sxm", 989),
        ("NVIDIA H200", "h200", 989),
        ("NVIDIA A100-SXM4-80GB", "a100", 312),
        ("NVIDIA A100-SXM4-40GB", "a100", 312),
        ("NVIDIA L40S", "l40s", 362.05),
        ("NVIDIA A10G", "a10g", 125),
        ("NVIDIA L4", "l4", 121),
    ],
)
def test_dense_peak_by_dcgm_model_name(name, key, dense_tflops):
    peak = dense_peak(name)
    assert (peak.key, peak.flops) == (key, dense_tflops * 1e12)
    assert peak.sparse_flops == pytest.approx(2 * peak.flops, rel=0.02), (
        "the sparse figure is the 2:4 doubling"
    )


@pytest.mark.parametrize("name", ["NVIDIA H100 PCIe", "Tesla T4", ""])
def test_unknown_models_have_no_peak_rather_than_a_guess(name):
    with pytest.raises(KeyError, match="no dense peak"):
        dense_peak(name)


def test_the_seeds_training_run():
    # 7e9 parameters at 8.39 M tokens per step: ~3.5e17 FLOPs per step; 1.8 s per step: ~1.96e17 FLOP/s
    assert training_flops_per_step(7e9, 8_388_608) == pytest.approx(3.5e17, rel=0.01)
    assert training_flops_per_step(7e9, 8_388_608) / 1.8 == pytest.approx(1.96e17, rel=0.01)
    assert mfu(7e9, 8_388_608, 1.8, 512, dense_peak("h100-sxm").flops) == pytest.approx(0.38654533198517016)


@pytest.mark.parametrize(
    ("params", "tokens", "step", "world", "model", "expected"),
    [
        (1e9, 1e6, 6.0, 1, "a100", 1e15 / 312e12),  # more than 1: a bad input, not clamped
        (70e9, 4e6, 10.0, 1024, "h200", 6 * 70e9 * 4e6 / 10.0 / (1024 * 989e12)),
        (8e9, 2e6, 4.0, 64, "l40s", 6 * 8e9 * 2e6 / 4.0 / (64 * 362.05e12)),
        (1e9, 5e5, 3.0, 8, "l4", 6 * 1e9 * 5e5 / 3.0 / (8 * 121e12)),
    ],
)
def test_mfu_table(params, tokens, step, world, model, expected):
    assert mfu(params, tokens, step, world, dense_peak(model).flops) == pytest.approx(expected)


def test_mfu_refuses_a_sparse_peak():
    with pytest.raises(ValueError, match="sparse"):
        mfu(7e9, 8_388_608, 1.8, 512, 1979e12)


@pytest.mark.parametrize("bad", [dict(step_seconds=0), dict(world_size=0), dict(peak_flops=0)])
def test_mfu_refuses_non_positive_denominators(bad):
    args = dict(parameters=7e9, tokens_per_step=1e6, step_seconds=1.0, world_size=8, peak_flops=989e12) | bad
    with pytest.raises(ValueError):
        mfu(**args)


@pytest.mark.parametrize(
    ("useful", "wall", "expected"),
    [
        (3600, 3600, 1.0),
        (2700, 3600, 0.75),  # 15 minutes of restart and recompute in an hour
        (0, 3600, 0.0),  # stuck in a collective all hour
    ],
)
def test_goodput_table(useful, wall, expected):
    assert goodput(useful, wall) == expected


def test_goodput_sees_restarts_that_mfu_does_not():
    # the source's case: 45 % MFU restarting twice a day loses more than 38 % MFU that never restarts
    per_day = 86400
    lost = 2 * 3 * 3600  # two restarts, each losing three hours since the last checkpoint plus reload
    flaky = 0.45 * goodput(per_day - lost, per_day)
    steady = 0.38 * goodput(per_day, per_day)
    assert flaky < steady


@pytest.mark.parametrize(("useful", "wall"), [(10, 0), (-1, 10), (11, 10)])
def test_goodput_refuses_impossible_inputs(useful, wall):
    with pytest.raises(ValueError):
        goodput(useful, wall)


def test_tokens_per_provisioned_gpu_hour_counts_headroom():
    # 180,000 tokens an hour on 3 traffic GPUs plus 2 warm headroom GPUs
    assert tokens_per_provisioned_gpu_hour(180_000, 5) == 36_000
    assert tokens_per_provisioned_gpu_hour(180_000, 3) == 60_000  # the flattering busy-hours figure
    with pytest.raises(ValueError):
        tokens_per_provisioned_gpu_hour(1, 0)


@pytest.mark.parametrize(("idle", "provisioned", "expected"), [(3, 5, 0.6), (0, 5, 0.0), (5, 5, 1.0)])
def test_warm_idle_share_table(idle, provisioned, expected):
    assert warm_idle_share(idle, provisioned) == expected


def test_warm_idle_share_refuses_impossible_inputs():
    with pytest.raises(ValueError):
        warm_idle_share(6, 5)
    with pytest.raises(ValueError):
        warm_idle_share(1, 0)


def test_the_rules_carry_the_same_dense_peaks():
    recorded = rules.load()["groups"][0]["rules"]
    peaks = {
        r["labels"]["gpu_model"]: float(r["expr"].removeprefix("vector(").removesuffix(")"))
        for r in recorded
        if r["record"] == "gpu_model:dense_bf16_peak_flops:max"
    }
    assert peaks == {p.key: p.flops for p in DENSE_PEAKS}
