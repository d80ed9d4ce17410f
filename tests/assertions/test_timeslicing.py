"""Act 4's checker: the holding case and each way time-slicing could look proven while it was not."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assertions.observed import Interval, NodeObs, PodObs, WorkloadObs, WorkloadSnapshot
from assertions.timeslicing import TimeSlicingObs, check_timeslicing
from tests.assertions.tables import admitted_snap, check, cond, t

TS_NODE = NodeObs(
    "gpu-ts",
    t(0),
    {
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "karpenter.sh/nodepool": "gpu-shared",
    },
    capacity_shared=4,
    allocatable_shared=4,
    ready_at=t(2),
)
TS_PODS = tuple(
    PodObs(
        f"ts-{i}",
        "gpu-ts",
        "Succeeded",
        Interval(t(10 + i), t(50 + i)),
        exit_code=0,
        devices=(f"GPU-1111::{i}",),
    )
    for i in range(4)
)
TS_WLS = tuple(
    WorkloadObs(
        f"job-ts-{i}",
        "team-a",
        snapshots=(
            admitted_snap(
                5,
                flavors=("gpu-shared",),
                uid=f"uid-ts-{i}",
                admitted=(("nvidia.com/gpu.shared", "gpu-shared"),),
            ),
        ),
        pods=(TS_PODS[i],),
    )
    for i in range(4)
)
TS = TimeSlicingObs(TS_NODE, TS_PODS, TS_WLS, observed_at=t(60), nodepool="gpu-shared", tenant="team-a")


def pods(*changed: PodObs) -> tuple[PodObs, ...]:
    return (*TS_PODS[: 4 - len(changed)], *changed)


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "capacity 4 but the pods ran on two cards",
            replace(TS, pods=pods(replace(TS_PODS[3], devices=("GPU-2222::0",)))),
            "pods ran on 2 GPU UUIDs ['GPU-1111', 'GPU-2222']: not one GPU shared",
        ),
        (
            "one replica handed to two pods",
            replace(TS, pods=pods(replace(TS_PODS[3], devices=("GPU-1111::0",)))),
            "one replica was handed to two pods",
        ),
        (
            "pods on different nodes",
            replace(TS, pods=pods(replace(TS_PODS[3], node="gpu-other"))),
            "pods not on gpu-ts: ['ts-3 on gpu-other']",
        ),
        (
            "four physical GPUs, not time-slicing",
            replace(
                TS,
                node=replace(TS_NODE, labels={"nvidia.com/gpu.count": "4", "nvidia.com/gpu.replicas": "1"}),
            ),
            "node gpu-ts has 4 physical GPUs (GFD nvidia.com/gpu.count), expected 1",
        ),
        (
            "one replica per card (time-slicing off)",
            replace(
                TS,
                node=replace(
                    TS_NODE,
                    labels={
                        **TS_NODE.labels,
                        "nvidia.com/gpu.replicas": "1",
                        "nvidia.com/gpu.sharing-strategy": "none",
                    },
                    capacity_shared=1,
                    allocatable_shared=1,
                ),
            ),
            "nvidia.com/gpu.shared capacity is 1, expected 4 = 1 physical x 4 replicas",
        ),
        (
            "allocatable lags capacity",
            replace(TS, node=replace(TS_NODE, allocatable_shared=1)),
            "nvidia.com/gpu.shared allocatable 1 != capacity 4",
        ),
        (
            "replicas advertised as whole cards too",
            replace(TS, node=replace(TS_NODE, capacity_gpu=1, allocatable_gpu=1)),
            "still advertises 1 whole nvidia.com/gpu beside its replicas",
        ),
        (
            "never all running at once",
            replace(TS, pods=(replace(TS_PODS[0], running=Interval(t(1), t(5))), *TS_PODS[1:])),
            "the pods never ran all at once",
        ),
        (
            "one pod ran but failed",
            replace(TS, pods=pods(replace(TS_PODS[3], phase="Failed", exit_code=1))),
            "pods that did not run to success: ['ts-3 (Failed, exit 1)']",
        ),
        (
            "one pod still running when the act ended (never shown to finish)",
            replace(
                TS, pods=pods(replace(TS_PODS[3], phase="Running", exit_code=None, running=Interval(t(13))))
            ),
            "pods that did not run to success: ['ts-3 (Running, exit None)']",
        ),
        (
            "device not reported",
            replace(TS, pods=pods(replace(TS_PODS[3], devices=()))),
            "pods without exactly one GPU device",
        ),
        (
            "a replica index the node does not advertise",
            replace(TS, pods=pods(replace(TS_PODS[3], devices=("GPU-1111::4",)))),
            "replica ids ['GPU-1111::4'] beyond the 4 the node advertises (0..3)",
        ),
        (
            "one pod given the whole card beside the replicas",
            replace(TS, pods=pods(replace(TS_PODS[3], devices=("GPU-1111",)))),
            "whole-card ids ['GPU-1111'] beside replica ids ['GPU-1111::0', 'GPU-1111::1', 'GPU-1111::2'] on one node",
        ),
        ("only three pods", replace(TS, pods=TS_PODS[:3]), "3 pods observed, expected 4"),
        (
            "a pod that started while its Workload was evicted between two admissions",
            replace(
                TS,
                workloads=(
                    *TS_WLS[:3],
                    replace(
                        TS_WLS[3],
                        snapshots=(
                            TS_WLS[3].snapshots[0],
                            WorkloadSnapshot(
                                t(12),
                                {"Admitted": cond("Admitted", "False", "NoReservation", at=t(11))},
                                False,
                                True,
                            ),
                            replace(
                                TS_WLS[3].snapshots[0],
                                at=t(20),
                                conditions={
                                    "QuotaReserved": cond("QuotaReserved", "True", "QuotaReserved", at=t(18)),
                                    "Admitted": cond("Admitted", "True", "Admitted", at=t(18)),
                                },
                            ),
                        ),
                    ),
                ),
            ),
            "pod ts-3 started 2026-11-30T12:00:13Z, outside every stretch its Workload was admitted "
            "(2026-11-30T12:00:05Z..2026-11-30T12:00:11Z, 2026-11-30T12:00:18Z..now): Kueue did not gate it",
        ),
        (
            "a Job never seen unsuspended whose pod ran",
            replace(
                TS,
                workloads=(
                    *TS_WLS[:3],
                    replace(TS_WLS[3], snapshots=(replace(TS_WLS[3].snapshots[0], job_suspended=True),)),
                ),
            ),
            "job-ts-3's Job was never seen unsuspended, yet pods ran: they are not this Job's admitted pods",
        ),
        (
            "a Job unsuspended while its Workload still waited for quota",
            replace(
                TS,
                workloads=(
                    *TS_WLS[:3],
                    replace(
                        TS_WLS[3],
                        snapshots=(
                            WorkloadSnapshot(t(2), {}, False, job_suspended=False, uid="uid-ts-3"),
                            *TS_WLS[3].snapshots,
                        ),
                    ),
                ),
            ),
            "job-ts-3's Job unsuspended at 2026-",
        ),
        (
            "pods bypassed Kueue (no Workloads)",
            replace(TS, workloads=()),
            "0 Kueue Workloads observed for the pods, expected 4",
        ),
        (
            "a workload never admitted",
            replace(TS, workloads=(*TS_WLS[:3], replace(TS_WLS[3], snapshots=()))),
            "workloads never admitted by Kueue: ['job-ts-3']",
        ),
        (
            "replicas admitted on the whole-card flavor",
            replace(
                TS,
                workloads=tuple(
                    replace(w, snapshots=(admitted_snap(5, flavors=("gpu-spot",)),)) for w in TS_WLS
                ),
            ),
            "workloads admitted on another ResourceFlavor than gpu-shared",
        ),
    ],
)
def test_timeslicing_adjacent_cases_fail(case, obs, why):
    check(check_timeslicing(obs), False, why)


def test_timeslicing_holds():
    check(check_timeslicing(TS), True)


def test_on_aws_a_uuid_without_replica_index_still_holds():
    """nvidia-smi and NVIDIA_VISIBLE_DEVICES show the physical UUID only: four pods, one UUID."""
    check(
        check_timeslicing(replace(TS, pods=tuple(replace(p, devices=("GPU-1111",)) for p in TS_PODS))), True
    )
