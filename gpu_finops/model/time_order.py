"""Time order at the API server's grain. Kubernetes stores object timestamps (creationTimestamp, a condition's
lastTransitionTime) in whole seconds, so two events are ordered only when they fall in different seconds:
what an observer clocked to the microsecond is compared at that grain too."""

from __future__ import annotations

from datetime import datetime


def whole_seconds(at: datetime) -> datetime:
    """`at` truncated to the second, as the API server would have stored it."""
    return at.replace(microsecond=0)


def before(a: datetime, b: datetime) -> bool:
    """`a` is in an earlier whole second than `b`: it really happened first, whatever the truncation."""
    return whole_seconds(a) < whole_seconds(b)
