"""The acts' recorder keeps every pod it saw, and says when one was deleted: a pod last seen Running whose end
was never seen is not read as still running."""

from __future__ import annotations

from datetime import UTC, datetime

from acts.recorder import mark_gone
from assertions.observed import Interval, PodObs

T = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_a_pod_no_longer_listed_is_marked_gone_once_at_the_first_look_without_it():
    seen = {
        "kept": PodObs("kept", "gpu-a", "Running", Interval(T)),
        "lost": PodObs("lost", "gpu-a", "Running", Interval(T)),
    }
    later = T.replace(second=30)
    mark_gone(seen, {"kept"}, T.replace(second=20))
    mark_gone(seen, {"kept"}, later)
    assert (seen["kept"].gone_at, seen["lost"].gone_at) == (None, T.replace(second=20))
    assert seen["lost"].healthy_run is None
    assert seen["lost"].not_its_own_end == (
        "deleted while Running (gone by 2026-12-01T12:00:20+00:00), its end never seen"
    )
