"""Table tests: for each act, the case where the claim holds and each way it could look true while false.

Every adjacent case must give holds=False with a message that says why (the `why` column)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from assertions.admission import AdmissionObs, check_admission
from assertions.cold_start import ColdStartObs, check_cold_start
from assertions.cost import CostObs, check_cost
from assertions.interruption import InterruptionObs, check_interruption
from assertions.observed import Condition, EventObs, Interval, NodeObs, PodObs, WorkloadObs, WorkloadSnapshot
from assertions.preemption import PreemptionObs, check_preemption
from assertions.timeslicing import TimeSlicingObs, check_timeslicing

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def t(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def check(verdict, holds: bool, why: str | None = None) -> None:
    assert verdict.holds is holds, verdict.render()
    if why is not None:
        assert why in verdict.observed, f"expected {why!r} in: {verdict.observed}"


# --- act 1: cold start -----------------------------------------------------------------------------------
SPOT_NODE = NodeObs(
    "gpu-a",
    created=t(40),
    labels={"karpenter.sh/capacity-type": "spot"},
    allocatable_gpu=1,
    capacity_gpu=1,
    ready_at=t(90),
    nodeclaim="gpu-spot-x1",
    nodeclaim_nodepool="gpu-spot",
    nodeclaim_launched_at=t(30),
)
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


# --- act 2: quota admission ------------------------------------------------------------------------------
def cond(ctype: str, status: str, reason: str = "", message: str = "") -> Condition:
    return Condition(ctype, status, reason, message)


def admitted_snap(at: float) -> WorkloadSnapshot:
    return WorkloadSnapshot(
        t(at),
        {
            "QuotaReserved": cond("QuotaReserved", "True", "QuotaReserved"),
            "Admitted": cond("Admitted", "True", "Admitted"),
        },
        True,
        False,
    )


def pending_snap(at: float) -> WorkloadSnapshot:
    return WorkloadSnapshot(
        t(at),
        {"QuotaReserved": cond("QuotaReserved", "False", "Pending", "couldn't assign flavors")},
        False,
        True,
    )


def running_wl(name: str, tenant: str, start: float = 10, end: float | None = None) -> WorkloadObs:
    return WorkloadObs(
        name,
        tenant,
        snapshots=(admitted_snap(5),),
        pods=(PodObs(f"{name}-pod", "gpu-a", "Running", Interval(t(start), t(end) if end else None)),),
    )


def pending_wl(name: str, tenant: str) -> WorkloadObs:
    return WorkloadObs(name, tenant, snapshots=(pending_snap(5),))


ADMIT = AdmissionObs(
    workloads=(
        running_wl("a-0", "team-a"),
        running_wl("b-0", "team-b"),
        *(pending_wl(f"a-{i}", "team-a") for i in range(1, 6)),
        *(pending_wl(f"b-{i}", "team-b") for i in range(1, 6)),
    ),
    tenants=("team-a", "team-b"),
    observed_at=t(60),
)


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "three admitted",
            replace(
                ADMIT, workloads=(*ADMIT.workloads[:2], running_wl("a-1", "team-a"), *ADMIT.workloads[3:])
            ),
            "3 admitted",
        ),
        (
            "both admitted from one tenant",
            replace(
                ADMIT,
                workloads=(
                    running_wl("a-0", "team-a"),
                    running_wl("a-1", "team-a"),
                    pending_wl("b-0", "team-b"),
                    *ADMIT.workloads[3:],
                ),
            ),
            "one each of",
        ),
        (
            "admitted but never running at once",
            replace(
                ADMIT,
                workloads=(
                    running_wl("a-0", "team-a", 10, 20),
                    running_wl("b-0", "team-b", 30, 40),
                    *ADMIT.workloads[2:],
                ),
            ),
            "never Running at the same time",
        ),
        (
            "admitted but never running",
            replace(ADMIT, workloads=(replace(ADMIT.workloads[0], pods=()), *ADMIT.workloads[1:])),
            "never had a Running pod",
        ),
        (
            "pending job reached the scheduler",
            replace(
                ADMIT,
                workloads=(
                    *ADMIT.workloads[:2],
                    replace(ADMIT.workloads[2], pods=(PodObs("a-1-pod", None, "Pending"),)),
                    *ADMIT.workloads[3:],
                ),
            ),
            "reached the scheduler",
        ),
        ("only eleven observed", replace(ADMIT, workloads=ADMIT.workloads[:11]), "observed 11 workloads"),
        (
            "jobs finishing and handing quota on",
            replace(
                ADMIT,
                workloads=(
                    replace(
                        ADMIT.workloads[0],
                        snapshots=(
                            WorkloadSnapshot(
                                t(50),
                                {
                                    "QuotaReserved": cond("QuotaReserved", "True"),
                                    "Admitted": cond("Admitted", "True"),
                                    "Finished": cond("Finished", "True", "Succeeded"),
                                },
                                True,
                                False,
                            ),
                        ),
                    ),
                    *ADMIT.workloads[1:],
                ),
            ),
            "Finished during the observation",
        ),
        (
            "nothing observed (an event filter matching nothing)",
            replace(ADMIT, workloads=()),
            "observed 0 workloads",
        ),
        (
            "pending with an unknown quota state",
            replace(
                ADMIT,
                workloads=(
                    *ADMIT.workloads[:2],
                    replace(
                        ADMIT.workloads[2],
                        snapshots=(
                            WorkloadSnapshot(
                                t(5), {"QuotaReserved": cond("QuotaReserved", "Unknown")}, False, True
                            ),
                        ),
                    ),
                    *ADMIT.workloads[3:],
                ),
            ),
            "QuotaReserved is Unknown",
        ),
    ],
)
def test_admission_adjacent_cases_fail(case, obs, why):
    check(check_admission(obs), False, why)


def test_admission_holds():
    check(check_admission(ADMIT), True)


def test_admission_holds_while_queued_workloads_have_no_quota_condition_yet():
    # Kueue marks QuotaReserved=False only on the workload it tried; the rest wait without the condition.
    queued = replace(
        ADMIT,
        workloads=(
            *ADMIT.workloads[:2],
            *(replace(w, snapshots=(WorkloadSnapshot(t(5), {}, False, True),)) for w in ADMIT.workloads[2:]),
        ),
    )
    check(check_admission(queued), True)


# --- act 3: preemption -----------------------------------------------------------------------------------
def evicted_snap(at: float) -> WorkloadSnapshot:
    return WorkloadSnapshot(
        t(at),
        {
            "QuotaReserved": cond("QuotaReserved", "True", "QuotaReserved"),
            "Admitted": cond("Admitted", "True"),
            "Evicted": cond("Evicted", "True", "Preempted", "Preempted to accommodate a workload"),
            "Preempted": cond("Preempted", "True", "InClusterQueue"),
        },
        True,
        False,
    )


def requeued_snap(at: float, evicted_reason: str = "Preempted", preempted: bool = True) -> WorkloadSnapshot:
    conditions = {
        "QuotaReserved": cond("QuotaReserved", "False", "Pending"),
        "Admitted": cond("Admitted", "False", "NoReservation"),
        "Evicted": cond("Evicted", "True", evicted_reason),
        "Requeued": cond("Requeued", "True", evicted_reason),
    }
    if preempted:
        conditions["Preempted"] = cond("Preempted", "True", "InClusterQueue")
    return WorkloadSnapshot(t(at), conditions, False, True)


VICTIM = WorkloadObs(
    "low-0",
    "team-a",
    "low",
    snapshots=(admitted_snap(5), admitted_snap(25), evicted_snap(31), requeued_snap(33)),
    pods=(PodObs("low-0-pod", "gpu-a", "Failed", Interval(t(6), t(32)), evicted=True),),
)
PREEMPTOR = WorkloadObs(
    "high-0",
    "team-a",
    "high",
    snapshots=(pending_snap(30), admitted_snap(34)),
    pods=(PodObs("high-0-pod", "gpu-a", "Running", Interval(t(36))),),
)
PREEMPT = PreemptionObs(VICTIM, PREEMPTOR, t(30))


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "victim Failed instead of requeued",
            replace(
                PREEMPT,
                victim=replace(
                    VICTIM,
                    snapshots=(
                        admitted_snap(5),
                        evicted_snap(31),
                        WorkloadSnapshot(
                            t(33),
                            {
                                "QuotaReserved": cond("QuotaReserved", "False"),
                                "Evicted": cond("Evicted", "True", "Preempted"),
                                "Preempted": cond("Preempted", "True", "InClusterQueue"),
                                "Finished": cond("Finished", "True", "Failed", "Job failed"),
                            },
                            False,
                            True,
                        ),
                    ),
                ),
            ),
            "Finished",
        ),
        (
            "before and after identical",
            replace(PREEMPT, victim=replace(VICTIM, snapshots=(admitted_snap(5), admitted_snap(40)))),
            "no eviction window",
        ),
        (
            "evicted for another reason",
            replace(
                PREEMPT,
                victim=replace(
                    VICTIM,
                    snapshots=(
                        admitted_snap(5),
                        WorkloadSnapshot(
                            t(31), {"Evicted": cond("Evicted", "True", "PodsReadyTimeout")}, False, True
                        ),
                        requeued_snap(33, "PodsReadyTimeout", preempted=False),
                    ),
                ),
            ),
            "no eviction window",
        ),
        (
            "evicted but never requeued",
            replace(PREEMPT, victim=replace(VICTIM, snapshots=(admitted_snap(5), evicted_snap(31)))),
            "was not requeued",
        ),
        (
            "victim pod killed, not evicted",
            replace(
                PREEMPT,
                victim=replace(
                    VICTIM,
                    pods=(PodObs("low-0-pod", "gpu-a", "Failed", Interval(t(6), t(32)), evicted=False),),
                ),
            ),
            "killed",
        ),
        (
            "queue not full before",
            replace(PREEMPT, victim=replace(VICTIM, snapshots=VICTIM.snapshots[2:])),
            "precondition",
        ),
        (
            "preemptor never ran",
            replace(PREEMPT, preemptor=replace(PREEMPTOR, pods=())),
            "never had a Running pod",
        ),
        (
            "Preempted condition missing",
            replace(
                PREEMPT,
                victim=replace(
                    VICTIM,
                    snapshots=(
                        admitted_snap(5),
                        WorkloadSnapshot(
                            t(31), {"Evicted": cond("Evicted", "True", "Preempted")}, True, False
                        ),
                        requeued_snap(33, preempted=False),
                    ),
                ),
            ),
            "Preempted was never True",
        ),
    ],
)
def test_preemption_adjacent_cases_fail(case, obs, why):
    check(check_preemption(obs), False, why)


def test_preemption_holds():
    check(check_preemption(PREEMPT), True)


# --- act 4: time-slicing ---------------------------------------------------------------------------------
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


# --- act 5: FIS spot interruption ------------------------------------------------------------------------
INT_NODE = replace(SPOT_NODE, name="gpu-int", nodeclaim="gpu-spot-int")
INT = InterruptionObs(
    experiment_started=t(0),
    node=INT_NODE,
    events=(
        EventObs("SpotInterrupted", "NodeClaim", "gpu-spot-int", t(5)),
        EventObs("TerminatingOnInterruption", "Node", "gpu-int", t(6)),
    ),
    taint_seen_at=t(8),
    pods=(
        PodObs("w-1", "gpu-int", "Failed", Interval(t(-100), t(10)), reason="Evicted", evicted=True),
        PodObs("w-2", "gpu-new", "Running", Interval(t(120))),
    ),
    replacement=NodeObs("gpu-new", t(30), ready_at=t(100)),
)


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "node deleted with no interruption signal",
            replace(INT, events=(), taint_seen_at=None),
            "no SpotInterrupted",
        ),
        ("events but never tainted", replace(INT, taint_seen_at=None), "never observed"),
        (
            "pods hard-killed",
            replace(INT, pods=(replace(INT.pods[0], evicted=False), INT.pods[1])),
            "hard kill",
        ),
        ("no replacement", replace(INT, replacement=None), "no replacement"),
        (
            "old events from before the experiment",
            replace(INT, events=tuple(replace(e, at=t(-50)) for e in INT.events)),
            "no SpotInterrupted",
        ),
        ("pods not rescheduled", replace(INT, pods=INT.pods[:1]), "no pod was rescheduled"),
    ],
)
def test_interruption_adjacent_cases_fail(case, obs, why):
    check(check_interruption(obs), False, why)


def test_interruption_holds_and_reports_seconds_to_taint():
    v = check_interruption(INT)
    check(v, True)
    assert v.evidence["seconds_to_taint"] == 8


# --- act 6: cost collection ------------------------------------------------------------------------------
def record(
    i: int,
    sm: float | None = 0.4582,
    util: float | None = 100.0,
    cost: float | None = None,
    idle: float | None = None,
    seconds: float = 60,
) -> dict:
    c = 1.861 * seconds / 3600 if cost is None else cost
    return {
        "ChargePeriodStart": f"2026-11-30T12:0{i}:00Z",
        "ChargePeriodEnd": f"2026-11-30T12:0{i + 1}:00Z",
        "x_GpuUtilPercent": util,
        "x_SmActive": sm,
        "EffectiveCost": c,
        "x_InstanceSeconds": seconds,
        "x_IdleCost": (c * (1 - sm) if sm is not None and 0 <= sm <= 1 else None) if idle is None else idle,
        "x_Status": "ok" if sm is not None else "missing-sm-active",
        "x_Message": None,
    }


COST = CostObs("gpu-a", [record(0), record(1), record(2)], expected_unit_price=1.861)
SPOT_CURVE = {f"2026-11-30T12:0{i}:00Z": 1.861 for i in range(3)}  # per-interval prices, as on AWS


@pytest.mark.parametrize(
    "case, obs, why",
    [
        (
            "records missing SM_ACTIVE",
            replace(COST, records=[record(0), record(1, sm=None)]),
            "SM_ACTIVE missing",
        ),
        (
            "SM_ACTIVE as a percentage",
            replace(COST, records=[record(0, sm=45.82, idle=0.0), record(1)]),
            "not a ratio",
        ),
        ("GPU_UTIL missing", replace(COST, records=[record(0, util=None), record(1)]), "GPU_UTIL missing"),
        ("zero cost", replace(COST, records=[record(0, cost=0.0), record(1)]), "expected > 0"),
        ("wrong rate", replace(COST, expected_unit_price=0.95), "!= rate"),
        (
            "idle not cost x (1 - SM_ACTIVE)",
            replace(COST, records=[record(0, idle=0.01), record(1)]),
            "idle cost",
        ),
        ("not consecutive", replace(COST, records=[record(0), record(2)]), "not consecutive"),
        (
            "one interval priced off the spot curve",
            replace(COST, expected_unit_price=SPOT_CURVE | {"2026-11-30T12:01:00Z": 1.70}),
            "2026-11-30T12:01:00Z: cost 0.031017 != rate 1.700000/h",
        ),
        (
            "an interval with no expected price",
            replace(COST, expected_unit_price={"2026-11-30T12:00:00Z": 1.861}),
            "no expected price for this interval",
        ),
        (
            "a spot node charged at the on-demand fallback",
            replace(
                COST,
                records=[{**record(i), "x_RateSource": "fallback"} for i in range(3)],
                expected_rate_source="spot",
            ),
            "charged from rate source 'fallback', expected 'spot'",
        ),
        (
            "collector reported no samples",
            replace(
                COST,
                records=[],
                collector_log=[
                    "INFO cycle ok",
                    "ERROR finops.collector: no samples: Prometheus returned no DCGM series",
                ],
            ),
            "no samples: Prometheus returned no DCGM series",
        ),
    ],
)
def test_cost_adjacent_cases_fail(case, obs, why):
    check(check_cost(obs), False, why)


def test_cost_holds_with_the_reference_figures():
    v = check_cost(COST)
    check(v, True)
    spot = [{**record(i), "x_RateSource": "spot"} for i in range(3)]
    check(
        check_cost(replace(COST, records=spot, expected_unit_price=SPOT_CURVE, expected_rate_source="spot")),
        True,
    )
    assert round(record(0)["EffectiveCost"], 6) == 0.031017 and round(record(0)["x_IdleCost"], 6) == 0.016805


def test_cold_start_node_created_in_the_acts_first_second_is_new():
    """Kubernetes writes creationTimestamp in whole seconds: 12:00:00 for a node made at 12:00:00.4."""
    obs = replace(COLD, act_started=T0 + timedelta(milliseconds=65), node=replace(SPOT_NODE, created=T0))
    check(check_cold_start(obs), True)
