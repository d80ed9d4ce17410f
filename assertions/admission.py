"""Act 2: of twelve jobs, exactly two admitted, one per tenant, both running at once on different cards; the
rest queued. Decided over the whole observation window, never from the last snapshot alone.

| clause | identity | ownership | time order | count | provenance | target |
|---|---|---|---|---|---|---|
| every_job_has_one_workload | one uid per Workload name, no uid twice; each Workload's Job (its ownerReference) one the act submitted, one Workload each | the tenant the act submitted its Job through | each seen in the act's last look at its Workloads (its history covers the window) | exactly the jobs submitted (>= 1, for >= 1 tenant), no duplicates | recorded snapshots | same |
| no_workload_finished_in_the_window | per Workload | - | over the whole window | none | Finished condition | same |
| exactly_n_admitted | per Workload | - | ever, in any snapshot | exactly n | QuotaReserved and Admitted True together | same |
| one_admitted_per_cluster_queue | per Workload | the ClusterQueue Kueue charged = the tenant that submitted it, in every snapshot that held quota (QuotaReserved, Admitted or status.admission); one each | - | one per tenant | status.admission.clusterQueue | same |
| pods_start_only_after_admission | pods recorded under their Workload's Job, no pod under two Workloads | the Workload's own pods; its Job seen unsuspended | Running start inside a stretch the Workload was admitted (whole seconds: not before the first admission, not while evicted between two); no look taken while a pod ran shows its Workload not admitted or its Job suspended | every pod | Admitted lastTransitionTime, else the first snapshot showing it | same |
| admitted_pods_ran_healthy | per pod | - | - | >= 1 healthy run each: not crashed, not disrupted (DisruptionTarget, eviction or a platform reason); a pod ended by the platform before it ran is its Job's to replace, named in the evidence | container status, pod conditions | same |
| admitted_ran_at_once | per pod | - | one moment every admitted Workload ran; each run possible (end >= start) and before the act's last look | any number of tenants | recorded intervals | same |
| admitted_ran_on_different_cards | device ids of the runs only (a replaced or pending pod's device proves nothing; an empty id is no device) | - | - | >= 1 device each, no card shared by any pair | kubelet pod-resources (local) / NVIDIA_VISIBLE_DEVICES (AWS) | same clause, different observers |
| the_rest_never_held_quota_and_stayed_suspended | per Workload | - | over the whole window, and between looks (Evicted, Preempted or Requeued True says it held quota) | every waiting one | QuotaReserved, Admitted, status.admission, Evicted, Preempted, Requeued, Job spec.suspend, pods | same |
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from itertools import combinations

from assertions.clauses import Miss, before, compose, possible, require_aware, require_not_after, stamp
from assertions.observed import Interval, WorkloadObs
from assertions.verdict import Verdict
from gpu_finops.model import holding, workload
from gpu_finops.model.workload import ADMITTED, EVICTED, FINISHED, PREEMPTED, QUOTA_RESERVED, REQUEUED

CLAIM = (
    "two of twelve admitted, one per tenant, both running at once on different GPUs; the other ten wait in "
    "Kueue"
)


@dataclass(frozen=True)
class AdmissionObs:
    workloads: tuple[WorkloadObs, ...]
    tenants: tuple[str, ...]  # the tenants' ClusterQueues (one per tenant, named as the tenant)
    expected_total: int = 12
    expected_admitted: int = 2
    observed_at: datetime | None = None
    # the Jobs the act submitted, each to the tenant whose queue it went through: each Workload is matched to
    # one of them by its ownerReference, so a leftover or another's Workload is not counted as the act's
    submitted: Mapping[str, str] = field(kw_only=True)

    def __post_init__(self) -> None:
        require_aware(self)
        require_not_after(self, self.observed_at)
        if len(self.submitted) != self.expected_total:
            raise ValueError(
                f"AdmissionObs: {len(self.submitted)} Jobs named as submitted, {self.expected_total} expected: "
                "the act names every Job it submitted"
            )


def _ever_admitted(w: WorkloadObs) -> bool:
    return any(s.is_(QUOTA_RESERVED) and s.is_(ADMITTED) for s in w.snapshots)


def admitted(o: AdmissionObs) -> list[WorkloadObs]:
    """The Workloads admitted in any snapshot of the window: an admission that came and went still counts."""
    return [w for w in o.workloads if _ever_admitted(w)]


def waiting(o: AdmissionObs) -> list[WorkloadObs]:
    return [w for w in o.workloads if not _ever_admitted(w)]


def healthy_runs(w: WorkloadObs) -> list[Interval]:
    """Running intervals of the Workload's pods that count as runs (PodObs.healthy_run)."""
    return [p.healthy_run for p in w.pods if p.healthy_run is not None]


