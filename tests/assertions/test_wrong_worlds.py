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


def _evicted(
    look: WorkloadSnapshot, seen: float, since: float, quota_reason: str = "Preempted"
) -> WorkloadSnapshot:
    """`look` again at `seen`, its Workload evicted by preemption at `since`: quota given back, Job suspended."""
    return replace(
        look,
        at=at(seen),
        conditions=conds(
            cond("QuotaReserved", "False", quota_reason, since),
            cond("Admitted", "False", "NoReservation", since),
            cond("Evicted", "True", "Preempted", since),
        ),
        has_admission=False,
        job_suspended=True,
    )


# ---- act 2: admission
def _a_wl(i: int, **kw: Any) -> AdmissionObs:
    o = rw.admission()
    ws = list(o.workloads)
    ws[i] = replace(ws[i], **kw)
    return replace(o, workloads=tuple(ws))


def _a_two_cases() -> AdmissionObs:
    """The two admitted pods on GPU-ab12 and GPU-AB12: one card, spelt twice."""
    o = _a_pod(0, devices=("GPU-ab12",))
    ws = list(o.workloads)
    ws[1] = replace(ws[1], pods=(replace(ws[1].pods[0], devices=("GPU-AB12",)),))
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
    evicted = _evicted(first, 16, 15, "Pending")
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


def _a_evicted_while_its_pod_ran() -> AdmissionObs:
    """Admitted at 5; a look at 100 shows it evicted (Job suspended), and so does the last look; its pod's run,
    from 20, has no end: it ran on through the eviction (or its end was never seen)."""
    first = rw.admission().workloads[0].snapshots[0]
    evicted = _evicted(first, 100, 95)
    return _a_wl(0, snapshots=(first, evicted, replace(evicted, at=at(300))))


def _a_suspended_while_its_pod_ran() -> AdmissionObs:
    """Admitted, yet its Job seen suspended at 100 while its pod (from 20) ran; unsuspended only at the end."""
    first = rw.admission().workloads[0].snapshots[0]
    return _a_wl(
        0, snapshots=(first, replace(first, at=at(100), job_suspended=True), replace(first, at=at(300)))
    )


def _a_waiting_one_held_quota_between_two_looks() -> AdmissionObs:
    """A 'waiting' Workload whose last look says it was evicted by preemption and requeued: it held quota."""
    w = rw.admission().workloads[5]
    said = replace(
        w.snapshots[-1],
        conditions=conds(
            cond("QuotaReserved", "False", "Preempted", 40),
            cond("Evicted", "True", "Preempted", 40),
            cond("Preempted", "True", "InClusterQueue", 40),
            cond("Requeued", "True", "Preempted", 40),
        ),
    )
    return _a_wl(5, snapshots=(w.snapshots[0], said))


def _a_seen_once_at_the_start() -> AdmissionObs:
    w = rw.admission().workloads[5]
    return _a_wl(5, snapshots=w.snapshots[:1])


def _a_reserved_in_another_tenant_s_queue() -> AdmissionObs:
    """Quota first reserved in team-b's ClusterQueue (not yet admitted), then admitted in team-a's."""
    first = rw.admission().workloads[0].snapshots[0]
    reserved = replace(first, at=at(4), conditions=conds(cond("QuotaReserved", lt=3)), cluster_queue="team-b")
    return _a_wl(0, snapshots=(reserved, *rw.admission().workloads[0].snapshots))


def _a_replaced_pod_names_the_card() -> AdmissionObs:
    """The card is named only by a pod the platform ended before it ran; the pod that ran has no device."""
    o = rw.admission()
    w = o.workloads[0]
    lost = PodObs(
        "w00-lost", "gpu-n", "Failed", None, disruption="DeletionByTaintManager", devices=("GPU-0",)
    )
    return _a_wl(0, pods=(lost, replace(w.pods[0], devices=())))


def _a_pod_with(**pod: Any) -> AdmissionObs:
    """Workload 0 has its running pod and one more pod with these fields."""
    w = rw.admission().workloads[0]
    return _a_wl(0, pods=(*w.pods, PodObs("w00-other", "gpu-n", **pod)))


def _a_vacuous() -> AdmissionObs:
    return AdmissionObs((), (), 0, 0, observed_at=at(300), submitted={})


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


