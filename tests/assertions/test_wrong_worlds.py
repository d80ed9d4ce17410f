"""Wrong worlds written from the acts' words and the real components' semantics, independently of the
other tests. Each row is a world where the act's claim is false, the clause
that must refuse it, and why in one line. The holding worlds (wrong_worlds.py) must hold. A row whose
clause starts "refused:" is bad input, refused where the observation is built (a ValueError naming it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

import pytest

from assertions.admission import AdmissionObs, check_admission
from assertions.cold_start import ColdStartObs, check_cold_start
from assertions.cost import check_cost
from assertions.cost_obs import CostObs, HolderObs
from assertions.diagnosis import DiagnosisActObs, Situation, check_diagnosis
from assertions.interruption import InterruptionObs, check_interruption
from assertions.observed import Interval, PodObs, WorkloadObs, WorkloadSnapshot
from assertions.preemption import PreemptionObs, check_preemption
from assertions.timeslicing import TimeSlicingObs, check_timeslicing
from assertions.verdict import Verdict
from tests.assertions import wrong_worlds as rw
from tests.assertions.wrong_worlds import at, cond, conds

CHECKERS: dict[type, Callable[[Any], Verdict]] = {
    ColdStartObs: check_cold_start,
    AdmissionObs: check_admission,
    PreemptionObs: check_preemption,
    TimeSlicingObs: check_timeslicing,
    InterruptionObs: check_interruption,
    CostObs: check_cost,
    DiagnosisActObs: check_diagnosis,
}


def check(obs: Any) -> Verdict:
    return CHECKERS[type(obs)](obs)


class Row(NamedTuple):
    world: Callable[[], Any]
    clause: str
    why: str


# ---- act 1: cold start
def _c(**node: Any) -> ColdStartObs:
    o = rw.cold()
    return replace(o, node=replace(o.node, **node))


def _c_pod(**pod: Any) -> ColdStartObs:
    o = rw.cold()
    return replace(o, pod=replace(o.pod, **pod))


def _c_naive() -> ColdStartObs:
    o = rw.cold()
    return replace(o, act_started=o.act_started.replace(tzinfo=None))


# ---- act 2: admission
def _a_wl(i: int, **kw: Any) -> AdmissionObs:
    o = rw.admission()
    ws = list(o.workloads)
    ws[i] = replace(ws[i], **kw)
    return replace(o, workloads=tuple(ws))


def _a_three_apart() -> AdmissionObs:
    o = rw.admission(("team-a", "team-b", "team-c"))
    runs = [(20, 40), (50, 70), (80, None)]
    ws = list(o.workloads)
    for i, (s, e) in enumerate(runs):
        p = ws[i].pods[0]
        ws[i] = replace(ws[i], pods=(replace(p, running=Interval(at(s), at(e) if e else None)),))
    return replace(o, workloads=tuple(ws))


def _a_three_shared_card() -> AdmissionObs:
    o = rw.admission(("team-a", "team-b", "team-c"))
    ws = list(o.workloads)
    ws[2] = replace(ws[2], pods=(replace(ws[2].pods[0], devices=("GPU-0",)),))
    return replace(o, workloads=tuple(ws))


def _a_started_while_evicted() -> AdmissionObs:
    """Admitted at 5, evicted at 15, admitted again at 25; its pod started at 20, in between."""
    first = rw.admission().workloads[0].snapshots[0]
    evicted = replace(
        first,
        at=at(16),
        conditions=conds(
            cond("QuotaReserved", "False", "Pending", 15),
            cond("Admitted", "False", "NoReservation", 15),
            cond("Evicted", "True", "Preempted", 15),
        ),
        has_admission=False,
        job_suspended=True,
    )
    again = replace(first, at=at(30), conditions=conds(cond("QuotaReserved", lt=25), cond("Admitted", lt=25)))
    return _a_wl(0, snapshots=(first, evicted, again))


def _a_pod(i: int, **pod: Any) -> AdmissionObs:
    o = rw.admission()
    w = o.workloads[i]
    return _a_wl(i, pods=(replace(w.pods[0], **pod),))


def _a_admitted_without_reservation() -> AdmissionObs:
    o = rw.admission()
    w = o.workloads[5]
    s = replace(w.snapshots[0], conditions=conds(cond("Admitted", lt=5)))
    return _a_wl(5, snapshots=(s,))


def _a_later_other_cq() -> AdmissionObs:
    o = rw.admission()
    w = o.workloads[0]
    later = replace(w.snapshots[0], at=at(200), cluster_queue="team-b")
    return _a_wl(0, snapshots=(w.snapshots[0], later))


def _a_future_runs() -> AdmissionObs:
    o = rw.admission()
    ws = list(o.workloads)
    for i in (0, 1):
        ws[i] = replace(ws[i], pods=(replace(ws[i].pods[0], running=Interval(at(400), at(500))),))
    return replace(o, workloads=tuple(ws))


def _a_impossible_interval() -> AdmissionObs:
    o = _a_pod(0, running=Interval(at(50), at(40)))
    ws = list(o.workloads)
    ws[1] = replace(ws[1], pods=(replace(ws[1].pods[0], running=Interval(at(30), at(60))),))
    return replace(o, workloads=tuple(ws))


def _a_one_pod_twice() -> AdmissionObs:
    o = rw.admission()
    ws = list(o.workloads)
    ws[1] = replace(ws[1], pods=(replace(ws[1].pods[0], name=ws[0].pods[0].name),))
    return replace(o, workloads=tuple(ws))


def _a_vacuous() -> AdmissionObs:
    return AdmissionObs((), (), 0, 0, observed_at=at(300))


# ---- act 3: preemption
def _p(victim: dict | None = None, preemptor: dict | None = None, **obs: Any) -> PreemptionObs:
    o = rw.preemption()
    return replace(
        o,
        victim=replace(o.victim, **(victim or {})),
        preemptor=replace(o.preemptor, **(preemptor or {})),
        **obs,
    )


def _p_quota_released_after_the_preemptor_was_admitted() -> PreemptionObs:
    """Evicted at 65, the preemptor admitted at 66, but the victim's QuotaReserved went False only at 68."""
    admitted, evicted = rw.victim_snapshots()
    late = {**evicted.conditions, "QuotaReserved": cond("QuotaReserved", "False", "Pending", 68)}
    return _p({"snapshots": (admitted, replace(evicted, conditions=late))})


