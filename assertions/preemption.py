"""Act 3: a high-priority job evicts a low-priority one; the victim is requeued, not killed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from assertions.decide import decide
from assertions.observed import WorkloadObs
from assertions.verdict import Verdict

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


def check_preemption(o: PreemptionObs) -> Verdict:
    f: list[str] = []
    v, h = o.victim, o.preemptor
    if v.priority is None or h.priority is None:
        f.append(
            f"priorities not observed (victim {v.priority}, preemptor {h.priority}): spec.priority unset"
        )
    elif h.priority <= v.priority:
        f.append(
            f"the preemptor's priority {h.priority} ({h.priority_class}) is not higher than the victim's "
            f"{v.priority} ({v.priority_class})"
        )
    before = [s for s in v.snapshots if s.at < o.preemptor_submitted]
    after = [s for s in v.snapshots if s.at >= o.preemptor_submitted]
    if not any(s.is_("Admitted") for s in before):
        f.append(
            f"precondition: victim {v.name} was not admitted before the high-priority job was submitted "
            "(the queue was not full, so nothing needed preempting)"
        )
    window = [s for s in after if s.is_("Evicted", "Preempted")]
    if not window:
        seen = sorted({f"{c.type}={c.status}/{c.reason}" for s in after for c in s.conditions.values()})
        f.append(
            f"no eviction window observed on {v.name}: Evicted(reason Preempted) never True after the "
            f"preemptor arrived (conditions seen: {seen})"
        )
    else:
        reasons = sorted(
            {
                s.conditions["Preempted"].reason
                for s in window
                if s.conditions.get("Preempted") and s.conditions["Preempted"].status == "True"
            }
        )
        if not set(reasons) & PREEMPTED_REASONS:
            f.append(
                f"{v.name} was Evicted but Preempted was never True with a preemption reason "
                f"{sorted(PREEMPTED_REASONS)}"
            )
        elif o.expected_reason not in reasons:
            f.append(
                f"{v.name} was preempted {reasons}, but the config's policy for this pair implies "
                f"{o.expected_reason}"
            )
        evicted_at = window[0].conditions["Evicted"].last_transition or window[0].at
        admitted_at = h.since("Admitted")
        if admitted_at is not None and admitted_at.replace(microsecond=0) < evicted_at.replace(microsecond=0):
            f.append(
                f"preemptor {h.name} was admitted at {admitted_at.isoformat()}, before {v.name} was evicted at "
                f"{evicted_at.isoformat()}: the quota was free, nothing needed preempting"
            )
        after_evict = [s for s in after if s.at >= window[0].at]
        requeued = [
            s
            for s in after_evict
            if s.job_suspended
            and not s.has_admission
            and s.conditions.get("QuotaReserved")
            and s.conditions["QuotaReserved"].status == "False"
        ]
        if not requeued:
            f.append(
                f"{v.name} was not requeued: never seen with its Job suspended, no status.admission and "
                "QuotaReserved False after the eviction"
            )
    if any(s.is_("Finished") for s in after):
        fin = next(s for s in after if s.is_("Finished")).conditions["Finished"]
        f.append(f"victim {v.name} Finished ({fin.reason}: {fin.message}) instead of being requeued")
    # A preempted Job's pod is deleted by the Job controller when Kueue suspends the Job, with no
    # DisruptionTarget on a real cluster: a Failed victim pod is no evidence either way. The Workload's
    # conditions decide (Finished above; requeued with QuotaReserved False).
    if not any(s.is_("Admitted") for s in h.snapshots):
        f.append(f"preemptor {h.name} was never admitted")
    if not any(p.running is not None for p in h.pods):
        f.append(f"preemptor {h.name} never had a Running pod")
    first_evicted = window[0].at.isoformat() if window else None
    return decide(
        CLAIM,
        "victim: Evicted/Preempted True in a window, then Job suspended, no admission, "
        "QuotaReserved False, not Finished; preemptor admitted and running",
        f,
        f"{v.name} evicted at {first_evicted} and requeued; {h.name} admitted and running",
        victim=v.name,
        preemptor=h.name,
        evicted_at=first_evicted,
    )