def cards(w: WorkloadObs) -> set[str]:
    """The physical GPUs the Workload's runs were given (a time-sliced id names its card first): only pods that
    ran count, so a replaced or pending pod's device proves nothing."""
    return holding.cards([d for p in w.pods if p.healthy_run is not None for d in p.devices])


def _each_of_a_submitted_job(o: AdmissionObs, want: str) -> list[Miss]:
    """Each Workload's Job (its ownerReference) one the act submitted, through the tenant it is recorded under;
    each submitted Job with one Workload."""
    misses = []
    by_job: dict[str, list[str]] = {}
    for w in o.workloads:
        if w.job is None:
            misses.append(Miss(want, f"workload {w.name}'s Job (its ownerReference) was not observed"))
        elif w.job not in o.submitted:
            misses.append(
                Miss(
                    want,
                    f"workload {w.name} belongs to Job {w.job}, which the act did not submit: not the act's",
                )
            )
        elif o.submitted[w.job] != w.tenant:
            misses.append(
                Miss(
                    want,
                    f"workload {w.name} of Job {w.job} is recorded as tenant {w.tenant}'s, but the act submitted "
                    f"that Job through {o.submitted[w.job]}'s queue",
                )
            )
        if w.job is not None:
            by_job.setdefault(w.job, []).append(w.name)
    twice = {j: names for j, names in by_job.items() if len(names) > 1}
    none = sorted(set(o.submitted) - set(by_job))
    if none:
        misses.append(Miss(want, f"submitted Jobs with no Workload: {none}"))
    if twice:
        misses.append(Miss(want, f"Jobs with more than one Workload: {twice}"))
    return misses


def every_job_has_one_workload(o: AdmissionObs) -> list[Miss]:
    want = f"{o.expected_total} Workloads, one uid each"
    misses = []
    if o.expected_total < 1 or not o.tenants:
        misses.append(
            Miss(
                want, f"{o.expected_total} jobs for tenants {list(o.tenants)}: nothing was submitted to check"
            )
        )
    names = [w.name for w in o.workloads]
    if len(o.workloads) != o.expected_total or len(set(names)) != len(names):
        misses.append(Miss(want, f"observed {len(o.workloads)} workloads, expected {o.expected_total}"))
    for w in o.workloads:
        if len(w.uids) != 1 or w.uids[0] is None:
            misses.append(
                Miss(
                    want,
                    f"workload {w.name} was seen with uids {list(w.uids)}: deleted and re-created "
                    "(or its uid not observed), so its history is not one object's",
                )
            )
    # the act's last look at its Workloads is the latest look at any of them: each must be in it (a history that
    # stops earlier says nothing of the rest of the window)
    lasts = {w.name: w.last.at for w in o.workloads if w.last is not None}
    if lasts:
        last_look = max(lasts.values())
        for name, last in sorted(lasts.items()):
            if before(last, last_look):
                misses.append(
                    Miss(
                        want,
                        f"workload {name} was last seen at {stamp(last)}, before the act's last look at its "
                        f"Workloads {stamp(last_look)}: its history does not cover the window",
                    )
                )
    misses += _each_of_a_submitted_job(o, want)
    uids = [w.uids[0] for w in o.workloads if len(w.uids) == 1 and w.uids[0] is not None]
    if len(set(uids)) != len(uids):
        misses.append(Miss(want, f"one uid recorded under two names: {sorted(uids)}"))
    return misses


def no_workload_finished_in_the_window(o: AdmissionObs) -> list[Miss]:
    finished = [w.name for w in o.workloads if any(s.is_(FINISHED) for s in w.snapshots)]
    if not finished:
        return []
    return [
        Miss(
            "no Workload Finished while observed",
            f"workloads Finished during the observation ({finished}): their quota was handed on, so the "
            "admissions seen are not one steady state",
        )
    ]


def exactly_n_admitted(o: AdmissionObs) -> list[Miss]:
    got = admitted(o)
    if len(got) == o.expected_admitted:
        return []
    return [
        Miss(
            f"exactly {o.expected_admitted} admitted",
            f"{len(got)} admitted during the observation ({[w.name for w in got]}), expected exactly "
            f"{o.expected_admitted}",
        )
    ]


