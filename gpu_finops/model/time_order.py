"""Time order at the API server's grain. Kubernetes stores object timestamps (creationTimestamp, a condition's
lastTransitionTime) in whole seconds, so two events are ordered only when they fall in different seconds:
what an observer clocked to the microsecond is compared at that grain too."""

from __future__ import annotations

from datetime import datetime, timedelta


def whole_seconds(at: datetime) -> datetime:
    """`at` truncated to the second, as the API server would have stored it."""
    return at.replace(microsecond=0)


def before(a: datetime, b: datetime) -> bool:
    """`a` is in an earlier whole second than `b`: it really happened first, whatever the truncation."""
    return whole_seconds(a) < whole_seconds(b)


# How far a look's own time may trail a change it already shows: a look is timed before its list call is
# answered, the API server keeps whole seconds, and the writing controller's clock may run a little ahead of
# the observer's. A change further from the look than this is a contradiction, not a race.
LOOK_SLACK = timedelta(seconds=2)
