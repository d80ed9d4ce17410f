"""benchmarks/scaleout.py's readings of what Karpenter did: NodeClaim batches from creation times, and the
provisioner's passes and busy seconds from its /metrics text."""

from __future__ import annotations

import pytest

from benchmarks.scaleout import batches, karpenter_scheduling

RECONCILE = (
    "# HELP controller_runtime_reconcile_time_seconds Length of time per reconciliation per controller\n"
    "# TYPE controller_runtime_reconcile_time_seconds histogram\n"
    'controller_runtime_reconcile_time_seconds_sum{controller="provisioner"} 775.5\n'
    'controller_runtime_reconcile_time_seconds_count{controller="provisioner"} 12\n'
    'controller_runtime_reconcile_time_seconds_sum{controller="nodeclaim.lifecycle"} 9999\n'
    'controller_runtime_reconcile_time_seconds_count{controller="nodeclaim.lifecycle"} 99\n'
)
SCHEDULING = (
    "# HELP karpenter_scheduler_scheduling_duration_seconds Duration of scheduling simulations\n"
    "# TYPE karpenter_scheduler_scheduling_duration_seconds histogram\n"
    'karpenter_scheduler_scheduling_duration_seconds_sum{controller="provisioner"} 326.25\n'
    'karpenter_scheduler_scheduling_duration_seconds_count{controller="provisioner"} 40\n'
    'karpenter_scheduler_scheduling_duration_seconds_sum{controller="disruption"} 5\n'
    'karpenter_scheduler_scheduling_duration_seconds_count{controller="disruption"} 7\n'
)


def test_batches_split_where_creations_are_more_than_the_gap_apart() -> None:
    assert batches([]) == []
    assert batches([10.0, 10.0, 11.0, 14.0, 15.5, 30.0]) == [3, 2, 1]


def test_the_provisioners_passes_and_busy_seconds_not_another_controllers() -> None:
    assert karpenter_scheduling(RECONCILE + SCHEDULING) == (40, 326.25, 775.5)


def test_no_pass_yet_is_zero_passes_only_when_read_before_the_scale_out() -> None:
    assert karpenter_scheduling(RECONCILE, before_any_pass=True) == (0, 0.0, 775.5)
    with pytest.raises(ValueError, match=r"lacks the provisioner's \['count', 'sum'\]"):
        karpenter_scheduling(RECONCILE)
    with pytest.raises(ValueError, match=r"lacks the provisioner's \['reconcile'\]"):
        karpenter_scheduling(SCHEDULING, before_any_pass=True)