def one_admitted_per_cluster_queue(o: AdmissionObs) -> list[Miss]:
    """The tenant is the ClusterQueue Kueue charged, and it must be the tenant that submitted the job."""
    got = admitted(o)
    charged = sorted(w.admitted_by or "<no clusterQueue in status.admission>" for w in got)
    want = f"one admitted each of {sorted(o.tenants)}, charged to its own tenant"
    misses = []
    if sorted(set(charged)) != sorted(o.tenants) or len(set(charged)) != len(charged):
        misses.append(
            Miss(want, f"admitted per ClusterQueue {charged}, expected one each of {sorted(o.tenants)}")
        )
    for w in got:
        held = [s for s in w.snapshots if s.is_(ADMITTED) or s.is_(QUOTA_RESERVED) or s.has_admission]
        queues = sorted({s.cluster_queue or "?" for s in held} - {w.tenant})
        if queues:
            misses.append(
                Miss(want, f"{w.name} was submitted by {w.tenant} but admitted in ClusterQueue(s) {queues}")
            )
    return misses


def pods_start_only_after_admission(o: AdmissionObs) -> list[Miss]:
    """Kueue gates a Job by keeping it suspended: no pod of it may run before its Workload was admitted."""
    owners = Counter(p.name for w in o.workloads for p in w.pods)
    misses = [
        Miss(
            "each pod its own Job's",
            f"pod {name} is recorded under {n} Workloads: one pod object cannot be two Jobs' pods",
        )
        for name, n in sorted(owners.items())
        if n > 1
    ]
    for w in admitted(o):
        at = w.since(ADMITTED)
        if workload.unsuspended_before_its_pods_ran(w.snapshots, any(p.running for p in w.pods)):
            misses.append(
                Miss(
                    f"{w.name}'s Job unsuspended by Kueue before its pods ran",
                    f"{w.name}'s Job was never seen unsuspended, yet pods ran: they are not this Job's "
                    "admitted pods",
                )
            )
        for p in w.pods:
            if p.running is not None and at is not None and before(p.running.start, at):
                misses.append(
                    Miss(
                        f"{w.name}'s pods Running only after Admitted",
                        f"pod {p.name} of {w.name} was Running at {stamp(p.running.start)}, before Kueue "
                        f"admitted {w.name} at {stamp(at)}: Kueue did not gate it",
                    )
                )
            elif p.running is not None and at is not None:
                misses += [
                    Miss(
                        f"{w.name}'s pods Running only while Admitted", f"{v.observed}: Kueue did not gate it"
                    )
                    for v in workload.ran_only_while_admitted(w.snapshots, [(p.name, p.running.start)])
                ] + [
                    Miss(
                        f"{w.name}'s pods Running only while Admitted",
                        f"{v.observed}: it ran on after its quota was taken back",
                    )
                    for v in workload.admitted_while_running(
                        w.snapshots, [(p.name, p.running.start, p.running.end)]
                    )
                ]
    return misses


def replaced_before_running(o: AdmissionObs) -> dict[str, str]:
    """Pods of admitted Workloads the platform ended before they ran (the taint-eviction controller on a new
    node, say): the Job made another, so they are no run and no crash, only named in the evidence."""
    return {p.name: why for w in admitted(o) for p in w.pods if (why := p.ended_before_it_ran)}


def admitted_pods_ran_healthy(o: AdmissionObs) -> list[Miss]:
    misses = []
    for w in admitted(o):
        want = f"{w.name} Running without crashing"
        failed = [f"{p.name} ({why})" for p in w.pods if (why := p.failure)]
        if failed:
            misses.append(
                Miss(
                    want,
                    f"admitted workload {w.name}'s pod crashed or was ended by the platform, not run: {failed}",
                )
            )
        if not healthy_runs(w):
            misses.append(Miss(want, f"admitted workload {w.name} never had a healthy Running pod"))
    return misses


def admitted_ran_at_once(o: AdmissionObs) -> list[Miss]:
    runs = {w.name: healthy_runs(w) for w in admitted(o)}
    if len(runs) < 2 or not all(runs.values()):
        return []  # the count and health clauses say what is missing
    now = o.observed_at
    bad = [f"{name}: {why}" for name, ivs in runs.items() for iv in ivs if (why := possible(iv, now))]
    if bad:
        return [Miss("runs that really happened, before the act's last look", f"impossible runs: {bad}")]
    # a moment every admitted Workload was Running: some run's start inside a run of each of the others
    starts = sorted(iv.start for ivs in runs.values() for iv in ivs)
    if any(all(any(iv.start <= m < (iv.end or now) for iv in ivs) for ivs in runs.values()) for m in starts):
        return []
    return [
        Miss(
            "all Running at once",
            f"{sorted(runs)} were admitted but never Running at the same time (all at once)",
        )
    ]