def _p_cq(v: str | None, h: str | None, reason: str = "InClusterQueue", **kw: Any) -> PreemptionObs:
    return _p(
        {"snapshots": rw.victim_snapshots(v, reason=reason)}, {"snapshots": rw.preemptor_snapshots(h)}, **kw
    )


def _p_crashed() -> PreemptionObs:
    pod = PodObs("high-pod", "gpu-n", "Failed", Interval(at(80), at(81)), exit_code=1, reason="Error")
    return _p(preemptor={"pods": (pod,)})


# ---- act 4: time-slicing
def _t(**kw: Any) -> TimeSlicingObs:
    return replace(rw.timeslicing(), **kw)


def _t_workloads(f: Callable[[int, PodObs], WorkloadObs]) -> TimeSlicingObs:
    o = rw.timeslicing()
    return replace(o, workloads=tuple(f(i, p) for i, p in enumerate(o.pods)))


def _t_one_owns_two() -> TimeSlicingObs:
    o = rw.timeslicing()
    p = o.pods
    ws = (
        rw.ts_workload(0, (p[0], p[1])),
        rw.ts_workload(1, ()),
        rw.ts_workload(2, (p[2],)),
        rw.ts_workload(3, (p[3],)),
    )
    return replace(o, workloads=ws)


def _t_recreated() -> TimeSlicingObs:
    def f(i: int, p: PodObs) -> WorkloadObs:
        w = rw.ts_workload(i, (p,))
        if i:
            return w
        fresh = WorkloadSnapshot(
            at(55), conds(cond("QuotaReserved", "False", "Pending")), False, True, uid="uid-new"
        )
        return replace(w, snapshots=(*w.snapshots, fresh))

    return _t_workloads(f)


def _t_pods(f: Callable[[int, PodObs], PodObs], **kw: Any) -> TimeSlicingObs:
    o = rw.timeslicing()
    pods = tuple(f(i, p) for i, p in enumerate(o.pods))
    return replace(o, pods=pods, workloads=tuple(rw.ts_workload(i, (p,)) for i, p in enumerate(pods)), **kw)


# ---- act 5: interruption
def _i(**kw: Any) -> InterruptionObs:
    return replace(rw.interruption(), **kw)


def _i_repl(**kw: Any) -> InterruptionObs:
    o = rw.interruption()
    return replace(o, replacement=replace(o.replacement, **kw))


def _i_pod(i: int, **kw: Any) -> InterruptionObs:
    o = rw.interruption()
    pods = list(o.pods)
    pods[i] = replace(pods[i], **kw)
    return replace(o, pods=tuple(pods))


# ---- act 6: cost
def _k(**kw: Any) -> CostObs:
    return replace(rw.cost(), **kw)