def _p_admitted_in_a_look_before_its_admission_time() -> PreemptionObs:
    """The preemptor seen Admitted at 62, in a look that says its admission happened at 70."""
    o = rw.preemption()
    early = replace(
        o.preemptor.snapshots[0],
        at=at(62),
        conditions=conds(cond("QuotaReserved", lt=70), cond("Admitted", lt=70)),
    )
    return _p(preemptor={"snapshots": (early, *o.preemptor.snapshots)})


def _p_victim_held_quota_after_its_release_time() -> PreemptionObs:
    """The victim seen holding its quota at 68, though a later look dates the release at 65."""
    o = rw.preemption()
    admitted, evicted = o.victim.snapshots
    return _p(victim={"snapshots": (admitted, replace(admitted, at=at(68)), evicted)})


def _p_preemptor_pod_started_while_it_was_evicted() -> PreemptionObs:
    """The preemptor evicted at 100 (seen at 102, its Job suspended), never admitted again; its pod started 110."""
    o = rw.preemption()
    admitted = o.preemptor.snapshots[-1]
    evicted = _evicted(admitted, 102, 100)
    pod = PodObs("high-pod", "gpu-n", "Running", Interval(at(110)))
    return _p(preemptor={"snapshots": (*o.preemptor.snapshots, evicted), "pods": (pod,)})


def _p_victim_already(ctype: str, reason: str) -> PreemptionObs:
    """The victim seen at 50, before the preemptor's submission at 60, already `ctype`."""
    admitted, evicted = rw.victim_snapshots()
    early = replace(
        admitted, at=at(50), conditions={**admitted.conditions, ctype: cond(ctype, "True", reason, 45)}
    )
    return _p(victim={"snapshots": (admitted, early, evicted)})


def _p_preemptor_pod_disrupted() -> PreemptionObs:
    pod = PodObs(
        "high-pod", "gpu-n", "Running", Interval(at(80)), evicted=True, disruption="EvictionByEvictionAPI"
    )
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


def _t_evicted_while_its_pod_ran() -> TimeSlicingObs:
    """Workload w0 seen evicted (its Job suspended) at 80, while its pod ran 60 to 100, re-admitted at 90."""
    o = rw.timeslicing()
    w = o.workloads[0]
    admitted = w.snapshots[0]
    evicted = _evicted(admitted, 80, 78)
    again = replace(
        admitted, at=at(92), conditions=conds(cond("QuotaReserved", lt=90), cond("Admitted", lt=90))
    )
    ws = (replace(w, snapshots=(admitted, evicted, again)), *o.workloads[1:])
    return replace(o, workloads=ws)


def _t_seen_waiting_after_its_admission_time() -> TimeSlicingObs:
    """A look at 55 shows w0 waiting and suspended; a later look says it was admitted since 50."""
    o = rw.timeslicing()
    w = o.workloads[0]
    waiting = replace(w.snapshots[0], at=at(55), conditions=conds(cond("QuotaReserved", "False", "Pending")),
                      has_admission=False, job_suspended=True)  # fmt: skip
    later = replace(w.snapshots[0], at=at(58))
    return replace(o, workloads=(replace(w, snapshots=(w.snapshots[0], waiting, later)), *o.workloads[1:]))


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
        holder=HolderObs("team-a", "cost-pod", "team-a", at(500), at(560), submitted_at=at(490)),
    )


# ---- act 7: diagnosis
def _d_first(**changes: Any) -> DiagnosisActObs:
    """The diagnosis of the admission situation (a Workload) with `changes`."""
    o = rw.diagnosis()
    ds = [replace(d, **changes) if d.first_cause == "admission" else d for d in o.diagnoses]
    return replace(o, diagnoses=tuple(ds))


def _d_evidence(tokens: tuple[str, ...]) -> DiagnosisActObs:
    o = rw.diagnosis()
    sits = list(o.situations)
    sits[0] = replace(sits[0], key_evidence=tokens)
    return DiagnosisActObs(tuple(sits), tuple(rw.diagnosis_of(s) for s in sits))


