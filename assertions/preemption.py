"""Act 3: a high-priority job evicts a low-priority one; the victim is requeued, not killed.

| clause | identity | ownership | time order | count | provenance | target |
|---|---|---|---|---|---|---|
| preemptor_outranks_victim | the two Workloads | - (priority classes are cluster-wide) | - | - | spec.priority, observed | same |
| victim_is_one_workload_throughout | one metadata.uid over every snapshot, not the preemptor's | - | the whole window | one uid each | observed uids | same |
| victim_was_admitted_before_the_preemptor_came | the victim's uid | - | Admitted in a snapshot taken before the preemptor was submitted | >= 1 | snapshots | same |
| victim_history_shows_eviction_then_requeue | the same uid | - | Evicted(Preempted) after the submission, then (later or same snapshot) suspended, no admission, QuotaReserved False | >= 1 each, in that order | conditions as recorded, not inferred | same |
| victim_preempted_for_the_policy_reason | the victim; Kueue's Preempted/Evicted message names the preemptor's uid | ClusterQueues observed; InClusterQueue: both in the victim's tenant's own; a cohort reason: two ClusterQueues | the eviction window | - | Preempted condition's reason and message | same |
| victim_never_finished | the victim | - | after the submission | none | Finished condition | same |
| preemptor_admitted_only_after_the_eviction | the preemptor | - | Admitted >= Evicted, and >= the victim's QuotaReserved False (its lastTransitionTime; untimed, the last look still holding it bounds it from below), whole seconds | - | lastTransitionTimes | same |
| preemptor_admitted_and_running | the preemptor | - | its pod Running >= its Admitted | >= 1 running pod that did not crash | container status | same |

The victim's pods are not a clause: the Job controller deletes a suspended Job's pod without a
DisruptionTarget on a real cluster, so a Failed victim pod is no evidence either way; the Workload's own
condition history decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from assertions.clauses import Miss, before, compose, require_aware, require_not_after, stamp
from assertions.observed import WorkloadObs, WorkloadSnapshot
from assertions.verdict import Verdict
from assertions.workload_gate import ran_only_while_admitted
from gpu_finops.model import workload
from gpu_finops.model.workload import (
    ADMITTED,
    EVICTED,
    EVICTED_BY_PREEMPTION,
    FINISHED,
    PREEMPTED,
    QUOTA_RESERVED,
    REQUEUED,
)

CLAIM = "the high-priority job preempted a low-priority one, which was requeued (suspended again), not failed"
PREEMPTED_REASONS = {
    "InClusterQueue",
    "InCohortReclamation",
    "InCohortFairSharing",
    "InCohortReclaimWhileBorrowing",
}


@dataclass(frozen=True)
class PreemptionObs:
    victim: WorkloadObs
    preemptor: WorkloadObs
    preemptor_submitted: datetime
    # the Preempted reason the config's policy implies: InClusterQueue for a preemptor of the same tenant
    # (withinClusterQueue: LowerPriority), InCohortReclamation for another tenant reclaiming its quota
    expected_reason: str = "InClusterQueue"
    observed_at: datetime | None = None  # the act's last look: no time recorded may postdate it

    def __post_init__(self) -> None:
        require_aware(self)
        require_not_after(self, self.observed_at)


def after_submission(o: PreemptionObs) -> list[WorkloadSnapshot]:
    return [s for s in o.victim.snapshots if s.at >= o.preemptor_submitted]


def eviction_window(o: PreemptionObs) -> list[WorkloadSnapshot]:
    """The victim's snapshots, after the preemptor came, showing Evicted True for reason Preempted."""
    return [s for s in after_submission(o) if s.is_(EVICTED, EVICTED_BY_PREEMPTION)]


def evicted_at(s: WorkloadSnapshot) -> datetime:
    return s.conditions[EVICTED].last_transition or s.at


def is_requeued(s: WorkloadSnapshot) -> bool:
    reserved = s.conditions.get(QUOTA_RESERVED)
    return (
        bool(s.job_suspended) and not s.has_admission and reserved is not None and reserved.status == "False"
    )


def preemptor_outranks_victim(o: PreemptionObs) -> list[Miss]:
    v, h = o.victim, o.preemptor
    want = "the preemptor's spec.priority above the victim's"
    if v.priority is None or h.priority is None:
        return [
            Miss(
                want,
                f"priorities not observed (victim {v.priority}, preemptor {h.priority}): spec.priority unset",
            )
        ]
    if h.priority <= v.priority:
        return [
            Miss(
                want,
                f"the preemptor's priority {h.priority} ({h.priority_class}) is not higher than the "
                f"victim's {v.priority} ({v.priority_class})",
            )
        ]
    return []


PREEMPTOR_UID = re.compile(r"\(UID: ([^,)]+)")  # Kueue: "Preempted to accommodate a workload (UID: ..., ..."


def made_room_for(window: list[WorkloadSnapshot]) -> set[str]:
    """The preemptor UIDs Kueue named in the window's Preempted and Evicted messages."""
    return {
        m.group(1)
        for s in window
        for ctype in (PREEMPTED, EVICTED)
        if (c := s.conditions.get(ctype)) is not None and (m := PREEMPTOR_UID.search(c.message))
    }


