"""Act 1, cold start: the case where the claim holds and each way it could look true while false.

Every adjacent case must give holds=False with a message that says why (the `why` column)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from assertions.cold_start import ColdStartObs, check_cold_start
from assertions.observed import Interval, PodObs
from tests.assertions.observations import SPOT_NODE, T0, check, t

GOOD_POD = PodObs(
    "vectoradd-1",
    "gpu-a",
    "Succeeded",
    Interval(t(120), t(130)),
    exit_code=0,
    output="[Vector addition of 50000 elements]\nTest PASSED\nDone",
)
COLD = ColdStartObs(T0, (), "gpu-spot", SPOT_NODE, GOOD_POD, "Test PASSED")


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "node Ready but the job's pod failed",
            replace(COLD, pod=replace(GOOD_POD, phase="Failed", exit_code=1)),
            "ended Failed",
        ),
        (
            "CUDA/driver mismatch exit 253",
            replace(COLD, pod=replace(GOOD_POD, phase="Failed", exit_code=253)),
            "253",
        ),
        (
            "succeeded without proof of GPU work",
            replace(COLD, pod=replace(GOOD_POD, output="Done")),
            "no proof",
        ),
        (
            "node existed before the act",
            replace(COLD, node=replace(SPOT_NODE, created=t(-600))),
            "before the act",
        ),
        (
            "node created the second before the act",
            replace(
                COLD, act_started=T0 + timedelta(milliseconds=65), node=replace(SPOT_NODE, created=t(-1))
            ),
            "before the act",
        ),
        (
            "on-demand where spot was claimed",
            replace(COLD, node=replace(SPOT_NODE, labels={"karpenter.sh/capacity-type": "on-demand"})),
            "not spot",
        ),
        ("stray GPU node at the start", replace(COLD, gpu_nodes_at_start=("old-gpu",)), "precondition"),
        (
            "pod ran on another node",
            replace(COLD, pod=replace(GOOD_POD, node="other")),
            "not on the new node",
        ),
        (
            "node not from our NodePool",
            replace(COLD, node=replace(SPOT_NODE, nodeclaim_nodepool="default")),
            "not owned by a NodeClaim",
        ),
        ("node without GPUs", replace(COLD, node=replace(SPOT_NODE, allocatable_gpu=0)), "no allocatable"),
        ("nothing observed", replace(COLD, node=None, pod=None), "no GPU node"),
    ],
)
def test_cold_start_adjacent_cases_fail(case, obs, why):
    check(check_cold_start(obs), False, why)


def test_cold_start_holds_and_reports_timings():
    v = check_cold_start(COLD)
    check(v, True)
    assert v.evidence["timings"] == {
        "nodeclaim_launched_s": 30,
        "node_ready_s": 90,
        "pod_running_s": 120,
        "pod_succeeded_s": 130,
    }


def test_cold_start_node_created_in_the_acts_first_second_is_new():
    """Kubernetes writes creationTimestamp in whole seconds: 12:00:00 for a node made at 12:00:00.4."""
    obs = replace(COLD, act_started=T0 + timedelta(milliseconds=65), node=replace(SPOT_NODE, created=T0))
    check(check_cold_start(obs), True)
