"""Simulated worlds for the M/M/c claim's tests: Poisson arrivals and exponential holds at c = 16,
rho = 0.8 (the live case's shape, at 60x), each admission delayed by a random control-plane latency, each
freed slot handed over after another. `order` chooses which waiting job a freed slot goes to."""

from __future__ import annotations

import dataclasses
import heapq
import random

from twin.mmc_claim import MmcJob, MmcRun, check_mmc

C, RHO, MEAN_HOLD, COMPRESSION = 16, 0.8, 600.0, 60.0


def job(
    name: str,
    submitted: float | None,
    admitted: float | None,
    finished: float | None,
    queued: float | None = None,
) -> MmcJob:
    """One job of the case as the readout gives it: the tenant's, one GPU, never evicted; its Workload
    queued when it could first be admitted (default: at submission)."""
    queued = submitted if queued is None else queued
    return MmcJob(name, submitted, admitted, finished, queued, tenant="erlang", gpus=1, evictions=0)


def simulate(
    *,
    jobs: int = 300,
    servers: int = C,
    usable: int | None = None,
    rho: float = RHO,
    order: str = "fifo",
    latency_wall: tuple[float, float] = (0.2, 1.5),
    seed: int = 29,
    compression: float = COMPRESSION,
) -> MmcRun:
    """`usable` slots really serve (default: all), at `rho` of `servers`; each admission waits a latency drawn
    uniformly from `latency_wall` (wall s), as does each hand-over of a freed slot."""
    rng = random.Random(seed)
    t, arrivals, holds = 0.0, [], []
    for _ in range(jobs):
        t += rng.expovariate(rho * servers / MEAN_HOLD)
        arrivals.append(t)
        holds.append(rng.expovariate(1 / MEAN_HOLD))
    lat = lambda: rng.uniform(*latency_wall) * compression  # noqa: E731
    ready = [a + lat() for a in arrivals]  # when each job's Workload could first be admitted
    slots = [float("-inf")] * (usable or servers)  # when each slot can next be handed to a job
    pending = list(range(jobs))
    start = [0.0] * jobs
    while pending:
        s = heapq.heappop(slots)
        waiting = [i for i in pending if ready[i] <= s]
        if not waiting:
            i = min(pending, key=lambda k: ready[k])
        elif order == "fifo":  # as Kueue orders a queue: by the Workload's creation
            i = min(waiting, key=lambda k: ready[k])
        elif order == "lifo":
            i = max(waiting, key=lambda k: ready[k])
        elif order == "shortest":
            i = min(waiting, key=lambda k: holds[k])
        elif order == "random":
            i = rng.choice(waiting)
        elif order.startswith("starve:"):  # that job only once no other waits
            victim = int(order.split(":")[1])
            i = min([k for k in waiting if k != victim] or waiting, key=lambda k: ready[k])
        else:
            raise ValueError(order)
        pending.remove(i)
        start[i] = max(s, ready[i])
        heapq.heappush(slots, start[i] + holds[i] + lat())
    return MmcRun(servers, compression, tuple(
        job(f"j{i:03d}", arrivals[i], start[i], start[i] + holds[i], ready[i]) for i in range(jobs)
    ))  # fmt: skip


def failed(run: MmcRun) -> tuple[str, ...]:
    return check_mmc(run).failed_clauses


def edit(run: MmcRun, index: int, **change: object) -> MmcRun:
    jobs = list(run.jobs)
    jobs[index] = dataclasses.replace(jobs[index], **change)
    return dataclasses.replace(run, jobs=tuple(jobs))