def queues_fit_the_reason(o: PreemptionObs, want: str) -> list[Miss]:
    """InClusterQueue: both in the victim's tenant's own ClusterQueue; a cohort reason: two ClusterQueues."""
    v, h = o.victim, o.preemptor
    if v.admitted_by is None or h.admitted_by is None:
        return [
            Miss(
                want,
                f"the ClusterQueues were not observed (victim {v.admitted_by}, preemptor {h.admitted_by}): "
                "which queue the preemption happened in is unproven",
            )
        ]
    strangers = [
        f"{role} {w.name} of tenant {w.tenant} was admitted by {w.admitted_by}"
        for role, w in (("victim", v), ("preemptor", h))
        if w.admitted_by != w.tenant
    ]
    if strangers:
        return [Miss(want, f"{'; '.join(strangers)}: each is charged to its own tenant's ClusterQueue")]
    if o.expected_reason == "InClusterQueue" and (
        v.admitted_by != h.admitted_by or v.admitted_by != v.tenant
    ):
        return [
            Miss(
                want,
                f"preempted InClusterQueue, but the victim was admitted by {v.admitted_by} and the "
                f"preemptor by {h.admitted_by}: not one ClusterQueue, the tenant {v.tenant}'s",
            )
        ]
    if o.expected_reason != "InClusterQueue" and v.admitted_by == h.admitted_by:
        return [
            Miss(
                want,
                f"preempted {o.expected_reason}, but both were admitted by {v.admitted_by}: a cohort "
                "preemption needs two ClusterQueues",
            )
        ]
    return []


def victim_is_one_workload_throughout(o: PreemptionObs) -> list[Miss]:
    misses = []
    for role, w in (("victim", o.victim), ("preemptor", o.preemptor)):
        if len(w.uids) != 1 or w.uids[0] is None:
            misses.append(
                Miss(
                    f"the {role} one Workload (one uid) in every snapshot",
                    f"{role} {w.name} was seen with uids {list(w.uids)}: deleted and re-created (or its uid "
                    "not observed), so its history is not one object's",
                )
            )
    if o.victim.uids and o.victim.uids == o.preemptor.uids:
        misses.append(Miss("two different Workloads", f"victim and preemptor share uid {o.victim.uids}"))
    return misses


def victim_was_admitted_before_the_preemptor_came(o: PreemptionObs) -> list[Miss]:
    """The victim held its quota, undisturbed, when the preemptor came: admitted in a look before the
    submission, and no look before it shows it evicted, preempted, requeued or finished (one that arrives so
    was not preempted by this preemptor)."""
    v = o.victim
    want = f"{v.name} Admitted before {stamp(o.preemptor_submitted)}"
    earlier = [s for s in v.snapshots if s.at < o.preemptor_submitted]
    disturbed = next(
        ((s, c) for s in earlier for c in (EVICTED, PREEMPTED, REQUEUED, FINISHED) if s.is_(c)), None
    )
    if disturbed is not None:
        s, c = disturbed
        return [
            Miss(
                want,
                f"precondition: victim {v.name} was already {c} ({s.conditions[c].reason}) at {stamp(s.at)}, "
                "before the high-priority job was submitted: what followed was not this preemption",
            )
        ]
    if any(s.is_(ADMITTED) for s in earlier):
        return []
    return [
        Miss(
            want,
            f"precondition: victim {v.name} was not admitted before the high-priority job was submitted "
            "(the queue was not full, so nothing needed preempting)",
        )
    ]


def victim_history_shows_eviction_then_requeue(o: PreemptionObs) -> list[Miss]:
    v = o.victim
    window = eviction_window(o)
    want = (
        "Evicted(Preempted) after the preemptor came, then Job suspended, no admission, QuotaReserved False"
    )
    if not window:
        seen = sorted(
            {f"{c.type}={c.status}/{c.reason}" for s in after_submission(o) for c in s.conditions.values()}
        )
        return [
            Miss(
                want,
                f"no eviction window observed on {v.name}: Evicted(reason Preempted) never True after "
                f"the preemptor arrived (conditions seen: {seen})",
            )
        ]
    misses = []
    if before(evicted_at(window[0]), o.preemptor_submitted):
        misses.append(
            Miss(
                want,
                f"{v.name}'s Evicted condition dates from {stamp(evicted_at(window[0]))}, before the "
                f"preemptor was submitted {stamp(o.preemptor_submitted)}: another eviction",
            )
        )
    if not any(is_requeued(s) for s in after_submission(o) if s.at >= window[0].at):
        misses.append(
            Miss(
                want,
                f"{v.name} was not requeued: never seen with its Job suspended, no status.admission and "
                "QuotaReserved False after the eviction",
            )
        )
    return misses


