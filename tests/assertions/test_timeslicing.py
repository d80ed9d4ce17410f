"""Act 4, time-slicing: the case where the claim holds and each way it could look true while false.

Every adjacent case must give holds=False with a message that says why (the `why` column)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assertions.observed import Interval, NodeObs, PodObs
from assertions.timeslicing import TimeSlicingObs, check_timeslicing
from tests.assertions.observations import check, t

TS_NODE = NodeObs(
    "gpu-ts",
    t(0),
    {
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
    },
    4,
    4,
)
TS_PODS = tuple(
    PodObs(f"ts-{i}", "gpu-ts", "Running", Interval(t(10 + i)), gpu_uuid="GPU-1111") for i in range(4)
)
TS = TimeSlicingObs(TS_NODE, TS_PODS, observed_at=t(60))


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "capacity 4 but pods on different UUIDs",
            replace(TS, pods=(*TS_PODS[:3], replace(TS_PODS[3], gpu_uuid="GPU-2222"))),
            "different GPU UUIDs",
        ),
        (
            "pods on different nodes",
            replace(TS, pods=(*TS_PODS[:3], replace(TS_PODS[3], node="gpu-other"))),
            "pods not on gpu-ts",
        ),
        (
            "four physical GPUs, not time-slicing",
            replace(
                TS,
                node=replace(TS_NODE, labels={"nvidia.com/gpu.count": "4", "nvidia.com/gpu.replicas": "1"}),
            ),
            "physical GPUs",
        ),
        ("capacity not multiplied", replace(TS, node=replace(TS_NODE, capacity_gpu=1)), "capacity is 1"),
        (
            "never all running at once",
            replace(TS, pods=(replace(TS_PODS[0], running=Interval(t(1), t(5))), *TS_PODS[1:])),
            "never all Running",
        ),
        (
            "UUID not reported",
            replace(TS, pods=(*TS_PODS[:3], replace(TS_PODS[3], gpu_uuid=None))),
            "without a reported",
        ),
        ("only three pods", replace(TS, pods=TS_PODS[:3]), "3 pods observed"),
    ],
)
def test_timeslicing_adjacent_cases_fail(case, obs, why):
    check(check_timeslicing(obs), False, why)


def test_timeslicing_holds():
    check(check_timeslicing(TS), True)