def _k_holdings(first: tuple[dict, ...]) -> CostObs:
    o = rw.cost()
    h = dict(o.holdings)
    h[o.records[0]["ChargePeriodStart"]] = first
    return replace(o, holdings=h)


def _k_held_after() -> CostObs:
    o = rw.cost()
    late = rw.record(240)
    recs = (*o.records, late)
    return replace(o, records=recs, holdings={**o.holdings, late["ChargePeriodStart"]: (rw.holding(),)})


def _k_load_outside() -> CostObs:
    o = rw.cost()
    recs = tuple(rw.record(s, sm=0.0) for s in (60, 120, 180))
    return replace(
        o,
        records=recs,
        expected_sm_active=None,
        holder=HolderObs("team-a", "cost-pod", "team-a", at(500), at(560)),
    )


# ---- act 7: diagnosis
def _d_evidence(tokens: tuple[str, ...]) -> DiagnosisActObs:
    o = rw.diagnosis()
    sits = list(o.situations)
    sits[0] = replace(sits[0], key_evidence=tokens)
    return DiagnosisActObs(tuple(sits), tuple(rw.diagnosis_of(s) for s in sits))


def _d_target(target: str) -> DiagnosisActObs:
    o = rw.diagnosis()
    sits = list(o.situations)
    sits[1] = replace(sits[1], target=target)
    return DiagnosisActObs(tuple(sits), tuple(rw.diagnosis_of(s) for s in sits))


def _d_only_two_causes() -> DiagnosisActObs:
    s = Situation("team-a/waits-two", "allocation", ("allocation-token:team-a/x",), ("placement",))
    return DiagnosisActObs((s,), (rw.diagnosis_of(s),), required_causes=())


