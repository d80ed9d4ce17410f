"""A seeded trace generator: per tenant, Poisson arrivals, a mix of sizes (1/2/4/8 GPUs), serving and
training jobs with their duration distributions, restarts and the SM_ACTIVE profile each plays.

The same seed gives the same trace, line for line; `random.Random` (the standard library's Mersenne
Twister) is enough for this and keeps the generator free of a numeric dependency.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from local.sim.profiles import SERVING_BUSY, SERVING_IDLE, TRAINING_STALLED, TRAINING_STEPPING
from twin.trace import MAX_JOBS, SIZES, Trace, TraceJob


@dataclass(frozen=True)
class TenantLoad:
    """One tenant's demand. `arrivals_per_hour`: Poisson rate in trace time. `sizes`: weight per GPU count.
    Training durations are log-normal with median `training_median_s` and shape `training_sigma`;
    serving durations exponential with mean `serving_mean_s`. `serving_share`: the fraction of jobs that
    serve. `restart_rate`: mean restarts per training job (Poisson)."""

    name: str
    arrivals_per_hour: float
    sizes: dict[int, float] = field(default_factory=lambda: {1: 0.4, 2: 0.2, 4: 0.2, 8: 0.2})
    serving_share: float = 0.3
    training_median_s: float = 2 * 3600.0
    training_sigma: float = 1.0
    serving_mean_s: float = 4 * 3600.0
    restart_rate: float = 0.1
    high_priority_share: float = 0.1


class TraceTooLarge(ValueError):
    """The trace asked for would hold more jobs than a trace may (twin.trace.MAX_JOBS)."""


def _poisson(rng: random.Random, mean: float) -> int:
    """Knuth's method: fine for the small means here (restarts per job)."""
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def generate(
    loads: list[TenantLoad], *, horizon_s: float, compression: float, seed: int, note: str = ""
) -> Trace:
    """Jobs of every tenant over [0, horizon_s) trace seconds, ordered by submission."""
    rng = random.Random(seed)
    jobs: list[TraceJob] = []
    for load in loads:
        bad = sorted(set(load.sizes) - set(SIZES))
        if bad:
            raise ValueError(f"tenant {load.name}: sizes {bad} not in {list(SIZES)}")
        sizes, weights = zip(*sorted(load.sizes.items()), strict=True)
        t, n = 0.0, 0
        rate = load.arrivals_per_hour / 3600.0
        while rate > 0:
            t += rng.expovariate(rate)
            if t >= horizon_s:
                break
            serving = rng.random() < load.serving_share
            if serving:
                duration = rng.expovariate(1.0 / load.serving_mean_s)
                profile = SERVING_BUSY if rng.random() < 0.6 else SERVING_IDLE
                restarts = 0
            else:
                duration = rng.lognormvariate(math.log(load.training_median_s), load.training_sigma)
                restarts = _poisson(rng, load.restart_rate)
                profile = TRAINING_STALLED if restarts and rng.random() < 0.5 else TRAINING_STEPPING
            jobs.append(
                TraceJob(
                    id=f"{load.name}-{n:06d}",
                    tenant=load.name,
                    submit_s=round(t, 3),
                    gpus=rng.choices(sizes, weights)[0],
                    duration_s=round(max(duration, 1.0), 3),
                    kind="serving" if serving else "training",
                    priority="high" if rng.random() < load.high_priority_share else "low",
                    profile=profile,
                    restarts=restarts,
                )
            )
            n += 1
            if len(jobs) > MAX_JOBS:
                raise TraceTooLarge(
                    f"the trace would hold more than {MAX_JOBS:,} jobs (the most a trace may): shorten --hours or "
                    "lower the load"
                )
    jobs.sort(key=lambda j: (j.submit_s, j.id))
    return Trace(compression, horizon_s, seed, tuple(load.name for load in loads), tuple(jobs), note)


def erlang_trace(
    *, servers: int, load: float, mean_service_s: float, jobs: int, compression: float, seed: int
) -> Trace:
    """The known case: one tenant, Poisson arrivals at rate load*servers/mean, exponential durations,
    one-GPU jobs (an M/M/c queue with c = `servers`). `jobs` arrivals exactly."""
    rng = random.Random(seed)
    rate = load * servers / mean_service_s
    t, out = 0.0, []
    for n in range(jobs):
        t += rng.expovariate(rate)
        out.append(
            TraceJob(
                id=f"erlang-{n:06d}",
                tenant="erlang",
                submit_s=round(t, 3),
                gpus=1,
                duration_s=round(max(rng.expovariate(1.0 / mean_service_s), 0.001), 3),
            )
        )
    note = f"M/M/{servers}, rho={load}, mean service {mean_service_s} s"
    return Trace(compression, math.ceil(t) + 1.0, seed, ("erlang",), tuple(out), note)
