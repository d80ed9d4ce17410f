"""Act 3 (preemption with requeue): holding worlds and their near-misses."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import strategies as st

from assertions.observed import Interval, PodObs, WorkloadObs, WorkloadSnapshot
from assertions.preemption import PreemptionObs
from tests.assertions.near_misses import LOOK_AFTER_S, Break
from tests.assertions.tables import T0, cond, t

MADE_ROOM = "Preempted to accommodate a workload (UID: uid-high, JobUID: UNKNOWN) due to prioritization"


def admitted(at: float, uid: str, cq: str = "team-a") -> WorkloadSnapshot:
    return WorkloadSnapshot(t(at), {"QuotaReserved": cond("QuotaReserved", "True"),
                                    "Admitted": cond("Admitted", "True", at=t(at))},
                            True, False, cluster_queue=cq, uid=uid)  # fmt: skip


def evicted(at: float, uid: str, reason: str = "InClusterQueue") -> WorkloadSnapshot:
    return WorkloadSnapshot(t(at), {"QuotaReserved": cond("QuotaReserved", "True"), "Admitted": cond("Admitted", "True"),
                                    "Evicted": cond("Evicted", "True", "Preempted", MADE_ROOM, at=t(at)),
                                    "Preempted": cond("Preempted", "True", reason)},
                            True, False, cluster_queue="team-a", uid=uid)  # fmt: skip


def requeued(at: float, uid: str) -> WorkloadSnapshot:
    return WorkloadSnapshot(t(at), {"QuotaReserved": cond("QuotaReserved", "False", "Pending"),
                                    "Evicted": cond("Evicted", "True", "Preempted", MADE_ROOM),
                                    "Preempted": cond("Preempted", "True", "InClusterQueue"),
                                    "Requeued": cond("Requeued", "True", "Preempted")},
                            False, True, uid=uid)  # fmt: skip


@st.composite
def holding(draw: st.DrawFn) -> PreemptionObs:
    before = sorted(draw(st.lists(st.integers(0, 100), min_size=1, max_size=3)))
    submitted = before[-1] + draw(st.integers(1, 30))
    evicted_at = submitted + draw(st.integers(0, 20))
    requeued_at = evicted_at + draw(st.integers(0, 10))
    high_admitted = evicted_at + draw(st.integers(0, 10))
    low_p = draw(st.integers(0, 500))
    victim = WorkloadObs("low-0", "team-a", "low", low_p,
                         snapshots=(*(admitted(a, "uid-low") for a in before), evicted(evicted_at, "uid-low"),
                                    requeued(requeued_at, "uid-low")),
                         pods=(PodObs("low-0-pod", "gpu-a", "Failed", Interval(t(before[0] + 1), t(evicted_at + 1))),))  # fmt: skip
    preemptor = WorkloadObs("high-0", "team-a", "high", low_p + draw(st.integers(1, 1000)),
                            snapshots=(WorkloadSnapshot(t(submitted), {}, False, True, uid="uid-high"),
                                       admitted(high_admitted, "uid-high")),
                            pods=(PodObs("high-0-pod", "gpu-a", "Running",
                                         Interval(t(high_admitted + draw(st.integers(0, 20))))),))  # fmt: skip
    return PreemptionObs(victim, preemptor, t(submitted), observed_at=t(high_admitted + 20 + LOOK_AFTER_S))


def victim(o: PreemptionObs, **changes) -> PreemptionObs:
    return replace(o, victim=replace(o.victim, **changes))


def preemptor(o: PreemptionObs, **changes) -> PreemptionObs:
    return replace(o, preemptor=replace(o.preemptor, **changes))


def after(o: PreemptionObs) -> tuple[WorkloadSnapshot, ...]:
    return tuple(s for s in o.victim.snapshots if s.at >= o.preemptor_submitted)


def recreated_fresh(o: PreemptionObs) -> PreemptionObs:
    """A look-alike victim: the victim deleted and re-created fresh, no eviction nor requeue in its
    history after the preemptor came, only a new object waiting suspended."""
    pending = WorkloadSnapshot(o.preemptor_submitted + timedelta(seconds=2),
                               {"QuotaReserved": cond("QuotaReserved", "False", "Pending")}, False, True, uid="uid-low-2")  # fmt: skip
    kept = tuple(s for s in o.victim.snapshots if s.at < o.preemptor_submitted)
    return victim(o, snapshots=(*kept, pending))


def no_requeue(o: PreemptionObs) -> PreemptionObs:
    return victim(o, snapshots=tuple(s for s in o.victim.snapshots if not s.job_suspended))


def reason(o: PreemptionObs, value: str) -> PreemptionObs:
    snaps = tuple(replace(s, conditions={**s.conditions, "Preempted": cond("Preempted", "True", value)})
                  if s.is_("Evicted") else s for s in o.victim.snapshots)  # fmt: skip
    return victim(o, snapshots=snaps)


def old_eviction(o: PreemptionObs) -> PreemptionObs:
    """The Evicted condition in the window dates from before the preemptor was submitted."""
    early = o.preemptor_submitted - timedelta(seconds=5)
    snaps = tuple(replace(s, conditions={**s.conditions, "Evicted": cond("Evicted", "True", "Preempted", at=early)})
                  if s.is_("Evicted") else s for s in o.victim.snapshots)  # fmt: skip
    # no look between that eviction and the preemptor's submission said otherwise: a history agrees with its
    # conditions' change times (the model refuses one that does not)
    return victim(o, snapshots=tuple(s for s in snaps if s.is_("Evicted") or s.at < early))


def finished(o: PreemptionObs) -> PreemptionObs:
    last = o.victim.snapshots[-1]
    done = replace(last, at=last.at + timedelta(seconds=1),
                   conditions={**last.conditions, "Finished": cond("Finished", "True", "Failed", "Job failed")})  # fmt: skip
    return victim(o, snapshots=(*o.victim.snapshots, done))


def admitted_early(o: PreemptionObs) -> PreemptionObs:
    first_evicted = next(s for s in after(o) if s.is_("Evicted")).at
    early = admitted((first_evicted - T0).total_seconds() - 1, "uid-high")
    # seen no earlier than the preemptor's first look (a history is in time order); admitted in the second before
    # the eviction, so the first look (at submission, not admitted) does not contradict the admission's time
    early = replace(early, at=max(early.at, o.preemptor.snapshots[0].at))
    return preemptor(o, snapshots=(o.preemptor.snapshots[0], early))


def ran_before_admission(o: PreemptionObs) -> PreemptionObs:
    early = Interval(o.preemptor.since("Admitted") - timedelta(seconds=3))
    return preemptor(o, pods=(replace(o.preemptor.pods[0], running=early),))


BREAKS = (
    Break("preemptor_outranks_victim", "state", "equal priorities", lambda o: preemptor(o, priority=o.victim.priority)),
    Break("preemptor_outranks_victim", "provenance", "priority not observed", lambda o: victim(o, priority=None)),
    Break("victim_is_one_workload_throughout", "identity", "the victim deleted and re-created fresh", recreated_fresh),
    Break("victim_history_shows_eviction_then_requeue", "identity", "the victim deleted and re-created fresh",
          recreated_fresh),
    Break("victim_is_one_workload_throughout", "identity", "the victim's and preemptor's uids are one",
          lambda o: preemptor(o, snapshots=tuple(replace(s, uid="uid-low") for s in o.preemptor.snapshots))),
    Break("victim_is_one_workload_throughout", "provenance", "the victim's uid not observed",
          lambda o: victim(o, snapshots=tuple(replace(s, uid=None) for s in o.victim.snapshots))),
    Break("victim_was_admitted_before_the_preemptor_came", "time", "nothing admitted before the preemptor",
          lambda o: victim(o, snapshots=after(o))),
    Break("victim_history_shows_eviction_then_requeue", "state", "evicted but never requeued", no_requeue),
    Break("victim_history_shows_eviction_then_requeue", "time", "the eviction predates the preemptor", old_eviction),
    Break("victim_history_shows_eviction_then_requeue", "state", "no eviction window at all",
          lambda o: victim(o, snapshots=tuple(s for s in o.victim.snapshots if not s.is_("Evicted")))),
    Break("victim_preempted_for_the_policy_reason", "ownership", "cohort reclamation where the policy implies in-queue",
          lambda o: reason(o, "InCohortReclamation")),
    Break("victim_preempted_for_the_policy_reason", "state", "Preempted with no preemption reason",
          lambda o: reason(o, "Unknown")),
    Break("victim_preempted_for_the_policy_reason", "ownership", "the preemptor was admitted by another ClusterQueue",
          lambda o: preemptor(o, snapshots=tuple(replace(s, cluster_queue="team-b") for s in o.preemptor.snapshots))),
    Break("victim_never_finished", "state", "the victim Finished (Failed)", finished),
    Break("preemptor_admitted_only_after_the_eviction", "time", "admitted before the victim was evicted", admitted_early),
    Break("preemptor_admitted_and_running", "state", "the preemptor never admitted",
          lambda o: preemptor(o, snapshots=o.preemptor.snapshots[:1])),
    Break("preemptor_admitted_and_running", "state", "the preemptor never Running",
          lambda o: preemptor(o, pods=(replace(o.preemptor.pods[0], running=None, phase="Pending"),))),
    Break("preemptor_admitted_and_running", "time", "the preemptor's pod ran before its admission", ran_before_admission),
)  # fmt: skip