def admitted_ran_on_different_cards(o: AdmissionObs) -> list[Miss]:
    misses = []
    seen = {w.name: cards(w) for w in admitted(o)}
    for name, devices in seen.items():
        if not devices:
            misses.append(
                Miss(
                    "a GPU device per admitted pod",
                    f"no GPU device was observed for {name}'s pod: which card it ran on is unproven",
                )
            )
    for w in admitted(o):
        bare = [p.name for p in w.pods if p.healthy_run is not None and not p.devices]
        if bare and seen[w.name]:
            misses.append(
                Miss(
                    "a GPU device per admitted pod",
                    f"{w.name}'s runs {bare} have no GPU device observed beside runs on {sorted(seen[w.name])}: "
                    "which card each ran on is unproven",
                )
            )
    for (a, cards_a), (b, cards_b) in combinations(sorted(seen.items()), 2):
        shared = sorted(cards_a & cards_b)
        if shared:
            misses.append(
                Miss(
                    "a different card each",
                    f"the admitted workloads {a} and {b} ran on the same physical GPU {shared}: one card, "
                    "not two",
                )
            )
    return misses


def the_rest_never_held_quota_and_stayed_suspended(o: AdmissionObs) -> list[Miss]:
    misses = []
    for w in waiting(o):
        want = f"{w.name} pending: never holding quota, its Job suspended, no pods"
        if not w.snapshots:
            misses.append(Miss(want, f"workload {w.name} was never observed"))
            continue
        held = next(
            (s for s in w.snapshots if s.is_(QUOTA_RESERVED) or s.is_(ADMITTED) or s.has_admission), None
        )
        if held is not None:
            misses.append(
                Miss(
                    want,
                    f"{w.name} held quota at {stamp(held.at)} (QuotaReserved, Admitted or "
                    "status.admission) without being counted admitted (QuotaReserved and Admitted)",
                )
            )
        # Evicted, Preempted and Requeued are written only on a Workload that held quota (Kueue evicts and
        # preempts admitted Workloads and requeues evicted ones): one that says so held it between two looks
        was = next(((s, c) for s in w.snapshots for c in (EVICTED, PREEMPTED, REQUEUED) if s.is_(c)), None)
        if was is not None:
            s, c = was
            misses.append(
                Miss(
                    want,
                    f"{w.name} was {c} at the look at {stamp(s.at)} ({s.conditions[c].reason}): it held quota "
                    "between two looks, so it is not one that waited throughout",
                )
            )
        # Kueue sets QuotaReserved=False only on workloads it tried to admit; those queued behind them have
        # no such condition yet. Both are pending; any other state is not.
        reserved = w.snapshots[-1].conditions.get(QUOTA_RESERVED)
        if reserved is not None and reserved.status != "False":
            misses.append(
                Miss(
                    want,
                    f"{w.name} is not pending in Kueue: QuotaReserved is {reserved.status}, "
                    "expected False or not set",
                )
            )
        if any(s.job_suspended is not True for s in w.snapshots) or w.pods:
            misses.append(
                Miss(
                    want, f"{w.name} reached the scheduler (Job unsuspended or pods exist) without admission"
                )
            )
    return misses


CLAUSES = (
    every_job_has_one_workload,
    no_workload_finished_in_the_window,
    exactly_n_admitted,
    one_admitted_per_cluster_queue,
    pods_start_only_after_admission,
    admitted_pods_ran_healthy,
    admitted_ran_at_once,
    admitted_ran_on_different_cards,
    the_rest_never_held_quota_and_stayed_suspended,
)


def check_admission(o: AdmissionObs) -> Verdict:
    """Act 2's claim: every clause of `CLAUSES` over the window's recorded Workloads."""
    got, rest = admitted(o), waiting(o)
    charged = sorted(w.admitted_by or "?" for w in got)
    return compose(
        CLAIM,
        f"exactly {o.expected_admitted} of {o.expected_total} admitted over the window, one per ClusterQueue "
        f"{sorted(o.tenants)}, Running concurrently without crashing on different GPU UUIDs, each after its "
        "admission; the rest never held quota (QuotaReserved False or not set), Jobs suspended",
        CLAUSES,
        o,
        lambda: (
            f"admitted {[w.name for w in got]} by {charged}, running concurrently on "
            f"{[sorted(cards(w)) for w in got]}; {len(rest)} pending"
        ),
        admitted=[w.name for w in got],
        cluster_queues=charged,
        cards={w.name: sorted(cards(w)) for w in got},
        pending=[w.name for w in rest],
        replaced=replaced_before_running(o),
    )
