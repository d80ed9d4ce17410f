"""Clause parts every act that runs pods through Kueue shares: a Workload observed as one object, and a pod that
ran only while its Workload was admitted."""

from __future__ import annotations

from assertions.clauses import Miss, before, stamp
from assertions.observed import PodObs, WorkloadObs
from gpu_finops.model import workload
from gpu_finops.model.workload import ADMITTED


def one_object(want: str, w: WorkloadObs) -> list[Miss]:
    """One metadata.uid over every snapshot: else deleted and re-created, or its uid never observed."""
    if len(w.uids) == 1 and w.uids[0] is not None:
        return []
    return [
        Miss(
            want,
            f"workload {w.name} was seen with uids {list(w.uids)}: deleted and re-created (or its uid not "
            "observed), so what was admitted is not one object",
        )
    ]


def ran_only_while_admitted(want: str, w: WorkloadObs, pod: PodObs) -> list[Miss]:
    """The pod started after its Workload's admission, inside a stretch it was admitted (not while evicted
    between two), and no look taken while it ran shows the Workload evicted or otherwise not admitted."""
    at = w.since(ADMITTED)
    if pod.running is None or at is None:
        return []
    if before(pod.running.start, at):
        return [
            Miss(
                want,
                f"pod {pod.name} was Running at {stamp(pod.running.start)}, before its Workload "
                f"{w.name} was admitted at {stamp(at)}: Kueue did not gate it",
            )
        ]
    return [
        Miss(want, f"{v.observed}: Kueue did not gate it")
        for v in workload.ran_only_while_admitted(w.snapshots, [(pod.name, pod.running.start)])
    ] + [
        Miss(want, f"{v.observed}: it ran on after its quota was taken back")
        for v in workload.admitted_while_running(
            w.snapshots, [(pod.name, pod.running.start, pod.running.end)]
        )
    ]