def _d_stranger() -> DiagnosisActObs:
    """The first diagnosis carries its built evidence and a holder of a namespace the act never made."""
    o = rw.diagnosis()
    first = o.diagnoses[0]
    extra = replace(first, key_evidence=(*first.key_evidence, "holder:team-z/not-ours"))
    return DiagnosisActObs(o.situations, (extra, *o.diagnoses[1:]))


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
    "c1 a run ending after the act's last look": Row(lambda: replace(_c_pod(running=Interval(at(70), at(4000))), observed_at=at(200)), "refused: ColdStartObs.pod.running.end is 2026-01-01T01:06:40\\+00:00, after the act's last look", "nothing recorded can postdate the last look"),
    "c1 a run dated 2099 and no last look given": Row(lambda: replace(rw.cold(), observed_at=None, pod=replace(rw.cold().pod, running=Interval(at(70), at(2_300_000_000)))), "refused: ColdStartObs.observed_at is not given", "without the act's last look no recorded time is held to anything"),
    "c1 local target: no marker and no GPU device given": Row(lambda: replace(_c_pod(devices=()), success_marker=None), "pod_succeeded_doing_gpu_work", "where no log can show GPU work, the device the kubelet gave is the proof"),
    "c1 node labelled one NodePool, its NodeClaim of another": Row(lambda: _c(nodeclaim_nodepool="mps-pool"), "refused: NodeObs gpu-a: labelled NodePool 'gpu-spot' but its NodeClaim nc-a is of 'mps-pool'", "a node's pool label and its claim's pool are facts of one object"),
    "c1 an EC2 node registered 20 s before its NodeClaim Launched": Row(lambda: _c(instance_id="i-0abc", nodeclaim_launched_at=at(50)), "node_is_new_and_launched_by_our_nodeclaim", "an instance's kubelet registers after the launch: a node before it is another instance"),
    "c1 a NodeClaim's pool read for no NodeClaim": Row(lambda: _c(nodeclaim=None), "refused: NodeObs gpu-a: \\['nodeclaim_nodepool', 'nodeclaim_created', 'nodeclaim_launched_at'\\] given for no NodeClaim", "facts of a claim that was not observed"),
    "c1 node deleted while the pod ran, the pod Succeeded after": Row(lambda: _c(deleted_at=at(80)), "pod_ran_on_that_node_after_it_was_ready", "no pod runs on a node that is gone"),
    "c1 GPU nodes at the start never listed": Row(lambda: replace(rw.cold(), gpu_nodes_at_start=None), "refused: ColdStartObs.gpu_nodes_at_start None", "a list never read cannot show zero"),
    "c1 an empty success marker": Row(lambda: replace(rw.cold(), success_marker=""), "refused: ColdStartObs.success_marker '': an empty marker is in every output", "an empty marker proves nothing"),
    "c1 Succeeded exit 0 after a node shutdown": Row(lambda: _c_pod(reason="NodeShutdown"), "pod_succeeded_doing_gpu_work", "the kubelet ended it for the node's shutdown: not a run to its end"),
    # act 2
    "a2 a leftover Workload of an earlier run counted, of a tenant not the act's": Row(lambda: _a_wl(11, name="adm-old-07", tenant="team-z", job="adm-old-07"), "every_job_has_one_workload", "twelve Workloads, but one is not a Job the act submitted"),
    "a2 every waiting Workload recorded as one tenant's": Row(lambda: replace(rw.admission(), workloads=tuple(replace(w, tenant="team-a") for w in rw.admission().workloads)), "every_job_has_one_workload", "the act submitted half its Jobs through each tenant's queue"),
    "a2 one card's UUID in two letter cases": Row(_a_two_cases, "admitted_ran_on_different_cards", "a UUID is one value in either case: one card"),
    "a2 three tenants, never at once": Row(_a_three_apart, "admitted_ran_at_once", "with three ClusterQueues the overlap is never checked"),
    "a2 three tenants, two on one card": Row(_a_three_shared_card, "admitted_ran_on_different_cards", "the intersection of all three misses a pair sharing a card"),
    "a2 a 'waiting' Workload Admitted without QuotaReserved": Row(_a_admitted_without_reservation, "refused: Admitted True while QuotaReserved is not set, which Kueue never writes", "Kueue admits only with the quota reserved: such a look is no Workload's status"),
    "a2 admission moved to another tenant's queue": Row(_a_later_other_cq, "one_admitted_per_cluster_queue", "only the first admission's ClusterQueue is compared with the tenant"),
    "a2 runs after the act's last look": Row(_a_future_runs, "refused: is 2026-01-01T00:06:40\\+00:00, after the act's last look 2026-01-01T00:05:00\\+00:00", "timestamps in the future were not observed running"),
    "a2 a run that ended before it started": Row(_a_impossible_interval, "refused: ends before it starts, which no run does", "an impossible interval is no evidence of running at once"),
    "a2 pod started while its Workload was evicted between two admissions": Row(_a_started_while_evicted, "pods_start_only_after_admission", "a pod that starts while its Workload is evicted was not gated by Kueue, whenever the first admission was"),
    "a2 empty device id": Row(lambda: _a_pod(0, devices=("",)), "refused: device id '' names no card", "an empty id names no card"),
    "a2 one pod recorded under both Workloads": Row(_a_one_pod_twice, "pods_start_only_after_admission", "one pod object cannot be two Jobs' pods: one Job showed none of its own"),
    "a2 all of nothing": Row(_a_vacuous, "every_job_has_one_workload", "no jobs, no Workloads: nothing was shown"),
    "a2 admitted Job still suspended while its pod ran": Row(lambda: _a_wl(0, snapshots=(replace(rw.admission().workloads[0].snapshots[0], job_suspended=True),)), "pods_start_only_after_admission", "a suspended Job has no running pods: the pod is not this Job's"),
    "a2 a run going on through a look showing its Workload evicted": Row(_a_evicted_while_its_pod_ran, "pods_start_only_after_admission", "an eviction ends the pods; one that runs on ran without quota"),
    "a2 a Job seen suspended while its pod ran": Row(_a_suspended_while_its_pod_ran, "pods_start_only_after_admission", "a suspended Job has no running pods, whenever it was unsuspended"),
    "a2 a waiting Workload evicted and requeued between two looks": Row(_a_waiting_one_held_quota_between_two_looks, "the_rest_never_held_quota_and_stayed_suspended", "Kueue evicts, preempts and requeues only what held quota"),
    "a2 a waiting Workload seen only at the start": Row(_a_seen_once_at_the_start, "every_job_has_one_workload", "a history that stops early says nothing of the rest of the window"),
    "a2 quota reserved in another tenant's queue before admission": Row(_a_reserved_in_another_tenant_s_queue, "one_admitted_per_cluster_queue", "a reservation is a charge too: ownership is every look's that held quota"),
    "a2 the card named only by a pod that never ran": Row(_a_replaced_pod_names_the_card, "admitted_ran_on_different_cards", "a device proves a card only for a run"),
    "a2 a crash read as replaced before running": Row(lambda: _a_pod_with(phase="Failed", exit_code=1, reason="Error", disruption="DeletionByTaintManager"), "admitted_pods_ran_healthy", "an exit code says the container ran: it crashed"),
    "a2 an OOM kill with no run recorded": Row(lambda: _a_pod_with(phase="Failed", exit_code=137, reason="OOMKilled"), "admitted_pods_ran_healthy", "a crash whose start was not seen is still a crash"),
    "a2 a crash loop with no run recorded": Row(lambda: _a_pod_with(phase="Failed", exit_code=1, reason="CrashLoopBackOff"), "admitted_pods_ran_healthy", "missing timing is no excuse"),
    "a2 a run in phase Unknown": Row(lambda: _a_pod_with(phase="Unknown", running=Interval(at(20))), "admitted_pods_ran_healthy", "Unknown is not a phase that ran: healthy is known good, not not-known-bad"),
    "a2 a Succeeded disrupted pod read as replaced": Row(lambda: _a_pod_with(phase="Succeeded", exit_code=0, disruption="EvictionByEvictionAPI"), "admitted_pods_ran_healthy", "Succeeded says it ran; the platform ended it"),
    # act 3
    "p3 ClusterQueues never observed": Row(lambda: _p_cq(None, None), "victim_preempted_for_the_policy_reason", "None == None is not one ClusterQueue"),
    "p3 both charged to another tenant's queue": Row(lambda: _p_cq("team-b", "team-b"), "victim_preempted_for_the_policy_reason", "InClusterQueue must be the tenant's own ClusterQueue"),
    "p3 cohort reclamation inside one queue": Row(lambda: _p_cq("team-a", "team-a", "InCohortReclamation", expected_reason="InCohortReclamation"), "victim_preempted_for_the_policy_reason", "reclaiming across the cohort needs two ClusterQueues"),
    "p3 preemptor's pod crashed": Row(_p_crashed, "preemptor_admitted_and_running", "a pod that failed at once is not a running preemptor"),
    "p3 preempted for another workload": Row(lambda: _p({"snapshots": rw.victim_snapshots(msg=rw.PREEMPTED_MSG.replace(rw.PREEMPTOR_UID, "uid-other"))}), "victim_preempted_for_the_policy_reason", "Kueue names the preemptor's UID; another one made room"),
    "p3 preemptor naming no UID": Row(lambda: _p({"snapshots": rw.victim_snapshots(msg="preempted")}), "victim_preempted_for_the_policy_reason", "which workload the victim made room for is unobserved"),
    "p3 preemptor admitted before the victim gave its quota back": Row(_p_quota_released_after_the_preemptor_was_admitted, "preemptor_admitted_only_after_the_eviction", "quota is free when the victim releases it, not when it is evicted"),
    "p3 submission clock naive": Row(lambda: _p(preemptor_submitted=at(60).replace(tzinfo=None)), "refused: PreemptionObs.preemptor_submitted is timezone-naive", "a naive clock cannot be ordered against condition times"),
    "p3 preemptor seen Admitted before its admission's own time": Row(_p_admitted_in_a_look_before_its_admission_time, "refused: Admitted True since 2026-01-01T00:01:10Z, after the look at 2026-01-01T00:01:02Z that shows it", "a look cannot show what had not happened yet"),
    "p3 victim seen holding quota after its release's own time": Row(_p_victim_held_quota_after_its_release_time, "refused: QuotaReserved was True at the look at 2026-01-01T00:01:08Z, though a later look says it has been False since 2026-01-01T00:01:05Z", "a stale release time would order the preemptor against the wrong event"),
    "p3 another tenant's preemptor admitted in the victim's queue": Row(lambda: _p(preemptor={"tenant": "team-b"}), "victim_preempted_for_the_policy_reason", "a Workload is charged to its own tenant's ClusterQueue, whichever role it plays"),
    "p3 preemptor's pod started while it was evicted": Row(_p_preemptor_pod_started_while_it_was_evicted, "preemptor_admitted_and_running", "the gate every Kueue act shares holds the preemptor too"),
    "p3 a preemptor admitted after the act's last look": Row(lambda: replace(rw.preemption(), observed_at=at(70)), "refused: after the act's last look 2026-01-01T00:01:10\\+00:00", "a look the act never took"),
    "p3 the victim already evicted before the preemptor came": Row(lambda: _p_victim_already("Evicted", "Preempted"), "victim_was_admitted_before_the_preemptor_came", "what followed was not this preemption"),
    "p3 the victim already finished before the preemptor came": Row(lambda: _p_victim_already("Finished", "Failed"), "victim_was_admitted_before_the_preemptor_came", "a finished Workload is preempted by nobody"),
    "p3 preemptor's only pod disrupted": Row(_p_preemptor_pod_disrupted, "preemptor_admitted_and_running", "a pod the platform ended is no run"),
    # act 4
    "t4 a pod running through its Workload's eviction": Row(_t_evicted_while_its_pod_ran, "each_pod_admitted_by_kueue_on_the_shared_flavor", "an eviction ends the pods; one that runs on ran without quota"),
    "t4 seen waiting after its admission's own time": Row(_t_seen_waiting_after_its_admission_time, "refused: Admitted was not set at the look at 2026-01-01T00:00:55Z, though a later look says it has been True since 2026-01-01T00:00:50Z", "a look after the admission cannot show the Workload waiting"),
    "t4 every pod on one MIG slice": Row(lambda: _t_pods(lambda i, p: replace(p, devices=("MIG-GPU-1/1/0",))), "each_pod_got_one_replica_of_one_uuid", "a MIG slice is a partition, not a time-sliced replica"),
    "t4 Workload looks after the act's last look": Row(lambda: _t_workloads(lambda i, p: replace(rw.ts_workload(i, (p,)), snapshots=tuple(replace(x, at=at(500)) for x in rw.ts_workload(i, (p,)).snapshots))), "refused: is 2026-01-01T00:08:20\\+00:00, after the act's last look", "a look the act never took"),
    "t4 a Workload running a second pod beside its counted one": Row(lambda: _t_workloads(lambda i, p: rw.ts_workload(i, (p, PodObs(f"{p.name}-b", "other", "Running", Interval(at(60)), devices=("GPU-2222",))) if i == 0 else (p,))), "each_pod_admitted_by_kueue_on_the_shared_flavor", "a Workload's uncounted pod holds a card too"),
    "t4 every Workload charged whole cards": Row(lambda: _t_workloads(lambda i, p: replace(rw.ts_workload(i, (p,)), snapshots=tuple(replace(x, admitted=(("nvidia.com/gpu", "gpu-shared"),)) for x in rw.ts_workload(i, (p,)).snapshots))), "each_pod_admitted_by_kueue_on_the_shared_flavor", "a whole card charged is not a replica"),
    "t4 flavor never observed": Row(lambda: _t_workloads(lambda i, p: rw.ts_workload(i, (p,), flavors=())), "each_pod_admitted_by_kueue_on_the_shared_flavor", "no ResourceFlavor seen is not the shared flavor"),
    "t4 one Workload owns two pods, one none": Row(_t_one_owns_two, "each_pod_admitted_by_kueue_on_the_shared_flavor", "each pod its own Workload: count per Workload"),
    "t4 admitted through another tenant's queue": Row(lambda: _t_workloads(lambda i, p: rw.ts_workload(i, (p,), cq="team-b")), "each_pod_admitted_by_kueue_on_the_shared_flavor", "charged ClusterQueue must be the submitting tenant's"),
    "t4 Workload re-created, new one never admitted": Row(_t_recreated, "each_pod_admitted_by_kueue_on_the_shared_flavor", "the admitted object is gone; its successor was not admitted"),
    "t4 node re-created after the pods ran": Row(lambda: _t(node=replace(rw.shared_node(), created=at(150))), "all_pods_on_that_node", "the observed node did not exist when the pods ran on that name"),
    "t4 Succeeded with no end, staggered": Row(lambda: _t_pods(lambda i, p: replace(p, running=Interval(at(60 + 50 * i)))), "all_ran_at_once", "no finish time read: 'still running' is invented"),
    "t4 runs after the last look": Row(lambda: _t_pods(lambda i, p: replace(p, running=Interval(at(400), at(440)))), "refused: after the act's last look", "future intervals were not observed"),
    "t4 Succeeded without an exit code": Row(lambda: _t_pods(lambda i, p: replace(p, exit_code=None)), "each_ran_to_success", "success unobserved"),
    "t4 a counted pod also named replaced": Row(lambda: _t(replaced=(replace(rw.timeslicing().pods[2], phase="Failed", running=None, exit_code=None, disruption="DeletionByTaintManager", evicted=True),)), "refused: TimeSlicingObs: pod ts-2 is both counted and named replaced", "a pod is a run or a replaced pod, not both"),
    "t4 a pod ended while running named replaced": Row(lambda: _t(replaced=(PodObs("ts-9", "gpu-ts", "Failed", Interval(at(40), at(60)), disruption="EvictionByEvictionAPI", evicted=True),)), "refused: TimeSlicingObs.replaced: pod ts-9 .* was not ended before it ran", "a pod ended while it ran is a failure the claim must see, not one set aside"),
    "t4 four Workloads of four tenants, each by its own queue": Row(lambda: _t_workloads(lambda i, p: replace(rw.ts_workload(i, (p,), cq=f"team-{i}"), tenant=f"team-{i}")), "each_pod_admitted_by_kueue_on_the_shared_flavor", "the act submitted every Job through one tenant's queue"),
    "t4 the shared node of another NodePool": Row(lambda: _t(node=replace(rw.shared_node(), labels={**rw.shared_node().labels, "karpenter.sh/nodepool": "gpu-mig"})), "node_advertises_one_gpu_as_n_replicas", "the replicas must be the act's shared pool's"),
    "t4 allocatable whole GPU beside the replicas": Row(lambda: _t(node=replace(rw.shared_node(), allocatable_gpu=1)), "no_whole_gpu_beside_the_replicas", "an allocatable whole card is handed out twice too"),
    # act 5
    "i5 SQS put failed": Row(lambda: _i(delivery_state="failed"), "warning_was_delivered", "only FIS was checked"),
    "i5 delivery unknown": Row(lambda: _i(delivery="", delivery_state=""), "warning_was_delivered", "no delivery observed at all"),
    "i5 replacement's NodePool of its claim unobserved": Row(lambda: _i_repl(nodeclaim_nodepool=None), "replacement_is_a_new_spot_node_of_ours", "missing claim ownership accepted"),
    "i5 replacement's NodeClaim older than the warning": Row(lambda: _i_repl(nodeclaim_created=at(50)), "replacement_is_a_new_spot_node_of_ours", "a claim made before the warning was not a replacement for it"),
    "i5 victim's run ended before the warning": Row(lambda: _i_pod(0, running=Interval(at(30), at(90))), "workload_evicted_through_the_eviction_api", "evicted before the warning: not because of it"),
    "i5 ran again but crashed": Row(lambda: _i_pod(1, phase="Failed", exit_code=1, running=Interval(at(160), at(161))), "workload_ran_again_on_the_replacement", "a crash is not running again"),
    "i5 the replacement is the interrupted instance under a new name": Row(lambda: _i(node=replace(rw.interruption().node, instance_id="i-0abc"), replacement=replace(rw.interruption().replacement, instance_id="i-0abc")), "replacement_is_a_new_spot_node_of_ours", "a new name, uid and NodeClaim on the same machine is not a new node"),
    "i5 the only pod on the node never ran": Row(lambda: _i_pod(0, running=None, exit_code=None), "workload_evicted_through_the_eviction_api", "nothing running: nothing drained"),
    "i5 the victim started after the warning": Row(lambda: _i_pod(0, running=Interval(at(104), at(110))), "workload_evicted_through_the_eviction_api", "a pod started after the warning was not running when it came"),
    "i5 Karpenter's events dated after the act's last look": Row(lambda: _i(events=tuple(replace(e, at=at(4000)) for e in rw.interruption().events), observed_at=at(300)), "refused: InterruptionObs.events\\[0\\].at is 2026-01-01T01:06:40\\+00:00", "an event after the last look was not seen by the act"),
    "i5 Karpenter's events dated 2099 and no last look given": Row(lambda: replace(rw.interruption(), observed_at=None, events=tuple(replace(e, at=at(2_300_000_000)) for e in rw.interruption().events)), "refused: InterruptionObs.observed_at is not given", "without the act's last look no recorded time is held to anything"),
    "i5 the pod on the replacement disrupted": Row(lambda: _i_pod(1, evicted=True, disruption="EvictionByEvictionAPI"), "workload_ran_again_on_the_replacement", "a pod the platform ended is not running again"),
    "i5 replacement deleted before the pod ran": Row(lambda: _i_repl(deleted_at=at(155)), "workload_ran_again_on_the_replacement", "the pod ran on a name whose node was going away: not that node"),
    "i5 interrupted node's claim NodePool unobserved": Row(lambda: _i(node=replace(rw.interruption().node, nodeclaim_nodepool=None)), "nodeclaim_of_the_node_deleted", "missing ownership accepted"),
    # act 6
    "k6 GPU_UTIL stored as a ratio": Row(lambda: _k(records=tuple(rw.record(s, util=0.8) for s in (60, 120, 180))), "sm_active_within_gpu_util", "units: 0.8 % cannot carry SM_ACTIVE 0.46"),
    "k6 SM_ACTIVE stored as a percentage": Row(lambda: _k(records=tuple(rw.record(s, sm=45.82) for s in (60, 120, 180)), expected_sm_active=None), "sm_active_is_the_ratio_the_load_ran_at", "units: a percentage where a ratio belongs"),
    "k6 all of nothing": Row(lambda: _k(records=(), min_records=0, holdings={}), "enough_consecutive_records", "zero records, zero required"),
    "k6 pod held twice, first for another tenant": Row(lambda: _k_holdings((rw.holding("team-b"), rw.holding())), "holdings_name_the_acts_pod", "duplicate holding: counted twice, one misattributed"),
    "k6 pod named as holder after it finished": Row(_k_held_after, "holdings_name_the_acts_pod", "a finished pod holds no GPU: misattribution"),
    "k6 holder ends before it starts": Row(lambda: _k(holder=HolderObs("team-a", "cost-pod", "team-a", at(130), at(125), submitted_at=at(60))), "holdings_name_the_acts_pod", "an impossible span overlaps whatever"),
    "k6 load ran outside every record, SM all zero": Row(_k_load_outside, "sm_active_seen_while_the_load_ran", "no interval to judge is no evidence, not a pass"),
    "k6 node deleted before it was created": Row(lambda: _k(node_deleted=at(-10)), "instance_seconds_match_the_node_life", "an impossible life"),
    "k6 the act's pod holding a quarter card": Row(lambda: _k_holdings(({**rw.holding(), "replicas": 4},)), "holdings_name_the_acts_pod", "a replica of a time-sliced card bills a quarter of it"),
    "k6 the act's pod holding a replica device": Row(lambda: _k_holdings(({**rw.holding(), "devices": ["GPU-1111::0"]},)), "holdings_name_the_acts_pod", "a replica is not the whole card the Job asked for"),
    "k6 a second tenant's pod holding the one card": Row(lambda: _k_holdings((rw.holding(), {**rw.holding("team-b"), "namespace": "team-b", "pod": "other"})), "holdings_name_the_acts_pod", "one card billed to two holders"),
    "k6 the act's pod held none of the interval": Row(lambda: _k_holdings(({**rw.holding(), "start": rw.iso(130)},)), "holdings_name_the_acts_pod", "a holding that begins after the interval bills nothing of it"),
    "k6 a holding with no start": Row(lambda: _k_holdings(({k: v for k, v in rw.holding().items() if k != "start"},)), "holdings_name_the_acts_pod", "missing data is no holding"),
    "k6 records of two machines under one node name": Row(lambda: _k(records=tuple({**r, "ResourceId": f"i-{i}"} for i, r in enumerate(rw.cost().records))), "records_are_of_the_node", "a node re-created under its name is another machine"),
    "k6 the act's pod held an hour before its Job existed": Row(lambda: _k(holdings={**rw.cost().holdings, rw.iso(-3600): (rw.holding(),)}), "holdings_name_the_acts_pod", "nothing of a Job held a GPU before the Job was created"),
    "k6 GPU_UTIL from one card of a node of two, marked ok": Row(lambda: _k(records=tuple({**r, "x_GpuCount": 2, "x_GpusReporting": 2, "x_GpusReportingSmActive": 2} for r in rw.cost().records)), "every_figure_from_every_gpu", "a figure from some of the node's cards is not the node's"),
    "k6 the act's pod never observed": Row(lambda: _k(holder=None), "holdings_name_the_acts_pod", "whom the collector should name is unknown: nothing is checked"),
    "k6 no load said to have run, SM_ACTIVE and GPU_UTIL zero throughout": Row(lambda: _k(compute_load=False, records=tuple(rw.record(s, sm=0.0, util=0.0) for s in (60, 120, 180)), expected_sm_active=None), "sm_active_seen_while_the_load_ran", "zeros are idle silicon or a metric never there; only a known load tells them apart"),
    "k6 a holder naming nobody": Row(lambda: _k(holder=HolderObs("", "", "", at(70), submitted_at=at(60))), "refused: HolderObs \\['namespace', 'pod', 'tenant'\\] empty", "empty names match each other"),
    "k6 a holder of no GPU": Row(lambda: _k(holder=HolderObs("team-a", "cost-pod", "team-a", at(70), gpus=0, submitted_at=at(60))), "refused: HolderObs.gpus 0", "a holder of nothing proves no holding"),
    # act 7
    "d7 a Workload's target diagnosed as a pod of its name": Row(lambda: _d_first(kind="pod"), "each_target_diagnosed_once", "a namesake pod is not the Workload built"),
    "d7 the diagnosis's own order not the checks'": Row(lambda: _d_first(order=("placement", "admission", "allocation", "memory", "application")), "checks_come_in_the_diagnosis_order", "the order it says it used must be the one shown"),
    "d7 empty evidence token": Row(lambda: _d_evidence(("",)), "first_finding_carries_its_evidence", "an empty token is always 'carried'"),
    "d7 token naming nothing": Row(lambda: _d_evidence(("holder:",)), "first_finding_carries_its_evidence", "a token with no object names none of the act's"),
    "d7 token naming a namespace and no pod": Row(lambda: _d_evidence(("holder:team-a/",)), "first_finding_carries_its_evidence", "a holder token must name the pod, not only its namespace"),
    "d7 a holder of another namespace beside the built ones": Row(_d_stranger, "first_finding_carries_its_evidence", "the finding rests on a pod the act did not build"),
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
