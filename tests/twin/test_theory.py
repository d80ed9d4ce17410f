"""Erlang C against published values, the FIFO sample path against Erlang C, and the sample size rule."""

from __future__ import annotations

import statistics

import pytest

from twin.theory import erlang_b, erlang_c, fifo_waits, jobs_needed, mmc_wait, sampled_mean_waits


@pytest.mark.parametrize(
    ("servers", "offered", "p_wait"),
    [
        (1, 0.5, 0.5),  # M/M/1: P(wait) = rho
        (2, 1.0, 1 / 3),  # c=2, rho=0.5: 2 rho^2 / (1 + rho) = 1/3
        (2, 1.5, 0.6428571428571429),  # c=2, rho=0.75: 2 rho^2 / (1 + rho) = 9/14
        (10, 8.0, 0.4092),  # the classic call-centre table: 10 agents, 8 Erlangs -> 40.92 %
    ],
)
def test_erlang_c_matches_published_values(servers: int, offered: float, p_wait: float) -> None:
    assert erlang_c(servers, offered) == pytest.approx(p_wait, abs=5e-5)


def test_erlang_b_matches_its_closed_form_for_one_server() -> None:
    assert erlang_b(1, 2.0) == pytest.approx(2 / 3)


def test_an_overloaded_queue_has_no_erlang_c() -> None:
    with pytest.raises(ValueError, match="grows without bound"):
        erlang_c(4, 4.0)


def test_mmc_wait_mean_and_percentiles_for_mm1() -> None:
    w = mmc_wait(1, 0.5)  # M/M/1: Wq = rho/(mu - lambda) = 1 mean service; W|W>0 ~ Exp(mu - lambda)
    assert w.mean == pytest.approx(1.0)
    assert w.percentile(0.4) == 0.0  # half the arrivals never wait
    assert w.percentile(0.75) == pytest.approx(2 * 0.6931471805599453)  # P(W > x) = 0.5 e^{-x/2}


def test_fifo_waits_on_a_hand_worked_path() -> None:
    # two servers; jobs at 0, 0, 0, 1 of lengths 3, 2, 1, 1: the third waits 2 (until t=2), the fourth 2
    assert fifo_waits([0, 0, 0, 1], [3, 2, 1, 1], 2) == [0, 0, 2, 2]


def test_the_fifo_queue_reproduces_erlang_c_over_many_jobs() -> None:
    """The sample-path queue the twin is compared with agrees with the formula: 16 servers at 0.8, 20 runs
    of 5,000 jobs, within three standard errors of the runs' mean."""
    means = sampled_mean_waits(16, 0.8, 5000, runs=20, warmup=500, seed=11)
    se = statistics.stdev(means) / len(means) ** 0.5
    assert abs(statistics.fmean(means) - mmc_wait(16, 0.8).mean) < 3 * se


def test_a_few_hundred_jobs_cannot_pin_the_mean_wait() -> None:
    """Why the CI twin checks the sample path and not the formula alone: the mean wait of one run of 400
    jobs spreads more than its own size (successive waits are correlated), and the jobs the formula needs
    for 20 % at three standard errors are tens of thousands."""
    means = sampled_mean_waits(16, 0.8, 400, runs=60, warmup=40, seed=5)
    spread = statistics.stdev(means) / mmc_wait(16, 0.8).mean
    assert spread > 0.5
    inflation = statistics.variance(means) / (mmc_wait(16, 0.8).std ** 2 / 360)
    assert jobs_needed(16, 0.8, 0.2, inflation) > 10_000
