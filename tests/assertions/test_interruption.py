"""Act 5's checker: the holding case, and each way a spot interruption could look handled while it was not."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from assertions.interruption import InterruptionObs, check_interruption
from assertions.observed import EventObs, Interval, NodeObs, PodObs

T0 = datetime(2026, 11, 30, 12, 0, 0, 400000, tzinfo=UTC)


def t(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


SPOT = {"karpenter.sh/capacity-type": "spot", "karpenter.sh/nodepool": "gpu-spot"}
NODE = NodeObs(
    "gpu-int",
    t(-300),
    SPOT,
    allocatable_gpu=1,
    capacity_gpu=1,
    ready_at=t(-250),
    nodeclaim="gpu-spot-int",
    nodeclaim_nodepool="gpu-spot",
    uid="uid-int",
)
NEW = NodeObs(
    "gpu-new",
    t(20),
    SPOT,
    allocatable_gpu=1,
    capacity_gpu=1,
    ready_at=t(40),
    nodeclaim="gpu-spot-new",
    nodeclaim_nodepool="gpu-spot",
    nodeclaim_created=t(5),
    nodeclaim_launched_at=t(8),
    uid="uid-new",
)
VICTIM = PodObs(
    "w-1", "gpu-int", "Failed", Interval(t(-200), t(12)), evicted=True, disruption="EvictionByEvictionAPI"
)
AGAIN = PodObs("w-2", "gpu-new", "Running", Interval(t(45)))
HOLDS = InterruptionObs(
    warned_at=t(0),
    delivery="sqs",
    delivery_state="delivered",
    node=NODE,
    nodepool="gpu-spot",
    events=(
        EventObs("SpotInterrupted", "NodeClaim", "gpu-spot-int", t(0).replace(microsecond=0)),
        EventObs("TerminatingOnInterruption", "Node", "gpu-int", t(1)),
    ),
    taint_seen_at=t(3),
    nodeclaim_deleted_at=t(2),
    pods=(VICTIM, AGAIN),
    replacement=NEW,
    observed_at=t(600),
)


def check(verdict, holds: bool, why: str | None = None) -> None:
    assert verdict.holds is holds, verdict.render()
    if why is not None:
        assert why in verdict.observed, f"expected {why!r} in: {verdict.observed}"


def test_holds_and_reports_the_seconds_from_warning_to_cordon_and_replacement():
    v = check_interruption(HOLDS)
    check(v, True)
    assert v.evidence["timings"]["warning_to_cordon_s"] == 3
    assert v.evidence["timings"]["warning_to_replacement_ready_s"] == 40
    assert v.evidence["timings"]["warning_to_workload_running_s"] == 45
    assert v.evidence["victims"] == {"w-1": "EvictionByEvictionAPI"}


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "node went away with no interruption event (a hard kill, or some other disruption)",
            replace(HOLDS, events=()),
            "no SpotInterrupted event on node gpu-int or NodeClaim gpu-spot-int after the warning",
        ),
        (
            "only SpotInterrupted: Karpenter saw it but did not terminate through the queue",
            replace(HOLDS, events=HOLDS.events[:1]),
            "no TerminatingOnInterruption event",
        ),
        (
            "events from an earlier interruption",
            replace(HOLDS, events=tuple(replace(e, at=t(-60)) for e in HOLDS.events)),
            "no SpotInterrupted event",
        ),
        ("never cordoned", replace(HOLDS, taint_seen_at=None), "never observed on gpu-int"),
        ("cordoned before the warning", replace(HOLDS, taint_seen_at=t(-30)), "30s before the warning"),
        (
            "cordoned after the notice ran out",
            replace(HOLDS, taint_seen_at=t(150)),
            "cordoned 150s after the warning, past the 120s notice",
        ),
        ("NodeClaim never deleted", replace(HOLDS, nodeclaim_deleted_at=None), "was never deleted"),
        (
            "not a Karpenter node",
            replace(HOLDS, node=replace(NODE, nodeclaim=None, nodeclaim_nodepool=None)),
            "had no NodeClaim",
        ),
        (
            "the pod was deleted by PodGC after the node vanished",
            replace(HOLDS, pods=(replace(VICTIM, disruption="DeletionByPodGC"), AGAIN)),
            "deleted by PodGC after its node vanished",
        ),
        (
            "the pod died without a DisruptionTarget",
            replace(HOLDS, pods=(replace(VICTIM, disruption=None, evicted=False), AGAIN)),
            "without a DisruptionTarget condition: killed, not evicted",
        ),
        (
            "the pod was disrupted by the taint manager",
            replace(HOLDS, pods=(replace(VICTIM, disruption="DeletionByTaintManager"), AGAIN)),
            "disrupted by DeletionByTaintManager",
        ),
        ("nothing ran on the node", replace(HOLDS, pods=(AGAIN,)), "nothing to drain"),
        ("no replacement node", replace(HOLDS, replacement=None), "no replacement GPU node"),
        (
            "the replacement's NodeClaim Launched before it was created",
            replace(HOLDS, replacement=replace(NEW, nodeclaim_launched_at=t(2))),
            "NodeClaim gpu-spot-new Launched 2026-11-30T12:00:02.400000+00:00 before it was created "
            "2026-11-30T12:00:05.400000+00:00: the timestamps contradict each other",
        ),
        (
            "the replacement's NodeClaim never Launched",
            replace(HOLDS, replacement=replace(NEW, nodeclaim_launched_at=None)),
            "NodeClaim gpu-spot-new never reported Launched",
        ),
        (
            "the replacement node was created before its NodeClaim (adopted, not launched)",
            replace(HOLDS, replacement=replace(NEW, nodeclaim_created=t(25), nodeclaim_launched_at=t(26))),
            "node gpu-new was created 2026-11-30T12:00:20.400000+00:00, before its NodeClaim gpu-spot-new "
            "2026-11-30T12:00:25.400000+00:00: adopted, not launched by that claim",
        ),
        (
            "the replacement was Ready before its NodeClaim Launched",
            replace(HOLDS, replacement=replace(NEW, nodeclaim_launched_at=t(45))),
            "node gpu-new was Ready 2026-11-30T12:00:40.400000+00:00 before its NodeClaim gpu-spot-new Launched "
            "2026-11-30T12:00:45.400000+00:00: not the node that claim launched",
        ),
        (
            "a node that existed before is called the replacement",
            replace(HOLDS, replacement=replace(NEW, created=t(-100))),
            "existed before the warning",
        ),
        (
            "the replacement is on-demand (spot launch failed, e.g. no spot service-linked role)",
            replace(
                HOLDS, replacement=replace(NEW, labels={**SPOT, "karpenter.sh/capacity-type": "on-demand"})
            ),
            "karpenter.sh/capacity-type=on-demand, not spot",
        ),
        (
            "the replacement is of another NodePool",
            replace(
                HOLDS,
                replacement=replace(
                    NEW, labels={**SPOT, "karpenter.sh/nodepool": "system"}, nodeclaim_nodepool="system"
                ),
            ),
            "of NodePool system, not gpu-spot",
        ),
        (
            "the replacement has no GPU",
            replace(HOLDS, replacement=replace(NEW, allocatable_gpu=0, capacity_gpu=0)),
            "advertises no GPU",
        ),
        (
            "the replacement never Ready",
            replace(HOLDS, replacement=replace(NEW, ready_at=None)),
            "never became Ready",
        ),
        (
            "the workload did not run again",
            replace(HOLDS, pods=(VICTIM,)),
            "the workload never ran again on the replacement gpu-new",
        ),
        (
            "the FIS experiment failed",
            replace(
                HOLDS,
                delivery="fis",
                delivery_state="failed",
                delivery_reason="Target resolution returned empty set",
            ),
            "the FIS experiment ended 'failed': Target resolution returned empty set",
        ),
    ],
)
def test_each_near_miss_fails_for_its_reason(case, obs, why):
    check(check_interruption(obs), False, why)


def test_a_completed_fis_experiment_holds():
    check(check_interruption(replace(HOLDS, delivery="fis", delivery_state="completed")), True)


def test_the_interrupted_node_under_its_old_name_is_no_replacement():
    """A look-alike replacement: the 'replacement' is the interrupted node itself, and the only pod seen is the evicted one."""
    v = check_interruption(
        replace(HOLDS, replacement=replace(NODE, created=t(5), ready_at=t(6)), pods=(VICTIM,))
    )
    check(v, False, "'replacement' gpu-int (uid uid-int, NodeClaim gpu-spot-int) is not another node")
    assert v.failed_clauses == (
        "replacement_is_a_new_spot_node_of_ours",
        "workload_ran_again_on_the_replacement",
    )
