"""Act 2 (quota admission): holding worlds and their near-misses."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import strategies as st

from assertions.admission import AdmissionObs
from assertions.observed import Interval, PodObs, WorkloadObs, WorkloadSnapshot
from tests.assertions.near_misses import Break
from tests.assertions.tables import cond, seen_until, t

TENANTS = ("team-a", "team-b")


def admitted_wl(name: str, tenant: str, admitted: float, start: float, device: str) -> WorkloadObs:
    snap = WorkloadSnapshot(
        t(admitted + 1),
        {"QuotaReserved": cond("QuotaReserved", "True"), "Admitted": cond("Admitted", "True", at=t(admitted))},
        True, False, cluster_queue=tenant, flavors=("gpu-spot",), uid=f"uid-{name}",
    )  # fmt: skip
    return WorkloadObs(name, tenant, snapshots=(snap,),
                       pods=(PodObs(f"{name}-pod", "gpu-a", "Running", Interval(t(start)), devices=(device,)),),
                       job=name)  # fmt: skip


def pending_wl(name: str, tenant: str, tried: bool) -> WorkloadObs:
    conds = {"QuotaReserved": cond("QuotaReserved", "False", "Pending")} if tried else {}
    return WorkloadObs(
        name, tenant, snapshots=(WorkloadSnapshot(t(5), conds, False, True, uid=f"uid-{name}"),), job=name
    )


@st.composite
def holding(draw: st.DrawFn) -> AdmissionObs:
    per_tenant = draw(st.integers(2, 6))
    admitted_at = [draw(st.integers(0, 60)) for _ in TENANTS]
    starts = [a + draw(st.integers(0, 60)) for a in admitted_at]
    running = [
        admitted_wl(f"{tn}-0", tn, a, s, f"GPU-{i}")
        for i, (tn, a, s) in enumerate(zip(TENANTS, admitted_at, starts, strict=True))
    ]
    waiting = [
        pending_wl(f"{tn}-{i}", tn, draw(st.booleans())) for tn in TENANTS for i in range(1, per_tenant)
    ]
    world = (*running, *waiting)
    order = draw(st.permutations(range(len(world))))
    last = t(max(starts) + 30)
    return AdmissionObs(seen_until((world[i] for i in order), last), TENANTS, expected_total=len(world),
                        expected_admitted=len(TENANTS), observed_at=last,
                        submitted={w.job: w.tenant for w in world})  # fmt: skip


def admitted(o: AdmissionObs) -> list[WorkloadObs]:
    return [w for w in o.workloads if w.snapshots[0].has_admission]


def waiting(o: AdmissionObs) -> list[WorkloadObs]:
    return [w for w in o.workloads if not w.snapshots[0].has_admission]


def swap(o: AdmissionObs, old: WorkloadObs, new: WorkloadObs) -> AdmissionObs:
    return replace(o, workloads=tuple(new if w is old else w for w in o.workloads))


def first_admitted(o: AdmissionObs, fn) -> AdmissionObs:
    w = admitted(o)[0]
    return swap(o, w, fn(w))


def first_waiting(o: AdmissionObs, fn) -> AdmissionObs:
    w = waiting(o)[0]
    return swap(o, w, fn(w))


def snap(w: WorkloadObs, **changes) -> WorkloadObs:
    """Every look at the Workload changed alike (its look at the act's end included)."""
    return replace(w, snapshots=tuple(replace(s, **changes) for s in w.snapshots))


def pod(w: WorkloadObs, **changes) -> WorkloadObs:
    return replace(w, pods=(replace(w.pods[0], **changes),))


def admitted_at(w: WorkloadObs):
    return w.snapshots[0].conditions["Admitted"].last_transition


def admit_later(w: WorkloadObs) -> WorkloadObs:
    """Kueue admitted it 30 s after its pod was already Running."""
    late = w.pods[0].running.start + timedelta(seconds=30)
    conds = {**w.snapshots[0].conditions, "Admitted": cond("Admitted", "True", at=late)}
    return snap(w, conditions=conds, at=late)  # seen when it changed: a look cannot predate what it shows


def both_disjoint(o: AdmissionObs) -> AdmissionObs:
    a, b = admitted(o)
    a2 = pod(a, running=Interval(a.pods[0].running.start, a.pods[0].running.start + timedelta(seconds=5)))
    b2 = pod(b, running=Interval(a.pods[0].running.start + timedelta(seconds=10)),
             phase="Running")  # fmt: skip
    b2 = replace(b2, snapshots=(replace(b2.snapshots[0], conditions={**b2.snapshots[0].conditions,
                 "Admitted": cond("Admitted", "True", at=min(admitted_at(b), a.pods[0].running.start))}),))  # fmt: skip
    return swap(swap(o, a, a2), b, b2)


def recreated(w: WorkloadObs) -> WorkloadObs:
    return replace(
        w,
        snapshots=(
            *w.snapshots,
            replace(w.snapshots[-1], at=w.snapshots[-1].at + timedelta(seconds=1), uid="uid-new"),
        ),
    )


BREAKS = (
    Break("every_job_has_one_workload", "count", "a Workload missing", lambda o: replace(o, workloads=o.workloads[:-1])),
    Break("every_job_has_one_workload", "count", "one Workload recorded twice",
          lambda o: replace(o, workloads=(*o.workloads[:-1], o.workloads[0]))),
    Break("every_job_has_one_workload", "identity", "a Workload deleted and re-created under its name",
          lambda o: first_waiting(o, recreated)),
    Break("every_job_has_one_workload", "identity", "two names, one uid",
          lambda o: first_waiting(o, lambda w: snap(w, uid=f"uid-{admitted(o)[0].name}"))),
    Break("every_job_has_one_workload", "ownership", "a leftover Workload of a Job the act did not submit",
          lambda o: first_waiting(o, lambda w: replace(w, job="adm-old-07"))),
    Break("every_job_has_one_workload", "ownership", "a Workload recorded under the other tenant than its Job's",
          lambda o: first_waiting(o, lambda w: replace(w, tenant=next(t for t in TENANTS if t != w.tenant)))),
    Break("every_job_has_one_workload", "provenance", "a Workload's Job not observed",
          lambda o: first_waiting(o, lambda w: replace(w, job=None))),
    Break("every_job_has_one_workload", "provenance", "a uid not observed",
          lambda o: first_waiting(o, lambda w: snap(w, uid=None))),
    Break("no_workload_finished_in_the_window", "time", "an admitted Workload Finished in the window",
          lambda o: first_admitted(o, lambda w: snap(w, conditions={**w.snapshots[0].conditions,
                                                                     "Finished": cond("Finished", "True")}))),
    Break("exactly_n_admitted", "count", "a third admitted",
          lambda o: first_waiting(o, lambda w: admitted_wl(w.name, w.tenant, 1, 2, "GPU-9"))),
    Break("exactly_n_admitted", "count", "only one admitted",
          lambda o: first_admitted(o, lambda w: pending_wl(w.name, w.tenant, True))),
    Break("one_admitted_per_cluster_queue", "ownership", "charged to the other tenant's ClusterQueue",
          lambda o: first_admitted(o, lambda w: snap(w, cluster_queue=next(x for x in TENANTS if x != w.tenant)))),
    Break("one_admitted_per_cluster_queue", "provenance", "no clusterQueue in status.admission",
          lambda o: first_admitted(o, lambda w: snap(w, cluster_queue=None))),
    Break("pods_start_only_after_admission", "time", "Running before Kueue admitted it", lambda o: first_admitted(o, admit_later)),
    Break("admitted_pods_ran_healthy", "state", "the admitted pod crashed",
          lambda o: first_admitted(o, lambda w: pod(w, phase="Failed", exit_code=1))),
    Break("admitted_pods_ran_healthy", "state", "the admitted pod disrupted by the platform, exit 0",
          lambda o: first_admitted(o, lambda w: pod(w, disruption="PreemptionByScheduler", evicted=True))),
    Break("admitted_ran_at_once", "time", "the two ran one after the other", both_disjoint),
    Break("admitted_ran_on_different_cards", "identity", "both on one card",
          lambda o: first_admitted(o, lambda w: pod(w, devices=admitted(o)[1].pods[0].devices))),
    Break("admitted_ran_on_different_cards", "provenance", "no device observed",
          lambda o: first_admitted(o, lambda w: pod(w, devices=()))),
    Break("the_rest_never_held_quota_and_stayed_suspended", "state", "a waiting Job unsuspended",
          lambda o: first_waiting(o, lambda w: snap(w, job_suspended=False))),
    Break("the_rest_never_held_quota_and_stayed_suspended", "provenance", "a waiting Job's suspend not observed",
          lambda o: first_waiting(o, lambda w: snap(w, job_suspended=None))),
    Break("the_rest_never_held_quota_and_stayed_suspended", "state", "QuotaReserved True without Admitted",
          lambda o: first_waiting(o, lambda w: snap(w, conditions={"QuotaReserved": cond("QuotaReserved", "True")}))),
    Break("the_rest_never_held_quota_and_stayed_suspended", "state", "a waiting Workload's pod exists",
          lambda o: first_waiting(o, lambda w: replace(w, pods=(PodObs(f"{w.name}-pod", None, "Pending"),)))),
    Break("the_rest_never_held_quota_and_stayed_suspended", "provenance", "a Workload never observed",
          lambda o: first_waiting(o, lambda w: replace(w, snapshots=()))),
)  # fmt: skip
