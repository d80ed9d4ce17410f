"""A claim is a tuple of clauses; a checker is their composition.

A clause is a plain function named by what it requires (`replacement_is_a_new_spot_node_of_ours`). It
takes the act's observation and returns its failures, each a `Miss` (what the clause needed, what was
seen); an empty list means the clause holds. `compose` runs every clause, tags each miss with the clause's
name and returns one `Verdict` whose `failed_clauses` names each clause that failed, as Kueue composes
`IsAdmissible` from `IsFinished`, `IsActive` and `HasQuotaReservation`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from assertions.verdict import ClauseFailure, Verdict
from gpu_finops.model.time_order import LOOK_SLACK, before, whole_seconds  # noqa: F401 (the checkers' one order)

ObsT = TypeVar("ObsT")


@dataclass(frozen=True)
class Miss:
    """One way a clause failed: what it needed and what the world showed instead."""

    expected: str
    observed: str


Clause = Callable[[ObsT], list[Miss]]


def compose(
    claim: str,
    expected: str,
    clauses: Sequence[Clause[ObsT]],
    obs: ObsT,
    observed_when_holding: Callable[[], str],
    **evidence: Any,
) -> Verdict:
    """Run every clause on `obs`; the claim holds only when none failed. `observed` names each failure as
    `clause: what was seen`, in the claim's order; `observed_when_holding` is only called when it holds."""
    failures = tuple(
        ClauseFailure(clause.__name__, miss.expected, miss.observed)
        for clause in clauses
        for miss in clause(obs)
    )
    if failures:
        observed = "; ".join(f"{f.clause}: {f.observed}" for f in failures)
        return Verdict(claim, False, expected, observed, evidence, failures)
    return Verdict(claim, True, expected, observed_when_holding(), evidence)


def require_aware(obj: Any) -> None:
    """Refuse an observation holding a timezone-naive timestamp anywhere in it (a field, or a condition's
    lastTransitionTime inside a mapping, a tuple, a list or a set of them, a mapping's keys too): it
    cannot be ordered against the API server's UTC, so every clause comparing it would decide nothing.
    Naive is what Python says it is: no tzinfo, or one whose utcoffset() is None. Bad input, named in one
    line."""
    for path, value in _timestamps(obj, type(obj).__name__):
        if value.utcoffset() is None:
            raise ValueError(
                f"{path} is timezone-naive ({value.isoformat()}): give it in UTC "
                "(datetime.now(UTC), or the API server's own timestamp)"
            )


def require_not_after(obj: Any, last_look: datetime | None) -> None:
    """Refuse an observation holding a timestamp later than the act's last look (beyond LOOK_SLACK: a time
    written during that look): nothing the act recorded can postdate its last look at the cluster, so such a
    time was misread or made up. No last look given is missing data, refused: without it no recorded time
    can be held to anything, and a run "still going" has no end."""
    if last_look is None:
        raise ValueError(
            f"{type(obj).__name__}.observed_at is not given: the act's last look at the cluster bounds every time "
            "it recorded; record it (the API server's time of the act's last read) and pass it"
        )
    bound = whole_seconds(last_look) + LOOK_SLACK
    for path, value in _timestamps(obj, type(obj).__name__):
        if value is not last_look and whole_seconds(value) > bound:
            raise ValueError(
                f"{path} is {value.isoformat()}, after the act's last look {last_look.isoformat()}: nothing "
                "recorded can postdate it (a time misread, or the wrong last look)"
            )


def _timestamps(value: Any, path: str):
    """(path, datetime) for every datetime in a dataclass's fields, walking mappings (keys and values),
    tuples, lists, sets and frozensets."""
    if isinstance(value, datetime):
        yield path, value
    elif is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            yield from _timestamps(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _timestamps(k, f"{path} key {k!r}")
            yield from _timestamps(v, f"{path}[{k!r}]")
    elif isinstance(value, (tuple, list, set, frozenset)):
        for i, v in enumerate(value):
            yield from _timestamps(v, f"{path}[{i}]")


def possible(iv: Any, observed_at: datetime | None) -> str | None:
    """Why a recorded run is physically impossible (ended before it started, or after the act's last
    look), or None when it is possible."""
    if iv.end is not None and iv.end < iv.start:
        return f"ended {stamp(iv.end)} before it started {stamp(iv.start)}"
    if observed_at is not None and max(iv.start, iv.end or iv.start) > observed_at:
        return f"ran {stamp(iv.start)} to {stamp(iv.end)}, after the act's last look {stamp(observed_at)}"
    return None


def seconds(a: datetime | None, b: datetime | None) -> float | None:
    """Seconds from `a` to `b`, or None when either was not observed."""
    return (b - a).total_seconds() if a is not None and b is not None else None


def stamp(at: datetime | None) -> str:
    return at.isoformat() if at is not None else "never"


def parse_iso(ts: str) -> datetime:
    """An ISO-8601 timestamp (a trailing Z allowed) as an aware UTC datetime."""
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(UTC)
