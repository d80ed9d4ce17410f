"""Acts 1's, 3's and 7's surviving mutants from the first mutation run over assertions/ (docs/claims.md,
mutation section): each row asserts the exact clause and what it says, at the edge the mutant moved."""

from __future__ import annotations

from dataclasses import replace

from assertions.clauses import Miss
from assertions.cold_start import (
    claim_came_before_its_node,
    node_is_new_and_launched_by_our_nodeclaim,
    node_is_spot_with_a_gpu,
    pod_ran_on_that_node_after_it_was_ready,
)
from tests.assertions.tables import t
from tests.assertions.test_cold_start import COLD, SPOT_NODE


# --- act 1: cold start ----------------------------------------------------------------------------------
def test_no_node_is_named_under_the_new_node_claim():
    assert node_is_new_and_launched_by_our_nodeclaim(replace(COLD, node=None)) == [
        Miss(
            "a node created after 2026-11-30T12:00:00+00:00 by a new NodeClaim of NodePool gpu-spot",
            "no GPU node was observed for the job",
        )
    ]


def test_a_claim_launched_before_it_was_created_names_both_stamps():
    assert claim_came_before_its_node(replace(SPOT_NODE, nodeclaim_launched_at=t(20)), "w") == [
        Miss(
            "w",
            "NodeClaim gpu-spot-x1 Launched 2026-11-30T12:00:20+00:00 before it was created "
            "2026-11-30T12:00:25+00:00: the timestamps contradict each other",
        )
    ]


def test_more_allocatable_gpus_than_capacity_is_named():
    assert node_is_spot_with_a_gpu(replace(COLD, node=replace(SPOT_NODE, allocatable_gpu=2))) == [
        Miss(
            "allocatable nvidia.com/gpu <= capacity",
            "node gpu-a has 2 allocatable nvidia.com/gpu but a capacity of 1: the GPU count contradicts itself",
        )
    ]


def test_a_pod_started_after_its_node_was_deleted_ran_on_another_node_of_that_name():
    o = replace(COLD, node=replace(SPOT_NODE, deleted_at=t(100)))
    assert pod_ran_on_that_node_after_it_was_ready(o) == [
        Miss(
            "the pod Running on gpu-a once it was Ready",
            "node gpu-a was deleted 2026-11-30T12:01:40+00:00, before pod vectoradd-1 started "
            "2026-11-30T12:02:00+00:00: the pod ran on another node of that name",
        )
    ]
