"""A Kueue Workload's lifecycle: its condition types, the predicates over them, the one reader of its status
conditions, and the invariants an observed history of it must satisfy.

Kueue (`pkg/workload`, `apis/kueue/v1beta1` and `v1beta2`) moves a Workload through these conditions:
QuotaReserved (a ClusterQueue reserved its quota), Admitted (quota reserved and every admission check
passed: the Job is unsuspended), Evicted (with a reason: Preempted, PodsReadyTimeout, ...; the Job is
suspended again), Preempted (why it was evicted, when by preemption), Requeued (it may queue again) and
Finished. A condition counts only when its status is "True".
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from gpu_finops.facts import timestamps
from gpu_finops.facts.conditions import Condition
from gpu_finops.model.time_order import LOOK_SLACK, before, whole_seconds
from gpu_finops.model.violation import Violation

QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
PREEMPTED = "Preempted"
REQUEUED = "Requeued"
FINISHED = "Finished"
PODS_READY = "PodsReady"
CONDITION_TYPES = (QUOTA_RESERVED, ADMITTED, EVICTED, PREEMPTED, REQUEUED, FINISHED, PODS_READY)

# The Evicted condition's reason when a higher-priority Workload took the quota (Kueue's
# WorkloadEvictedByPreemption), which is also the Preempted condition's type.
EVICTED_BY_PREEMPTION = "Preempted"
# QuotaReserved=False's reason while the Workload waits for quota (Kueue's "Pending").
PENDING = "Pending"

Conditions = Mapping[str, Condition]


def condition(raw: Mapping[str, Any], with_times: bool = True) -> Condition:
    """One status condition as the API returns it (`metav1.Condition`'s JSON)."""
    generation = raw.get("observedGeneration")
    return Condition(
        raw["type"],
        raw["status"],
        raw.get("reason") or "",
        raw.get("message") or "",
        timestamps.parse(raw.get("lastTransitionTime")) if with_times else None,
        generation if isinstance(generation, int) and not isinstance(generation, bool) else None,
    )


def conditions(raw: Iterable[Mapping[str, Any]] | None, with_times: bool = True) -> dict[str, Condition]:
    """A Workload's `status.conditions`, by type (the API keeps one condition of each type)."""
    return {c["type"]: condition(c, with_times) for c in raw or ()}


def is_true(conds: Conditions, ctype: str, reason: str | None = None) -> bool:
    """The condition is present with status True (and, when given, that reason)."""
    c = conds.get(ctype)
    return c is not None and c.status == "True" and (reason is None or c.reason == reason)


def has_quota_reservation(conds: Conditions) -> bool:
    return is_true(conds, QUOTA_RESERVED)


def is_admitted(conds: Conditions) -> bool:
    return is_true(conds, ADMITTED)


def is_evicted(conds: Conditions, reason: str | None = None) -> bool:
    return is_true(conds, EVICTED, reason)


def is_preempted(conds: Conditions) -> bool:
    """Evicted by preemption, by either condition Kueue writes for it."""
    return is_true(conds, PREEMPTED) or is_evicted(conds, EVICTED_BY_PREEMPTION)


def is_requeued(conds: Conditions) -> bool:
    return is_true(conds, REQUEUED)


def is_finished(conds: Conditions) -> bool:
    return is_true(conds, FINISHED)


def is_active(conds: Conditions) -> bool:
    """Admitted and not finished: it holds its quota now."""
    return is_admitted(conds) and not is_finished(conds)


def is_waiting(conds: Conditions) -> bool:
    """Neither admitted nor finished: still queued for quota or admission checks."""
    return not is_admitted(conds) and not is_finished(conds)


def quota_released(conds: Conditions) -> bool:
    """QuotaReserved is present and False: its quota was given back (after an eviction, or never taken)."""
    c = conds.get(QUOTA_RESERVED)
    return c is not None and c.status == "False"


def since(conds: Conditions, ctype: str) -> datetime | None:
    """When the condition last changed status, by its lastTransitionTime; None when absent or unread."""
    c = conds.get(ctype)
    return c.last_transition if c is not None else None


# --- invariants of an observed history ---------------------------------------------------------------


class Observation(Protocol):
    """One look at a Workload: when, its conditions, its Job's spec.suspend (None: not read), and its uid
    (None: not read)."""

    @property
    def at(self) -> datetime: ...

    @property
    def conditions(self) -> Conditions: ...

    @property
    def job_suspended(self) -> bool | None: ...

    @property
    def uid(self) -> str | None: ...


def admitted_without_reservation(conds: Conditions) -> str | None:
    """Kueue writes Admitted True only together with QuotaReserved True (pkg/workload/admissionchecks.go
    SyncAdmittedCondition: admitted = reservation and every check ready; UnsetQuotaReservationWithCondition
    resets both in one write): a look showing Admitted without the reservation is not a Workload's status."""
    if is_true(conds, ADMITTED) and not is_true(conds, QUOTA_RESERVED):
        held = conds.get(QUOTA_RESERVED)
        return f"Admitted True while QuotaReserved is {held.status if held else 'not set'}"
    return None


def looks_agree_with_transitions(history: Sequence[Observation]) -> list[Violation]:
    """Every look agrees with each condition's lastTransitionTime, among the looks of one object (uid): no
    condition changed after the look that shows it changed (beyond LOOK_SLACK), and every look taken after a
    condition's last change (beyond the slack) shows the status it changed to. A history that breaks either
    was not one object's looks in order: a clause reading its times would order the wrong events."""
    out: list[Violation] = []
    for s in history:
        for ctype, c in sorted(s.conditions.items()):
            if c.last_transition is not None and whole_seconds(c.last_transition) > s.at + LOOK_SLACK:
                out.append(
                    Violation(
                        "looks_agree_with_transitions",
                        s.at,
                        f"{ctype} {c.status} since {timestamps.iso(c.last_transition)}, after the look at "
                        f"{timestamps.iso(s.at)} that shows it",
                    )
                )
    # per condition type: the looks of one uid, in order; a status held since T must be what every look
    # from T + slack on showed. The run of equal statuses ending at look k must reach back to that look.
    times = [s.at for s in history]
    types = sorted({t for s in history for t in s.conditions})
    for ctype in types:
        run_start = 0
        for k, s in enumerate(history):
            status = _status(s, ctype)
            if k and (_status(history[k - 1], ctype) != status or history[k - 1].uid != s.uid):
                run_start = k
            c = s.conditions.get(ctype)
            if c is None or c.last_transition is None:
                continue
            first_after = bisect_left(times, whole_seconds(c.last_transition) + LOOK_SLACK, 0, k)
            if first_after < run_start:
                j = run_start - 1  # the last look before this status's run, taken after its change
                if history[j].uid != s.uid:
                    continue
                out.append(
                    Violation(
                        "looks_agree_with_transitions",
                        history[j].at,
                        f"{ctype} was {_status(history[j], ctype) or 'not set'} at the look at "
                        f"{timestamps.iso(history[j].at)}, though a later look says it has been {c.status} "
                        f"since {timestamps.iso(c.last_transition)}",
                    )
                )
    return out


def _status(s: Observation, ctype: str) -> str | None:
    c = s.conditions.get(ctype)
    return c.status if c is not None else None


def suspended_until_admitted(history: Sequence[Observation]) -> list[Violation]:
    """Kueue keeps a Job suspended until its Workload is admitted: a look that shows the Job unsuspended
    while the Workload is neither admitted nor finished contradicts the gate."""
    return [
        Violation(
            "suspended_until_admitted",
            s.at,
            f"Job unsuspended at {timestamps.iso(s.at)} while its Workload was not admitted",
        )
        for s in history
        if s.job_suspended is False and is_waiting(s.conditions)
    ]


def unsuspended_before_its_pods_ran(history: Sequence[Observation], pods_ran: bool) -> list[Violation]:
    """A Kueue-managed Job's pods run only once Kueue unsuspended it: pods that ran under a Job never seen
    unsuspended are not that Job's admitted pods."""
    if pods_ran and not any(s.job_suspended is False for s in history):
        return [
            Violation(
                "unsuspended_before_its_pods_ran", None, "the Job was never seen unsuspended, yet pods ran"
            )
        ]
    return []


def admitted_intervals(history: Sequence[Observation]) -> list[tuple[datetime, datetime | None]]:
    """[from, until) of each stretch the history shows the Workload admitted, in order: from the Admitted
    condition's lastTransitionTime in the first look showing it True (else that look's time), until its
    lastTransitionTime in the next look showing it not admitted (else that look's time: the later bound,
    so a stretch is never cut short by a look's lateness); until None: admitted at the last look."""
    out: list[tuple[datetime, datetime | None]] = []
    start: datetime | None = None
    for s in history:
        c = s.conditions.get(ADMITTED)
        moved = c.last_transition if c is not None and c.last_transition is not None else s.at
        if is_admitted(s.conditions) and start is None:
            start = moved
        elif not is_admitted(s.conditions) and start is not None:
            out.append((start, moved))
            start = None
    if start is not None:
        out.append((start, None))
    return out


def ran_only_while_admitted(
    history: Sequence[Observation], starts: Sequence[tuple[str, datetime]]
) -> list[Violation]:
    """Kueue lets a Job's pods start only while its Workload is admitted: each pod's start (name, when)
    falls in a stretch the history shows it admitted (whole seconds: the API server's grain). A pod that
    started before the first admission, or while the Workload was evicted between two, was not gated."""
    stretches = admitted_intervals(history)
    shown = ", ".join(
        f"{timestamps.iso(lo)}..{timestamps.iso(hi) if hi is not None else 'now'}" for lo, hi in stretches
    )
    return [
        Violation(
            "ran_only_while_admitted",
            at,
            f"pod {name} started {timestamps.iso(at)}, outside every stretch its Workload was admitted "
            f"({shown or 'never admitted'})",
        )
        for name, at in starts
        if not any(not before(at, lo) and (hi is None or before(at, hi)) for lo, hi in stretches)
    ]


def admitted_while_running(
    history: Sequence[Observation], runs: Sequence[tuple[str, datetime, datetime | None]]
) -> list[Violation]:
    """A pod of a Kueue-managed Job runs only while its Workload is admitted: no look taken while the pod ran
    (after its start's second, before its end's; a run with no end: to the last look) shows the Workload
    neither admitted nor finished, or its Job suspended. An eviction suspends the Job and ends its pods, so a
    run that goes on through such a look ran without the quota (or was ended by the eviction, not by
    itself)."""
    out = []
    for name, start, end in runs:
        s = next(
            (
                s
                for s in history
                if before(start, s.at)
                and (end is None or before(s.at, end))
                and not is_finished(s.conditions)
                and (not is_admitted(s.conditions) or s.job_suspended is True)
            ),
            None,
        )
        if s is not None:
            evicted = s.conditions.get(EVICTED)
            why = (
                f"Evicted ({evicted.reason})"
                if evicted is not None and evicted.status == "True"
                else "not admitted"
                if not is_admitted(s.conditions)
                else "admitted but its Job suspended"
            )
            out.append(
                Violation(
                    "admitted_while_running",
                    s.at,
                    f"pod {name} was Running (from {timestamps.iso(start)}, "
                    f"{'until ' + timestamps.iso(end) if end is not None else 'not seen ending'}) at the look at "
                    f"{timestamps.iso(s.at)}, which shows its Workload {why}",
                )
            )
    return out


def transitions_not_before_creation(created: datetime | None, conds: Conditions) -> list[Violation]:
    """No condition of an object can have changed before the object existed."""
    if created is None:
        return []
    return [
        Violation(
            "transitions_not_before_creation",
            c.last_transition,
            f"{ctype} changed at {timestamps.iso(c.last_transition)}, before the Workload was created "
            f"{timestamps.iso(created)}",
        )
        for ctype, c in sorted(conds.items())
        if c.last_transition is not None and before(c.last_transition, created)
    ]


def quota_released_not_after(victim: Sequence[Observation], at: datetime) -> list[Violation]:
    """A preemptor is admitted only after its victim gave its quota back: the victim's QuotaReserved went
    False in or before the second of `at`. The release's time is its lastTransitionTime; a look without
    one bounds it from below only, by the last look that still showed the quota held (a look's own time
    is when it was seen, not when it changed: never held against the order). A victim never seen
    releasing it, or seen holding it after `at`, contradicts the order."""
    held_at: datetime | None = None
    released: list[tuple[datetime, str]] = []
    for s in victim:
        if is_true(s.conditions, QUOTA_RESERVED):
            held_at = s.at
        elif quota_released(s.conditions):
            moved = s.conditions[QUOTA_RESERVED].last_transition
            if moved is not None:
                released.append((moved, f"released its quota at {timestamps.iso(moved)}"))
            elif held_at is not None:
                released.append((held_at, f"was still seen holding its quota at {timestamps.iso(held_at)}"))
            else:
                released.append((s.at, ""))  # released by the time of this look, no earlier bound: no verdict
    if not released:
        return [Violation("quota_released_not_after", None, "the victim was never seen releasing its quota")]
    first, said = min(released)
    if said and before(at, first):
        return [
            Violation("quota_released_not_after", first, f"the victim {said}, after {timestamps.iso(at)}")
        ]
    # and did not take it back before the admission: a look showing the quota held again by a reservation
    # made after the release (its lastTransitionTime after it; without one, a look past the release and the
    # slack), no later than `at`. A look that still shows the old reservation is not a new one.
    again = []
    for s in victim:
        c = s.conditions.get(QUOTA_RESERVED)
        if c is None or c.status != "True":
            continue
        if c.last_transition is not None and before(first, c.last_transition):
            again.append(c.last_transition)
        elif c.last_transition is None and whole_seconds(s.at) > whole_seconds(first) + LOOK_SLACK:
            again.append(s.at)
    back = min(again, default=None)
    if back is not None and not before(at, back):
        return [
            Violation(
                "quota_released_not_after",
                back,
                f"the victim released its quota, then held it again from {timestamps.iso(back)}, by "
                f"{timestamps.iso(at)}",
            )
        ]
    return []
