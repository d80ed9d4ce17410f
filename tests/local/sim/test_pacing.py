"""The simulators' pacing: the period at a small cluster, and at fleet size never more than READ_SHARE of
the time spent reading."""

from __future__ import annotations

import pytest

from local.sim.pacing import READ_SHARE, next_wait


def test_a_quick_read_waits_the_period() -> None:
    assert next_wait(0.5, 0.02) == 0.5


@pytest.mark.parametrize("read_s", [0.6, 1.5, 4.0])
def test_a_slow_read_waits_at_least_as_long_as_it_took(read_s: float) -> None:
    wait = next_wait(0.5, read_s)
    assert wait == pytest.approx(read_s)
    assert read_s / (read_s + wait) == pytest.approx(READ_SHARE)
