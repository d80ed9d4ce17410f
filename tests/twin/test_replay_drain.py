"""When the replay stops waiting for jobs past their expected end: never while jobs keep finishing within
DRAIN_MARGIN (up to a cap that grows with the job count), at once when none has finished for DRAIN_MARGIN."""

from __future__ import annotations

import pytest

from twin.replay import DRAIN_CAP_RATE, DRAIN_MARGIN, gives_up

DUE = 1000.0


def test_before_the_margin_it_waits_even_with_nothing_finishing() -> None:
    assert not gives_up(DUE + DRAIN_MARGIN - 1, DUE, last_finished=0.0, jobs=10)


def test_past_the_margin_with_nothing_finishing_for_the_margin_it_gives_up() -> None:
    now = DUE + DRAIN_MARGIN + 1
    assert gives_up(now, DUE, last_finished=now - DRAIN_MARGIN - 0.5, jobs=10)


def test_past_the_margin_it_waits_while_jobs_still_finish() -> None:
    """1,000 jobs ending together on 2 cores end about 5 a second: the run is still going, not stuck."""
    now = DUE + DRAIN_MARGIN + 100
    assert not gives_up(now, DUE, last_finished=now - 1.0, jobs=1000)


@pytest.mark.parametrize("jobs", [1, 1000])
def test_past_the_cap_it_gives_up_however_jobs_finish(jobs: int) -> None:
    cap = DUE + DRAIN_MARGIN + jobs / DRAIN_CAP_RATE
    assert not gives_up(cap - 1, DUE, last_finished=cap - 1, jobs=jobs)
    assert gives_up(cap + 1, DUE, last_finished=cap + 1, jobs=jobs)
