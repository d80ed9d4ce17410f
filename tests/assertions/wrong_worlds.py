"""Holding worlds for the wrong-worlds table (test_wrong_worlds.py): one per act, built from the observation
dataclasses directly, each a world where the act's claim is true. The table's rows change one thing each."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from assertions.admission import AdmissionObs
from assertions.cold_start import ColdStartObs
from assertions.cost_obs import CostObs, HolderObs
from assertions.diagnosis import ORDER, DiagnosisActObs, DiagnosisObs, Situation
from assertions.interruption import InterruptionObs
from assertions.observed import EventObs, Interval, NodeObs, PodObs, WorkloadObs, WorkloadSnapshot
from assertions.preemption import PreemptionObs
from assertions.timeslicing import TimeSlicingObs
from gpu_finops.facts.conditions import Condition
from gpu_finops.facts.kube_keys import (
    LABEL_CAPACITY_TYPE,
    LABEL_GPU_COUNT,
    LABEL_GPU_REPLICAS,
    LABEL_GPU_SHARING,
    LABEL_NODEPOOL,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
POOL = "gpu-spot"
PREEMPTOR_UID = "uid-high"


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def iso(s: float) -> str:
    return at(s).isoformat().replace("+00:00", "Z")


def cond(
    ctype: str, status: str = "True", reason: str = "", lt: float | None = None, msg: str = ""
) -> Condition:
    return Condition(ctype, status, reason, msg, at(lt) if lt is not None else None)


def conds(*cs: Condition) -> dict[str, Condition]:
    return {c.type: c for c in cs}


def spot_node(name: str, created: float, ready: float, claim: str, claim_created: float, **kw) -> NodeObs:
    return NodeObs(
        name=name,
        created=at(created),
        labels={LABEL_NODEPOOL: POOL, LABEL_CAPACITY_TYPE: "spot"},
        allocatable_gpu=1,
        capacity_gpu=1,
        ready_at=at(ready),
        nodeclaim=claim,
        nodeclaim_nodepool=POOL,
        nodeclaim_launched_at=at(claim_created + 10),
        nodeclaim_created=at(claim_created),
        uid=f"uid-{name}",
        **kw,
    )


# ---- act 1
def cold() -> ColdStartObs:
    node = spot_node("gpu-a", 30, 60, "nc-a", 5)
    pod = PodObs(
        "cold-x",
        "gpu-a",
        "Succeeded",
        Interval(at(70), at(100)),
        exit_code=0,
        output="Test PASSED",
        devices=("GPU-0",),
    )
    return ColdStartObs(T0, (), POOL, node, pod, "Test PASSED", observed_at=at(600))


# ---- act 2
def admitted_wl(name: str, tenant: str, card: str, start: float = 20) -> WorkloadObs:
    snap = WorkloadSnapshot(
        at(10),
        conds(cond("QuotaReserved", lt=5), cond("Admitted", lt=5)),
        has_admission=True,
        job_suspended=False,
        cluster_queue=tenant,
        uid=f"uid-{name}",
    )
    pod = PodObs(f"{name}-pod", "gpu-n", "Running", Interval(at(start)), devices=(card,))
    return WorkloadObs(name, tenant, snapshots=(snap,), pods=(pod,), job=name)


def waiting_wl(name: str, tenant: str) -> WorkloadObs:
    snap = WorkloadSnapshot(
        at(10), conds(cond("QuotaReserved", "False", "Pending")), False, job_suspended=True, uid=f"uid-{name}"
    )
    return WorkloadObs(name, tenant, snapshots=(snap,), job=name)


def admission(tenants: tuple[str, ...] = ("team-a", "team-b")) -> AdmissionObs:
    n = len(tenants)
    ws = [admitted_wl(f"w{i:02d}", t, f"GPU-{i}") for i, t in enumerate(tenants)]
    ws += [waiting_wl(f"w{i:02d}", tenants[i % n]) for i in range(n, 12)]
    # each seen again, unchanged, at the act's last look: the histories cover the window
    ws = [replace(w, snapshots=(*w.snapshots, replace(w.snapshots[-1], at=at(300)))) for w in ws]
    return AdmissionObs(
        tuple(ws), tenants, 12, n, observed_at=at(300), submitted={w.job: w.tenant for w in ws}
    )


# ---- act 3
PREEMPTED_MSG = f"Preempted to accommodate a workload (UID: {PREEMPTOR_UID}, JobUID: j) due to prioritization"


def victim_snapshots(
    cq: str | None = "team-a", msg: str = PREEMPTED_MSG, reason: str = "InClusterQueue"
) -> tuple[WorkloadSnapshot, ...]:
    admitted = WorkloadSnapshot(
        at(10), conds(cond("QuotaReserved", lt=5), cond("Admitted", lt=5)), True, False, cq, uid="uid-low"
    )
    evicted = WorkloadSnapshot(
        at(70),
        conds(
            cond("QuotaReserved", "False", "Pending", 65),
            cond("Admitted", "False", "NoReservation", 65),
            cond("Evicted", "True", "Preempted", 65, msg),
            cond("Preempted", "True", reason, 65, msg),
        ),
        False,
        True,
        uid="uid-low",
    )
    return (admitted, evicted)


def preemptor_snapshots(cq: str | None = "team-a") -> tuple[WorkloadSnapshot, ...]:
    return (
        WorkloadSnapshot(
            at(75),
            conds(cond("QuotaReserved", lt=66), cond("Admitted", lt=66)),
            True,
            False,
            cq,
            uid=PREEMPTOR_UID,
        ),
    )


def preemption() -> PreemptionObs:
    victim = WorkloadObs("low", "team-a", "low", 10, victim_snapshots())
    pod = PodObs("high-pod", "gpu-n", "Running", Interval(at(80)))
    high = WorkloadObs("high", "team-a", "high", 100, preemptor_snapshots(), (pod,))
    return PreemptionObs(victim, high, at(60), observed_at=at(600))


# ---- act 4
def shared_node(**kw) -> NodeObs:
    labels = {
        LABEL_GPU_COUNT: "1",
        LABEL_GPU_REPLICAS: "4",
        LABEL_GPU_SHARING: "time-slicing",
        LABEL_NODEPOOL: POOL,
    }
    return NodeObs("shared-a", at(0), labels, ready_at=at(10), capacity_shared=4, allocatable_shared=4, **kw)


def ts_pod(i: int, start: float | None = None, end: float | None = None) -> PodObs:
    s = 60 + i if start is None else start
    e = s + 40 if end is None else end
    return PodObs(
        f"ts-{i}", "shared-a", "Succeeded", Interval(at(s), at(e)), exit_code=0, devices=(f"GPU-1::{i}",)
    )


def ts_workload(i: int, pods: tuple[PodObs, ...], flavors=("gpu-shared",), cq: str = "team-a") -> WorkloadObs:
    snap = WorkloadSnapshot(
        at(50),
        conds(cond("QuotaReserved", lt=50), cond("Admitted", lt=50)),
        True,
        False,
        cq,
        flavors,
        f"uid-w{i}",
        admitted=tuple(("nvidia.com/gpu.shared", f) for f in flavors),
    )
    return WorkloadObs(f"w{i}", "team-a", snapshots=(snap,), pods=pods)


def timeslicing() -> TimeSlicingObs:
    pods = tuple(ts_pod(i) for i in range(4))
    return TimeSlicingObs(
        shared_node(),
        pods,
        tuple(ts_workload(i, (p,)) for i, p in enumerate(pods)),
        4,
        at(300),
        nodepool=POOL,
        tenant="team-a",
    )


# ---- act 5
def interruption() -> InterruptionObs:
    node = spot_node("spot-a", 0, 20, "nc-a", -10)
    repl = spot_node("spot-b", 120, 150, "nc-b", 105)
    victim = PodObs(
        "spot-1",
        "spot-a",
        "Failed",
        Interval(at(30), at(110)),
        evicted=True,
        disruption="EvictionByEvictionAPI",
    )
    again = PodObs("spot-2", "spot-b", "Running", Interval(at(160)))
    events = (
        EventObs("SpotInterrupted", "Node", "spot-a", at(101)),
        EventObs("TerminatingOnInterruption", "Node", "spot-a", at(101)),
    )
    return InterruptionObs(
        at(100),
        "sqs",
        "delivered",
        node,
        POOL,
        events,
        at(102),
        at(103),
        (victim, again),
        repl,
        observed_at=at(600),
    )


# ---- act 6
PRICE = 1.2


def record(start: float, sm: float = 0.4582, util: float = 80.0, secs: float = 60.0) -> dict:
    cost = PRICE * secs / 3600
    return {
        "ResourceName": "gpu-a",
        "ChargePeriodStart": iso(start),
        "ChargePeriodEnd": iso(start + 60),
        "x_InstanceSeconds": secs,
        "x_GpuUtilPercent": util,
        "x_SmActive": sm,
        "EffectiveCost": cost,
        "x_IdleCost": cost * (1 - sm),
        "x_RateSource": "catalog",
        "x_Status": "ok",
        "x_GpuCount": 1,
        "x_GpusReporting": 1,
        "x_GpusReportingGpuUtil": 1,
        "x_GpusReportingSmActive": 1,
        "x_GpuUtilSeries": "DCGM_FI_DEV_GPU_UTIL",
        "x_SmActiveSeries": "DCGM_FI_PROF_SM_ACTIVE",
    }


def holding(tenant: str = "team-a") -> dict:
    return {"namespace": "team-a", "pod": "cost-pod", "tenant": tenant, "node": "gpu-a", "gpus": 1,
            "start": iso(50), "end": None, "replicas": 1, "equivalents": None, "devices": []}  # fmt: skip


def cost() -> CostObs:
    recs = tuple(record(s) for s in (60, 120, 180))
    return CostObs(
        "gpu-a",
        recs,
        PRICE,
        min_records=3,
        expected_rate_source="catalog",
        node_created=at(0),
        expected_sm_active=0.4582,
        holdings={r["ChargePeriodStart"]: (holding(),) for r in recs},
        holder=HolderObs("team-a", "cost-pod", "team-a", at(70), at(230), submitted_at=at(65)),
        compute_load=True,
    )


# ---- act 7
def situations() -> tuple[Situation, ...]:
    s = [Situation(f"team-a/waits-{c}", c, (f"{c}-token:team-a/x",)) for c in ORDER]
    s.append(Situation("team-a/waits-two", "allocation", ("allocation-token:team-a/x",), ("placement",)))
    return tuple(s)


def diagnosis_of(s: Situation) -> DiagnosisObs:
    return DiagnosisObs(
        s.target, s.expected_first, s.key_evidence, ORDER, s.also_holds, (), (s.expected_first, *s.also_holds),
        kind=s.kind, order=ORDER,
    )  # fmt: skip


def diagnosis() -> DiagnosisActObs:
    sits = situations()
    return DiagnosisActObs(sits, tuple(diagnosis_of(s) for s in sits))
