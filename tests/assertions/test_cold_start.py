"""Act 1's checker: the holding case and each way a cold start could look done while it was not."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from assertions.cold_start import ColdStartObs, check_cold_start
from assertions.observed import Interval, NodeObs, PodObs
from tests.assertions.tables import T0, check, t

# --- act 1: cold start -----------------------------------------------------------------------------------
SPOT_NODE = NodeObs(
    "gpu-a",
    created=t(40),
    labels={"karpenter.sh/capacity-type": "spot", "karpenter.sh/nodepool": "gpu-spot"},
    allocatable_gpu=1,
    capacity_gpu=1,
    ready_at=t(90),
    nodeclaim="gpu-spot-x1",
    nodeclaim_nodepool="gpu-spot",
    nodeclaim_launched_at=t(30),
    nodeclaim_created=t(25),
)
GOOD_POD = PodObs(
    "vectoradd-1",
    "gpu-a",
    "Succeeded",
    Interval(t(120), t(130)),
    exit_code=0,
    output="[Vector addition of 50000 elements]\nTest PASSED\nDone",
    devices=("GPU-8a1f3c2d-0b4e-4f6a-9c7d-2e5b1a0f9d3c",),
)
COLD = ColdStartObs(T0, (), "gpu-spot", SPOT_NODE, GOOD_POD, "Test PASSED", observed_at=t(600))


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
            replace(
                COLD,
                node=replace(
                    SPOT_NODE,
                    nodeclaim_nodepool="default",
                    labels={**SPOT_NODE.labels, "karpenter.sh/nodepool": "default"},
                ),
            ),
            "not owned by a NodeClaim",
        ),
        ("node without GPUs", replace(COLD, node=replace(SPOT_NODE, allocatable_gpu=0)), "no allocatable"),
        (
            "a fresh Node object on an old NodeClaim (the node re-registered; nothing was launched)",
            replace(COLD, node=replace(SPOT_NODE, nodeclaim_created=t(-600))),
            "NodeClaim gpu-spot-x1 was created 2026-11-30T11:50:00+00:00, before the act began",
        ),
        (
            "NodeClaim never Launched",
            replace(COLD, node=replace(SPOT_NODE, nodeclaim_launched_at=None)),
            "NodeClaim gpu-spot-x1 never reported Launched",
        ),
        (
            "pod Running before its node was Ready",
            replace(COLD, pod=replace(GOOD_POD, running=Interval(t(80), t(130)))),
            "before its node gpu-a was Ready at 2026-11-30T12:01:30+00:00: the timestamps contradict",
        ),
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


def test_pod_started_in_the_same_second_as_ready_is_consistent():
    obs = replace(
        COLD,
        pod=replace(GOOD_POD, running=Interval(t(90.7), t(130))),
        node=replace(SPOT_NODE, ready_at=t(90.2)),
    )
    check(check_cold_start(obs), True)


def test_cold_start_node_created_in_the_acts_first_second_is_new():
    """Kubernetes writes creationTimestamp in whole seconds: 12:00:00 for a node made at 12:00:00.4."""
    obs = replace(
        COLD,
        act_started=T0 + timedelta(milliseconds=65),
        node=replace(SPOT_NODE, created=T0, nodeclaim_created=T0),
    )
    check(check_cold_start(obs), True)


def test_where_the_target_shows_no_output_the_claim_names_the_card_as_the_proof_not_a_none_marker():
    v = check_cold_start(replace(COLD, success_marker=None, pod=replace(GOOD_POD, output=None)))
    assert v.holds, v.render()
    assert v.expected.endswith(
        "Succeeded on one whole card, the card the kubelet gave it (the target shows no workload output)"
    )
    assert "None" not in v.expected


def test_a_node_before_its_claims_launch_is_the_kwok_providers_order_but_not_an_ec2_instances():
    """Karpenter's kwok provider creates the node inside Create, before Launched is written: that holds. An
    EC2 instance (an instance id in its providerID) registers only after the launch: before it is refused."""
    early = replace(SPOT_NODE, nodeclaim_launched_at=SPOT_NODE.created + timedelta(seconds=5))
    assert check_cold_start(replace(COLD, node=early)).holds
    v = check_cold_start(replace(COLD, node=replace(early, instance_id="i-0abc")))
    assert v.failed_clauses == ("node_is_new_and_launched_by_our_nodeclaim",), v.render()
    assert (
        "registered 2026-11-30T12:00:40+00:00, before its NodeClaim gpu-spot-x1 Launched 2026-11-30T12:00:45"
        in v.observed
    )
