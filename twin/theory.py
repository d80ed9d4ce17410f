"""The known answers the twin is checked against: Erlang C for an M/M/c queue, the exact FIFO c-server
queue on a given sample path, and how many jobs make the measured mean wait a fair test.

Hand-written on purpose: each is a few lines of textbook arithmetic (Erlang B's recursion, Lindley's
recursion generalised to c servers with a heap), and a library for them (scipy has neither) would be a
dependency for ten lines.
"""

from __future__ import annotations

import heapq
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def erlang_b(servers: int, offered: float) -> float:
    """Blocking probability of M/M/c/c with `offered` = lambda/mu Erlangs (the stable recursion)."""
    if servers < 1 or offered <= 0:
        raise ValueError(f"need servers >= 1 and offered load > 0, got {servers}, {offered}")
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    return b


def erlang_c(servers: int, offered: float) -> float:
    """P(an arrival waits) in M/M/c with `offered` = lambda/mu Erlangs; needs offered < servers."""
    if offered >= servers:
        raise ValueError(f"offered load {offered} >= {servers} servers: the queue grows without bound")
    b = erlang_b(servers, offered)
    return servers * b / (servers - offered * (1 - b))


@dataclass(frozen=True)
class MmcWait:
    """The queue wait of M/M/c at utilisation rho = offered/servers, in units of the mean service time
    (multiply by it): P(wait), mean, and standard deviation of one arrival's wait."""

    servers: int
    rho: float
    p_wait: float
    mean: float
    std: float

    def percentile(self, q: float) -> float:
        """The q-quantile of the wait: 0 below 1 - P(wait), then exponential at rate c*mu*(1-rho)."""
        if q <= 1 - self.p_wait:
            return 0.0
        return -math.log((1 - q) / self.p_wait) / (self.servers * (1 - self.rho))


def mmc_wait(servers: int, rho: float) -> MmcWait:
    """W = 0 with probability 1-C, else exponential with rate (c*mu - lambda): mean C/(c(1-rho)),
    variance C(2-C)/(c(1-rho))^2, in mean service times."""
    c = erlang_c(servers, rho * servers)
    rate = servers * (1 - rho)
    return MmcWait(servers, rho, c, c / rate, math.sqrt(c * (2 - c)) / rate)


def fifo_waits(arrivals: Sequence[float], services: Sequence[float], servers: int) -> list[float]:
    """The exact waits of a first-come-first-served queue with `servers` identical servers on this
    sample path (arrival times sorted; the service each job needs once started)."""
    free = [0.0] * servers  # when each server frees up
    waits = []
    for t, s in zip(arrivals, services, strict=True):
        start = max(t, heapq.heappop(free))
        waits.append(start - t)
        heapq.heappush(free, start + s)
    return waits


def sampled_mean_waits(
    servers: int, rho: float, jobs: int, *, runs: int, warmup: int, seed: int = 0
) -> list[float]:
    """The mean wait (in mean service times) of `runs` independent M/M/c sample paths of `jobs` arrivals,
    the first `warmup` left out: the spread of what one twin run of that size can measure. The waits of
    one run are correlated (a busy spell delays many jobs in a row), so this, not Var(W)/n, is the
    variance of the measured mean."""
    rng = random.Random(seed)
    means = []
    for _ in range(runs):
        t, arrivals, services = 0.0, [], []
        for _ in range(jobs):
            t += rng.expovariate(rho * servers)
            arrivals.append(t)
            services.append(rng.expovariate(1.0))
        means.append(statistics.fmean(fifo_waits(arrivals, services, servers)[warmup:]))
    return means


def jobs_needed(servers: int, rho: float, rel_error: float, inflation: float, z: float = 3.0) -> int:
    """Jobs for the measured mean wait to fall within rel_error of Erlang C's with z standard errors:
    n = (z * CV(W))^2 * inflation / rel_error^2, where CV(W) = std/mean of one wait and `inflation` the
    factor by which correlation between successive waits widens Var(mean) over Var(W)/n."""
    w = mmc_wait(servers, rho)
    cv = w.std / w.mean
    return math.ceil((z * cv) ** 2 * inflation / rel_error**2)
