"""Act 5's wait for the workload to run again stops only at what the claim's check accepts: a pod Running on
the replacement and not being disrupted (acts/interruption_watch.py; the check: assertions/interruption.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from acts.interruption_watch import InterruptionWatch
from assertions.observed import Interval, NodeObs, PodObs

T0 = datetime(2026, 12, 2, 18, 2, 20, tzinfo=UTC)
OLD = NodeObs("kwok-gpu-spot-old", T0 - timedelta(minutes=2))
NEW = NodeObs("kwok-gpu-spot-new", T0 + timedelta(seconds=14), ready_at=T0 + timedelta(seconds=14))
RAN = Interval(T0 + timedelta(seconds=16), None)


def _watch(*pods: PodObs) -> InterruptionWatch:
    recorder = SimpleNamespace(seen={p.name: p for p in pods})
    return InterruptionWatch(kube=None, node=OLD, pods=recorder, replacement=NEW)  # type: ignore[arg-type]


EVICTED = PodObs("w-1", OLD.name, "Failed", Interval(T0 - timedelta(minutes=1), T0 + timedelta(seconds=3)),
                 exit_code=143, disruption="EvictionByEvictionAPI")  # fmt: skip


@pytest.mark.parametrize(
    ("pod", "again"),
    [
        (PodObs("w-2", NEW.name, "Running", RAN), True),
        # the 2026-12-02 CI run: bound before Karpenter's NoExecute taint reached the node, deleted a second later
        (
            PodObs(
                "w-2",
                NEW.name,
                "Failed",
                Interval(RAN.start, RAN.start),
                exit_code=143,
                disruption="DeletionByTaintManager",
            ),
            False,
        ),
        (PodObs("w-2", NEW.name, "Running", RAN, disruption="DeletionByTaintManager"), False),
        (PodObs("w-2", NEW.name, "Pending"), False),
        (PodObs("w-2", OLD.name, "Running", RAN), False),  # not on the replacement
    ],
    ids=["running", "failed-by-taint-manager", "running-but-being-deleted", "pending", "on-the-old-node"],
)
def test_the_wait_ends_only_at_a_pod_running_undisturbed_on_the_replacement(pod, again):
    assert _watch(EVICTED, pod).workload_running_again is again


def test_no_replacement_yet_is_not_running_again():
    w = _watch(EVICTED, PodObs("w-2", NEW.name, "Running", RAN))
    w.replacement = None
    assert w.workload_running_again is False