def victim_preempted_for_the_policy_reason(o: PreemptionObs) -> list[Miss]:
    v, h = o.victim, o.preemptor
    window = eviction_window(o)
    if not window:
        return []  # victim_history_shows_eviction_then_requeue says so
    reasons = sorted({s.conditions[PREEMPTED].reason for s in window if s.is_(PREEMPTED)})
    want = f"Preempted True with reason {o.expected_reason}"
    if not set(reasons) & PREEMPTED_REASONS:
        return [
            Miss(
                want,
                f"{v.name} was Evicted but Preempted was never True with a preemption reason "
                f"{sorted(PREEMPTED_REASONS)}",
            )
        ]
    if o.expected_reason not in reasons:
        return [
            Miss(
                want,
                f"{v.name} was preempted {reasons}, but the config's policy for this pair implies "
                f"{o.expected_reason}",
            )
        ]
    named, uid = made_room_for(window), h.uids[0] if len(h.uids) == 1 else None
    if uid is None or named != {uid}:
        return [
            Miss(
                want + f", to accommodate the preemptor (UID {uid})",
                f"{v.name}'s Preempted/Evicted messages name preemptor UID(s) {sorted(named) or 'none'}, "
                f"not {h.name}'s {uid}: it made room for another workload, or for one unobserved",
            )
        ]
    return queues_fit_the_reason(o, want)


def victim_never_finished(o: PreemptionObs) -> list[Miss]:
    done = next((s for s in after_submission(o) if s.is_(FINISHED)), None)
    if done is None:
        return []
    fin = done.conditions[FINISHED]
    return [
        Miss(
            "the victim not Finished",
            f"victim {o.victim.name} Finished ({fin.reason}: {fin.message}) instead of being requeued",
        )
    ]


def preemptor_admitted_only_after_the_eviction(o: PreemptionObs) -> list[Miss]:
    """The preemptor is admitted once the victim was evicted and, the moment that matters for quota, once
    the victim gave its quota back (the model's quota_released_not_after, over the victim's looks after
    the preemptor came: a release while it still waited at the start proves nothing)."""
    window = eviction_window(o)
    admitted_at = o.preemptor.since(ADMITTED)
    if not window or admitted_at is None:
        return []  # the eviction and admission clauses say which is missing
    misses = []
    if before(admitted_at, evicted_at(window[0])):
        misses.append(
            Miss(
                "the preemptor admitted once the victim was evicted",
                f"preemptor {o.preemptor.name} was admitted at {stamp(admitted_at)}, before {o.victim.name} was "
                f"evicted at {stamp(evicted_at(window[0]))}: the quota was free, nothing needed preempting",
            )
        )
    misses += [
        Miss(
            "the preemptor admitted once the victim gave its quota back",
            f"preemptor {o.preemptor.name} was admitted at {stamp(admitted_at)}, but {o.victim.name}: "
            f"{v.observed}: the preemptor was admitted on quota still held",
        )
        for v in workload.quota_released_not_after(after_submission(o), admitted_at)
        if v.at is not None  # never released: victim_history_shows_eviction_then_requeue names it
    ]
    return misses


def preemptor_admitted_and_running(o: PreemptionObs) -> list[Miss]:
    h = o.preemptor
    want = f"{h.name} Admitted, its pod Running after that"
    if not any(s.is_(ADMITTED) for s in h.snapshots):
        return [Miss(want, f"preemptor {h.name} was never admitted")]
    runs = [p for p in h.pods if p.healthy_run is not None]
    if not runs:
        crashed = [f"{p.name} ({why})" for p in h.pods if (why := p.failure)]
        return [
            Miss(
                want,
                f"preemptor {h.name} never had a Running pod that did not crash and was not ended by the "
                f"platform (failed: {crashed})",
            )
        ]
    admitted_at = h.since(ADMITTED)
    early = [p.name for p in runs if admitted_at is not None and before(p.running.start, admitted_at)]  # type: ignore[union-attr]
    if early:
        return [
            Miss(
                want,
                f"preemptor pods {early} were Running before {h.name} was admitted at "
                f"{stamp(admitted_at)}: Kueue did not gate them",
            )
        ]
    # the gate every Kueue act shares: each run inside an admitted stretch, no look during it showing the
    # preemptor evicted or its Job suspended
    return [m for p in runs for m in ran_only_while_admitted(want, h, p)]


CLAUSES = (
    preemptor_outranks_victim,
    victim_is_one_workload_throughout,
    victim_was_admitted_before_the_preemptor_came,
    victim_history_shows_eviction_then_requeue,
    victim_preempted_for_the_policy_reason,
    victim_never_finished,
    preemptor_admitted_only_after_the_eviction,
    preemptor_admitted_and_running,
)


def check_preemption(o: PreemptionObs) -> Verdict:
    """Act 3's claim: every clause of `CLAUSES` over the two Workloads' recorded histories."""
    window = eviction_window(o)
    first_evicted = window[0].at.isoformat() if window else None
    return compose(
        CLAIM,
        "victim: one Workload throughout, Evicted/Preempted True after the preemptor came, then Job suspended, "
        "no admission, QuotaReserved False, not Finished; preemptor admitted after the eviction and running",
        CLAUSES,
        o,
        lambda: (
            f"{o.victim.name} evicted at {first_evicted} and requeued; {o.preemptor.name} admitted and running"
        ),
        victim=o.victim.name,
        preemptor=o.preemptor.name,
        evicted_at=first_evicted,
    )
