"""Named expectations for the acts' waits, on top of harness/waits.py.

Each expectation is a predicate over what an observer returns, with the words a timed-out wait prints:
`eventually_expect(rec.observe, all_finished(4), timeout=...)` reads as the claim, and its WaitTimeout
says "4 pods finished" with the last observation. No anonymous multi-line lambdas in the acts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from assertions.observed import PodObs, WorkloadObs
from gpu_finops.model.workload import ADMITTED
from harness.waits import consistently, eventually

T = TypeVar("T")


@dataclass(frozen=True)
class Expectation(Generic[T]):
    """A predicate with its description: what the wait waits for, in words."""

    what: str
    check: Callable[[T], bool]

    def __call__(self, observed: T) -> bool:
        return bool(self.check(observed))


def eventually_expect(
    observe: Callable[[], T], expectation: Expectation[T], *, timeout: float, interval: float = 1.0
) -> T:
    """The observation once `expectation` holds; WaitTimeout (with the last observation) after `timeout`."""
    return eventually(observe, expectation, timeout=timeout, what=expectation.what, interval=interval)


def consistently_expect(
    observe: Callable[[], T], expectation: Expectation[T], *, duration: float, interval: float = 1.0
) -> list[T]:
    """Every observation over `duration`, each of which must meet `expectation`."""
    return consistently(observe, expectation, duration=duration, what=expectation.what, interval=interval)


# --- nodes ----------------------------------------------------------------------------------------------
no_gpu_nodes: Expectation[Sequence[str]] = Expectation("zero GPU nodes", lambda names: not names)


# --- pods -----------------------------------------------------------------------------------------------
def _finished(p: PodObs) -> bool:
    return p.phase in ("Succeeded", "Failed")


one_finished: Expectation[Sequence[PodObs]] = Expectation(
    "a pod of the job finished (Succeeded or Failed)", lambda pods: any(_finished(p) for p in pods)
)
running_on_a_node: Expectation[Sequence[PodObs]] = Expectation(
    "a pod of the job Running on a node", lambda pods: any(p.running is not None and p.node for p in pods)
)
the_one_pod_running: Expectation[Sequence[PodObs]] = Expectation(
    "the job's one pod Running", lambda pods: len(pods) == 1 and pods[0].running is not None
)


# --- Kueue Workloads and their pods ---------------------------------------------------------------------
def admitted_by_kueue(w: WorkloadObs | None) -> bool:
    """The Workload was Admitted in some snapshot."""
    return w is not None and any(s.is_(ADMITTED) for s in w.snapshots)


def has_a_running_pod(w: WorkloadObs | None) -> bool:
    return w is not None and any(p.running is not None for p in w.pods)


def _running_with_a_device(w: WorkloadObs) -> bool:
    return any(p.running is not None and p.devices for p in w.pods)


def admitted_and_running(w: WorkloadObs | None) -> bool:
    """Admitted by Kueue and a pod of it Running."""
    return admitted_by_kueue(w) and has_a_running_pod(w)


def workloads_with_running_devices(total: int, running: int) -> Expectation[Sequence[WorkloadObs]]:
    """`total` Workloads visible, `running` of them with a Running pod whose GPU device was read."""
    return Expectation(
        f"{total} workloads, {running} of them with a Running pod and its GPU device",
        lambda ws: len(ws) == total and sum(1 for w in ws if _running_with_a_device(w)) >= running,
    )


def all_visible(total: int) -> Expectation[Sequence[WorkloadObs]]:
    return Expectation(f"{total} workloads visible", lambda ws: len(ws) == total)


bound_to_a_node: Expectation[Sequence[WorkloadObs]] = Expectation(
    "a pod of the act bound to a node", lambda ws: any(p.node for w in ws for p in w.pods)
)


def _finished_undisrupted(w: WorkloadObs) -> bool:
    """A pod of the Workload was never disrupted, and every such pod finished (a disrupted one is replaced)."""
    kept = [p for p in w.pods if p.disruption is None]
    return bool(kept) and all(_finished(p) for p in kept)


def all_finished(total: int) -> Expectation[Sequence[WorkloadObs]]:
    """`total` Workloads, each with its undisrupted pods finished."""
    return Expectation(
        f"{total} pods finished", lambda ws: len(ws) == total and all(_finished_undisrupted(w) for w in ws)
    )


# --- anything with a count ------------------------------------------------------------------------------
def at_least(n: int, what: str) -> Expectation[Sequence[Any]]:
    return Expectation(f"{n} {what}", lambda items: len(items) >= n)