ROWS: dict[str, Row] = {
    # act 1
    "c1 NodeClaim Launched before it was created": Row(lambda: _c(nodeclaim_launched_at=at(1)), "node_is_new_and_launched_by_our_nodeclaim", "a claim cannot launch before it exists: not this claim's history"),
    "c1 node created before its NodeClaim": Row(lambda: _c(created=at(2)), "node_is_new_and_launched_by_our_nodeclaim", "a node older than its claim was adopted, not launched by it"),
    "c1 node deleted before the pod ran": Row(lambda: _c(deleted_at=at(65)), "pod_ran_on_that_node_after_it_was_ready", "the pod ran on a look-alike of that name, not the observed node"),
    "c1 Succeeded without an exit code": Row(lambda: _c_pod(exit_code=None), "pod_succeeded_doing_gpu_work", "success unobserved is treated as success"),
    "c1 Succeeded with no finish time": Row(lambda: _c_pod(running=Interval(at(70))), "pod_succeeded_doing_gpu_work", "a Succeeded container has a finishedAt; none means no terminated status was read"),
    "c1 allocatable GPU above capacity": Row(lambda: _c(capacity_gpu=0), "node_is_spot_with_a_gpu", "allocatable cannot exceed capacity: the GPU count is invented"),
    "c1 act start timezone-naive": Row(_c_naive, "refused: ColdStartObs.act_started is timezone-naive", "a naive clock cannot be ordered against the API server's UTC"),
    # act 2
    "a2 three tenants, never at once": Row(_a_three_apart, "admitted_ran_at_once", "with three ClusterQueues the overlap is never checked"),
    "a2 three tenants, two on one card": Row(_a_three_shared_card, "admitted_ran_on_different_cards", "the intersection of all three misses a pair sharing a card"),
    "a2 a 'waiting' Workload Admitted without QuotaReserved": Row(_a_admitted_without_reservation, "the_rest_never_held_quota_and_stayed_suspended", "Admitted=True is admission, whatever QuotaReserved says"),
    "a2 admission moved to another tenant's queue": Row(_a_later_other_cq, "one_admitted_per_cluster_queue", "only the first admission's ClusterQueue is compared with the tenant"),
    "a2 runs after the act's last look": Row(_a_future_runs, "admitted_ran_at_once", "timestamps in the future were not observed running"),
    "a2 a run that ended before it started": Row(_a_impossible_interval, "admitted_ran_at_once", "an impossible interval is no evidence of running at once"),
    "a2 pod started while its Workload was evicted between two admissions": Row(_a_started_while_evicted, "pods_start_only_after_admission", "a pod that starts while its Workload is evicted was not gated by Kueue, whenever the first admission was"),
    "a2 empty device id": Row(lambda: _a_pod(0, devices=("",)), "refused: device id '' names no card", "an empty id names no card"),
    "a2 one pod recorded under both Workloads": Row(_a_one_pod_twice, "pods_start_only_after_admission", "one pod object cannot be two Jobs' pods: one Job showed none of its own"),
    "a2 all of nothing": Row(_a_vacuous, "every_job_has_one_workload", "no jobs, no Workloads: nothing was shown"),
    "a2 admitted Job still suspended while its pod ran": Row(lambda: _a_wl(0, snapshots=(replace(rw.admission().workloads[0].snapshots[0], job_suspended=True),)), "pods_start_only_after_admission", "a suspended Job has no running pods: the pod is not this Job's"),
    # act 3
    "p3 ClusterQueues never observed": Row(lambda: _p_cq(None, None), "victim_preempted_for_the_policy_reason", "None == None is not one ClusterQueue"),
    "p3 both charged to another tenant's queue": Row(lambda: _p_cq("team-b", "team-b"), "victim_preempted_for_the_policy_reason", "InClusterQueue must be the tenant's own ClusterQueue"),
    "p3 cohort reclamation inside one queue": Row(lambda: _p_cq("team-a", "team-a", "InCohortReclamation", expected_reason="InCohortReclamation"), "victim_preempted_for_the_policy_reason", "reclaiming across the cohort needs two ClusterQueues"),
    "p3 preemptor's pod crashed": Row(_p_crashed, "preemptor_admitted_and_running", "a pod that failed at once is not a running preemptor"),
    "p3 preempted for another workload": Row(lambda: _p({"snapshots": rw.victim_snapshots(msg=rw.PREEMPTED_MSG.replace(rw.PREEMPTOR_UID, "uid-other"))}), "victim_preempted_for_the_policy_reason", "Kueue names the preemptor's UID; another one made room"),
    "p3 preemptor naming no UID": Row(lambda: _p({"snapshots": rw.victim_snapshots(msg="preempted")}), "victim_preempted_for_the_policy_reason", "which workload the victim made room for is unobserved"),
    "p3 preemptor admitted before the victim gave its quota back": Row(_p_quota_released_after_the_preemptor_was_admitted, "preemptor_admitted_only_after_the_eviction", "quota is free when the victim releases it, not when it is evicted"),
    "p3 submission clock naive": Row(lambda: _p(preemptor_submitted=at(60).replace(tzinfo=None)), "refused: PreemptionObs.preemptor_submitted is timezone-naive", "a naive clock cannot be ordered against condition times"),
    # act 4
    "t4 flavor never observed": Row(lambda: _t_workloads(lambda i, p: rw.ts_workload(i, (p,), flavors=())), "each_pod_admitted_by_kueue_on_the_shared_flavor", "no ResourceFlavor seen is not the shared flavor"),
    "t4 one Workload owns two pods, one none": Row(_t_one_owns_two, "each_pod_admitted_by_kueue_on_the_shared_flavor", "each pod its own Workload: count per Workload"),
    "t4 admitted through another tenant's queue": Row(lambda: _t_workloads(lambda i, p: rw.ts_workload(i, (p,), cq="team-b")), "each_pod_admitted_by_kueue_on_the_shared_flavor", "charged ClusterQueue must be the submitting tenant's"),
    "t4 Workload re-created, new one never admitted": Row(_t_recreated, "each_pod_admitted_by_kueue_on_the_shared_flavor", "the admitted object is gone; its successor was not admitted"),
    "t4 node re-created after the pods ran": Row(lambda: _t(node=replace(rw.shared_node(), created=at(150))), "all_pods_on_that_node", "the observed node did not exist when the pods ran on that name"),
    "t4 Succeeded with no end, staggered": Row(lambda: _t_pods(lambda i, p: replace(p, running=Interval(at(60 + 50 * i)))), "all_ran_at_once", "no finish time read: 'still running' is invented"),
    "t4 runs after the last look": Row(lambda: _t_pods(lambda i, p: replace(p, running=Interval(at(400), at(440)))), "all_ran_at_once", "future intervals were not observed"),
    "t4 Succeeded without an exit code": Row(lambda: _t_pods(lambda i, p: replace(p, exit_code=None)), "each_ran_to_success", "success unobserved"),
    "t4 allocatable whole GPU beside the replicas": Row(lambda: _t(node=replace(rw.shared_node(), allocatable_gpu=1)), "no_whole_gpu_beside_the_replicas", "an allocatable whole card is handed out twice too"),
    # act 5
    "i5 SQS put failed": Row(lambda: _i(delivery_state="failed"), "warning_was_delivered", "only FIS was checked"),
    "i5 delivery unknown": Row(lambda: _i(delivery="", delivery_state=""), "warning_was_delivered", "no delivery observed at all"),
    "i5 replacement's NodePool of its claim unobserved": Row(lambda: _i_repl(nodeclaim_nodepool=None), "replacement_is_a_new_spot_node_of_ours", "missing claim ownership accepted"),
    "i5 replacement's NodeClaim older than the warning": Row(lambda: _i_repl(nodeclaim_created=at(50)), "replacement_is_a_new_spot_node_of_ours", "a claim made before the warning was not a replacement for it"),
    "i5 victim's run ended before the warning": Row(lambda: _i_pod(0, running=Interval(at(30), at(90))), "workload_evicted_through_the_eviction_api", "evicted before the warning: not because of it"),
    "i5 ran again but crashed": Row(lambda: _i_pod(1, phase="Failed", exit_code=1, running=Interval(at(160), at(161))), "workload_ran_again_on_the_replacement", "a crash is not running again"),
    "i5 replacement deleted before the pod ran": Row(lambda: _i_repl(deleted_at=at(155)), "workload_ran_again_on_the_replacement", "the pod ran on a name whose node was going away: not that node"),
    "i5 interrupted node's claim NodePool unobserved": Row(lambda: _i(node=replace(rw.interruption().node, nodeclaim_nodepool=None)), "nodeclaim_of_the_node_deleted", "missing ownership accepted"),
    # act 6
    "k6 GPU_UTIL stored as a ratio": Row(lambda: _k(records=tuple(rw.record(s, util=0.8) for s in (60, 120, 180))), "sm_active_within_gpu_util", "units: 0.8 % cannot carry SM_ACTIVE 0.46"),
    "k6 SM_ACTIVE stored as a percentage": Row(lambda: _k(records=tuple(rw.record(s, sm=45.82) for s in (60, 120, 180)), expected_sm_active=None), "sm_active_is_the_ratio_the_load_ran_at", "units: a percentage where a ratio belongs"),
    "k6 all of nothing": Row(lambda: _k(records=(), min_records=0, holdings={}), "enough_consecutive_records", "zero records, zero required"),
    "k6 pod held twice, first for another tenant": Row(lambda: _k_holdings((rw.holding("team-b"), rw.holding())), "holdings_name_the_acts_pod", "duplicate holding: counted twice, one misattributed"),
    "k6 pod named as holder after it finished": Row(_k_held_after, "holdings_name_the_acts_pod", "a finished pod holds no GPU: misattribution"),
    "k6 holder ends before it starts": Row(lambda: _k(holder=HolderObs("team-a", "cost-pod", "team-a", at(130), at(125))), "holdings_name_the_acts_pod", "an impossible span overlaps whatever"),
    "k6 load ran outside every record, SM all zero": Row(_k_load_outside, "sm_active_seen_while_the_load_ran", "no interval to judge is no evidence, not a pass"),
    "k6 node deleted before it was created": Row(lambda: _k(node_deleted=at(-10)), "instance_seconds_match_the_node_life", "an impossible life"),
    # act 7
    "d7 empty evidence token": Row(lambda: _d_evidence(("",)), "first_finding_carries_its_evidence", "an empty token is always 'carried'"),
    "d7 token naming nothing": Row(lambda: _d_evidence(("holder:",)), "first_finding_carries_its_evidence", "a token with no object names none of the act's"),
    "d7 target without a namespace": Row(lambda: _d_target("waits-allocation"), "a_situation_for_every_cause_and_one_with_two", "a target is namespace/name: identity"),
    "d7 no cause required": Row(_d_only_two_causes, "a_situation_for_every_cause_and_one_with_two", "every cause of the order must be built, whatever required_causes says"),
}  # fmt: skip

HOLDING = [
    rw.cold,
    rw.admission,
    lambda: rw.admission(("team-a", "team-b", "team-c")),
    rw.preemption,
    rw.timeslicing,
    rw.interruption,
    rw.cost,
    rw.diagnosis,
]


@pytest.mark.parametrize("world", HOLDING)
def test_holding_world_holds(world: Callable[[], Any]) -> None:
    v = check(world())
    assert v.holds, v.render()


@pytest.mark.parametrize("name", list(ROWS))
def test_wrong_world_fails_naming_its_clause(name: str) -> None:
    row = ROWS[name]
    if row.clause.startswith("refused: "):
        with pytest.raises(ValueError, match=row.clause.removeprefix("refused: ")):
            row.world()
        return
    v = check(row.world())
    assert not v.holds, f"{name}: accepted ({row.why})"
    assert row.clause in v.failed_clauses, f"{name}: failed {v.failed_clauses}, expected {row.clause}"
