"""The claim the M/M/c case checks: Kueue, with the whole control plane around it, serves one tenant's
one-GPU jobs as a first-come-first-served queue with c servers, once the control plane's own latency is
measured from the same run and fed to the exact queue.

Why latency is measured, not allowed: a stated allowance per admission held on a quiet machine and failed
on a loaded one (docs/twin.md, The live tests): the control plane lengthened every hold and delayed every
handover, and the jobs that waited paid for it twice. Here the run's own latencies become part of the
queue: a job that found a free slot waits `d` (Job created -> Workload -> QuotaReserved), a slot a job
leaves passes to the next `h` after its Workload finished. The exact c-server queue fed the run's arrivals
shifted by `d` and its hold times lengthened by `h` then predicts every job's wait, the jobs that queued
included, and the twin must agree with it on the mean and job by job.

| clause | identity | ownership | time order | count | tenancy |
|---|---|---|---|---|---|
| the_case_is_one_tenants_one_gpu_jobs | - | - | - | every job 1 GPU, never evicted | one tenant, named on every job |
| every_job_admitted_and_finished | per job name, each once | - | submitted <= admitted <= finished, all finite | every job | - |
| quota_filled_never_exceeded | - | - | concurrent holds from the Workloads' own times | peak = c exactly | - |
| the_path_queues | - | - | - | >= MIN_WAITED jobs wait on the exact queue with the run's holds | - |
| latency_measured_and_bounded | - | - | each slot's hand-over: freed before its next admission | >= MIN_SAMPLES of each kind, each mean <= LATENCY_WALL_MAX | - |
| mean_wait_is_the_exact_queues | - | - | - | mean gap <= MEAN_TOLERANCE_WALL + MEAN_TOLERANCE_SHARE of the predicted mean | - |
| waits_agree_job_by_job | per job, in submission order | - | - | JOB_AGREEMENT_SHARE of jobs within JOB_TOLERANCE_WALL | - |
| served_first_come_first_served | per pair of Workloads waiting together | - | each Workload appeared between submission (+ QUEUED_LAG_WALL_MAX) and admission; the one queued first admitted first (ORDER_SLACK_WALL, ADMISSION_SLACK_WALL) | no job overtaken | - |

The last two clauses are what a mean cannot see: a queue that serves the last arrival first, or the
shortest job, has about the same mean wait as a first-come-first-served one, but not the same order. The
job-by-job clause alone let them through, and so did one job starved while the rest were served; the order clause
refuses both. The ownership column is empty because the run's jobs are the replay's own (one run label).

The case's input (MmcJob, MmcRun, from_readout): a run's jobs in trace seconds, as `twin.readout` gives them,
checked for shape before any clause reads them. MmcInputError names a parameter or a readout field that is
not what the case is made of: such a run cannot be checked at all.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from assertions.clauses import Miss, compose
from assertions.verdict import Verdict
from twin.theory import fifo_waits

CLAIM = (
    "Kueue served the tenant's one-GPU jobs first come, first served on exactly c GPUs: every job's wait is "
    "the exact c-server queue's on the run's own arrivals and holds, with the control plane's measured latency"
)
MIN_WAITED = 20  # jobs the exact queue must hold back, or nothing about queueing was tested
MIN_SAMPLES = 10  # admissions of each kind to measure a latency from
# wall s, each mean latency at most: 30 % of the case's mean hold (10 wall s). Measured on a quiet machine:
# admission 0.12, hand-over 0.78 (docs/twin.md). A GPU held back reads as hand-overs longer by about a hold
# over c for each, so this also refuses a quota with 4 or more of its 16 GPUs held back (simulated).
LATENCY_WALL_MAX = 3.0
MEAN_TOLERANCE_WALL = 0.5  # wall s of mean gap left to the latencies' spread around their means
MEAN_TOLERANCE_SHARE = 0.1  # of the predicted mean wait
JOB_TOLERANCE_WALL = 5.0  # wall s one job's wait may differ from its prediction
JOB_AGREEMENT_SHARE = 0.9  # of the jobs
# wall s: Kueue orders a queue by the Workload's creationTimestamp, which has one-second resolution, and the
# job controller creates each Workload a moment after its Job; closer than this, two jobs' order is a tie
ORDER_SLACK_WALL = 1.0
# wall s: two admissions closer than this are one scheduling cycle's, seen by the watch in either order. The
# queue side needs the second of creationTimestamp; the admission side only the cycle (a 1 s slack hid an
# overtaking of up to 55 trace s)
ADMISSION_SLACK_WALL = 0.25
# wall s a Workload may appear after its Job: the order is judged by when each appeared, so a late or
# invented appearance must not be able to hide one
QUEUED_LAG_WALL_MAX = 5.0


@dataclass(frozen=True)
class MmcJob:
    """One job of the run, in trace seconds from the run's start (None: never seen)."""

    name: str
    submitted_s: float | None
    admitted_s: float | None  # QuotaReserved
    finished_s: float | None  # the Workload's Finished
    queued_s: float | None = None  # its Workload first seen: from then Kueue can queue it
    tenant: str | None = None  # None: not observed (the case's clause names it)
    gpus: int | None = None
    evictions: int | None = None  # preemptions and requeues the run saw


class MmcInputError(ValueError):
    """The run cannot be checked at all: a parameter or a readout row is not what the case is made of."""


@dataclass(frozen=True)
class MmcRun:
    servers: int
    compression: float  # trace seconds per wall second: the tolerances are wall seconds
    jobs: tuple[MmcJob, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.jobs, tuple) or not all(isinstance(j, MmcJob) for j in self.jobs):
            raise MmcInputError(f"jobs: expected a tuple of MmcJob, got {type(self.jobs).__name__}")
        if type(self.servers) is not int or self.servers < 1:
            raise MmcInputError(f"servers: expected a whole number of GPUs >= 1, got {self.servers!r}")
        c = self.compression
        if isinstance(c, bool) or not isinstance(c, int | float) or not math.isfinite(c) or c <= 0:
            raise MmcInputError(f"compression: expected a finite number > 0 (trace s per wall s), got {c!r}")


def finite(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True)
class Latency:
    """The control plane's latency measured from the run, in trace seconds."""

    admission: tuple[float, ...]  # submission -> admission of the jobs that found a slot free
    handover: tuple[float, ...]  # a slot freed -> the admission of the job that had waited for it


def _times(j: MmcJob) -> tuple[float | None, float | None, float | None]:
    return j.submitted_s, j.admitted_s, j.finished_s


def _complete(run: MmcRun) -> list[MmcJob]:
    """Jobs with all three times, each a finite number: an infinite or NaN time would pass every `<=` and
    every `>` bound as NaN, so it is never used."""
    return [j for j in run.jobs if all(finite(x) for x in _times(j))]


def measured_latency(run: MmcRun) -> Latency:
    """Each admission takes the slot freed longest ago (slots free at the start count as freed at -inf),
    as Kueue hands quota to the head of the queue. An admission whose slot was free before its job was
    submitted waited only for the control plane (admission latency); one whose slot was freed after its
    submission waited for that slot, then for the hand-over. Ends sort before admissions at one instant.

    What this cannot tell apart: a GPU Kueue never hands out (capacity held back) and a slower hand-over.
    The held-back slot stays the oldest free one, so every later admission is paired with the end before
    its own and the hand-overs read longer by about a hold over c (0.6 wall s in the live case). The quota
    clause refuses a slot never used, the latency bound a large loss (4 of 16 GPUs); a smaller one is read
    as latency. Kueue's own hand-over (0.78 wall s on a quiet machine, against 0.12 for an admission) is
    too close to that for a comparison of the two to decide it (docs/twin.md)."""
    events = sorted(
        [(j.finished_s, 0, j) for j in _complete(run)] + [(j.admitted_s, 1, j) for j in _complete(run)],
        key=lambda e: (e[0], e[1]),
    )
    free: deque[float] = deque([float("-inf")] * run.servers)
    admission, handover = [], []
    for t, kind, job in events:
        if kind == 0:
            free.append(t)
        elif free:  # none free: an admission past the quota, which quota_filled_never_exceeded names
            slot = free.popleft()
            if slot <= job.submitted_s:
                admission.append(t - job.submitted_s)
            else:
                handover.append(t - slot)
    return Latency(tuple(admission), tuple(handover))


def predicted_waits(run: MmcRun, latency: Latency) -> list[tuple[MmcJob, float, float]]:
    """(job, measured wait, predicted wait) in submission order: the exact c-server FIFO queue fed the
    arrivals shifted by the mean admission latency and each hold lengthened by the mean hand-over."""
    jobs = sorted(_complete(run), key=lambda j: (j.submitted_s, j.name))
    d = statistics.fmean(latency.admission) if latency.admission else 0.0
    h = statistics.fmean(latency.handover) if latency.handover else 0.0
    ideal = fifo_waits(
        [j.submitted_s + d for j in jobs], [j.finished_s - j.admitted_s + h for j in jobs], run.servers
    )
    return [(j, j.admitted_s - j.submitted_s, w + d) for j, w in zip(jobs, ideal, strict=True)]


def every_job_admitted_and_finished(run: MmcRun) -> list[Miss]:
    misses = []
    names = [j.name for j in run.jobs]
    unnamed = [repr(n) for n in names if not isinstance(n, str) or not n]
    if unnamed:
        misses.append(Miss("every job named", f"{len(unnamed)} not: {', '.join(unnamed[:5])}"))
        names = [str(n) for n in names]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        misses.append(Miss("each job once", f"{len(twice)} seen more than once: {', '.join(twice[:5])}"))
    unseen = [j.name for j in run.jobs if None in _times(j)]
    if unseen:
        misses.append(Miss(
            f"all {len(run.jobs)} jobs submitted, admitted and finished",
            f"{len(unseen)} not: {', '.join(unseen[:5])}",
        ))  # fmt: skip
    odd = [
        f"{j.name} {_times(j)}" for j in run.jobs if None not in _times(j) and not all(map(finite, _times(j)))
    ]
    if odd:
        misses.append(Miss("every time a finite number of seconds", f"{len(odd)} not: {'; '.join(odd[:3])}"))
    if not run.jobs:
        misses.append(Miss("jobs in the run", "none"))
    disordered = [j.name for j in _complete(run) if not j.submitted_s <= j.admitted_s <= j.finished_s]
    if disordered:
        misses.append(Miss(
            "submitted <= admitted <= finished", f"{len(disordered)} out of order: {', '.join(disordered[:5])}"
        ))  # fmt: skip
    return misses


def the_case_is_one_tenants_one_gpu_jobs(run: MmcRun) -> list[Miss]:
    """The queue the claim is about: one tenant's jobs of one GPU each, none evicted (a preempted job's
    requeue wait would read as part of its hold)."""
    misses = []
    tenants = sorted({repr(j.tenant) for j in run.jobs})
    unnamed = [f"{j.name} ({j.tenant!r})" for j in run.jobs if not isinstance(j.tenant, str) or not j.tenant]
    if unnamed:
        misses.append(
            Miss("every job's tenant observed", f"{len(unnamed)} without: {', '.join(unnamed[:5])}")
        )
    elif len(tenants) > 1:
        misses.append(
            Miss("one tenant", f"{len(tenants)}: {', '.join(t.strip(chr(39)) for t in tenants[:5])}")
        )
    wide = [f"{j.name} ({j.gpus!r})" for j in run.jobs if type(j.gpus) is not int or j.gpus != 1]
    if wide:
        misses.append(Miss("every job 1 GPU", f"{len(wide)} not: {', '.join(wide[:5])}"))
    evicted = [
        f"{j.name} ({j.evictions!r})" for j in run.jobs if type(j.evictions) is not int or j.evictions != 0
    ]
    if evicted:
        misses.append(
            Miss(
                "no job evicted (preempted or requeued), each observed",
                f"{len(evicted)}: {', '.join(evicted[:5])}",
            )
        )
    return misses


def quota_filled_never_exceeded(run: MmcRun) -> list[Miss]:
    events = sorted(
        [(j.admitted_s, 1) for j in _complete(run)] + [(j.finished_s, -1) for j in _complete(run)],
        key=lambda e: (e[0], e[1]),  # a slot freed and taken at one instant is not two held at once
    )
    held = peak = 0
    for _, step in events:
        held += step
        peak = max(peak, held)
    if peak != run.servers:
        return [Miss(f"peak {run.servers} GPUs held at once", f"peak {peak}")]
    return []


def the_path_queues(run: MmcRun) -> list[Miss]:
    jobs = sorted(_complete(run), key=lambda j: j.submitted_s)
    waits = fifo_waits(
        [j.submitted_s for j in jobs], [j.finished_s - j.admitted_s for j in jobs], run.servers
    )
    waited = sum(1 for w in waits if w > 0)
    if waited < MIN_WAITED:
        return [Miss(f">= {MIN_WAITED} jobs waiting on the exact queue", f"{waited} of {len(jobs)}")]
    return []


def latency_measured_and_bounded(run: MmcRun) -> list[Miss]:
    lat, misses = measured_latency(run), []
    for kind, samples in (("admission", lat.admission), ("handover", lat.handover)):
        if len(samples) < MIN_SAMPLES:
            misses.append(Miss(f">= {MIN_SAMPLES} {kind} samples", f"{len(samples)}"))
        elif (mean := statistics.fmean(samples) / run.compression) > LATENCY_WALL_MAX:
            misses.append(Miss(f"mean {kind} latency <= {LATENCY_WALL_MAX} wall s", f"{mean:.2f} wall s"))
    return misses


def _rows(run: MmcRun) -> list[tuple[MmcJob, float, float]]:
    return predicted_waits(run, measured_latency(run))


def mean_wait_is_the_exact_queues(run: MmcRun) -> list[Miss]:
    rows = _rows(run)
    if not rows:
        return [Miss("jobs to compare", "none complete")]
    measured = statistics.fmean(m for _, m, _ in rows)
    predicted = statistics.fmean(p for _, _, p in rows)
    allowed = MEAN_TOLERANCE_WALL * run.compression + MEAN_TOLERANCE_SHARE * predicted
    if abs(measured - predicted) > allowed:
        return [Miss(
            f"mean wait within {allowed:.1f} trace s of the exact queue's {predicted:.1f} s",
            f"{measured:.1f} s (gap {measured - predicted:+.1f} s)",
        )]  # fmt: skip
    return []


def waits_agree_job_by_job(run: MmcRun) -> list[Miss]:
    rows = _rows(run)
    if not rows:
        return [Miss("jobs to compare", "none complete")]
    allowed = JOB_TOLERANCE_WALL * run.compression
    off = [(j.name, m - p) for j, m, p in rows if abs(m - p) > allowed]
    if len(off) > (1 - JOB_AGREEMENT_SHARE) * len(rows):
        worst = sorted(off, key=lambda x: -abs(x[1]))[:3]
        return [Miss(
            f">= {JOB_AGREEMENT_SHARE:.0%} of jobs within {allowed:.0f} trace s of their predicted wait",
            f"{len(off)} of {len(rows)} off, the worst " + ", ".join(f"{n} {g:+.0f} s" for n, g in worst),
        )]  # fmt: skip
    return []


def served_first_come_first_served(run: MmcRun) -> list[Miss]:
    """No job admitted before an older one that was waiting: Kueue queues a Workload once it exists, so
    for each pair whose Workloads appeared more than ORDER_SLACK_WALL apart, the younger's more than that
    before the older's admission, the older must not be admitted more than that after the younger. Jobs
    whose Workload was not seen appearing are named: without it their order cannot be judged."""
    slack, tie = ORDER_SLACK_WALL * run.compression, ADMISSION_SLACK_WALL * run.compression
    unseen = [f"{j.name} ({j.queued_s!r})" for j in _complete(run) if not finite(j.queued_s)]
    if unseen:
        return [Miss("every job's Workload seen appearing", f"{len(unseen)} not: {', '.join(unseen[:5])}")]
    lag = QUEUED_LAG_WALL_MAX * run.compression
    odd = [
        f"{j.name} (submitted {j.submitted_s:.0f} s, appeared {j.queued_s:.0f} s, admitted {j.admitted_s:.0f} s)"
        for j in _complete(run)
        if not j.submitted_s <= j.queued_s <= min(j.admitted_s, j.submitted_s + lag)
    ]
    if odd:
        return [Miss(
            f"every Workload appeared after its Job's submission, by its admission and within {lag:.0f} trace s",
            f"{len(odd)} not: {', '.join(odd[:3])}",
        )]  # fmt: skip
    jobs = sorted(_complete(run), key=lambda j: (j.queued_s, j.name))
    overtaken: list[tuple[MmcJob, MmcJob]] = []
    for i, old in enumerate(jobs):
        for young in jobs[i + 1 :]:
            if young.queued_s + slack >= old.admitted_s:
                break  # every later Workload appeared once the older was (nearly) admitted: no contest
            if young.queued_s - old.queued_s > slack and old.admitted_s - young.admitted_s > tie:
                overtaken.append((old, young))
    if overtaken:
        shown = ", ".join(
            f"{o.name} (queued {o.queued_s:.0f} s, admitted {o.admitted_s:.0f} s) by {y.name} "
            f"(queued {y.queued_s:.0f} s, admitted {y.admitted_s:.0f} s)"
            for o, y in overtaken[:3]
        )
        return [Miss(
            f"no waiting job overtaken by a younger one (ties: appeared within {slack:.0f} trace s, "
            f"admitted within {tie:.0f})",
            f"{len(overtaken)} overtakings ({len({o.name for o, _ in overtaken})} jobs overtaken): {shown}",
        )]  # fmt: skip
    return []


CLAUSES = (
    the_case_is_one_tenants_one_gpu_jobs,
    every_job_admitted_and_finished,
    quota_filled_never_exceeded,
    the_path_queues,
    latency_measured_and_bounded,
    mean_wait_is_the_exact_queues,
    waits_agree_job_by_job,
    served_first_come_first_served,
)


def check_mmc(run: MmcRun) -> Verdict:
    """The claim's verdict, with the measured latencies and the two means as evidence."""
    lat = measured_latency(run)
    rows = _rows(run)

    def mean(xs: Sequence[float]) -> float | None:
        return round(statistics.fmean(xs), 2) if xs else None

    evidence = {
        "jobs": len(run.jobs),
        "admission_latency_mean_wall_s": mean([x / run.compression for x in lat.admission]),
        "handover_latency_mean_wall_s": mean([x / run.compression for x in lat.handover]),
        "samples": {"admission": len(lat.admission), "handover": len(lat.handover)},
        "mean_wait_measured_s": mean([m for _, m, _ in rows]),
        "mean_wait_predicted_s": mean([p for _, _, p in rows]),
    }
    return compose(
        CLAIM,
        f"a first-come-first-served queue on {run.servers} GPUs, latency measured",
        CLAUSES,
        run,
        lambda: (
            f"{len(rows)} jobs; mean wait {evidence['mean_wait_measured_s']} s against the exact queue's "
            f"{evidence['mean_wait_predicted_s']} s"
        ),
        **evidence,
    )


def from_readout(result: dict, servers: int, compression: float) -> MmcRun:
    """The run's jobs from `twin.readout.readout`'s rows (trace seconds from the run's start). The readout's
    own compression, where it states one, must be the one given: the tolerances are wall seconds, so
    another factor would loosen or tighten every one of them. MmcInputError names a missing or odd field."""
    run = result.get("run") if isinstance(result, dict) else None
    stated = run.get("compression") if isinstance(run, dict) else None
    if stated is None:
        raise MmcInputError("readout: expected the run's compression under 'run', found none")
    if stated != compression:
        raise MmcInputError(
            f"compression: the readout's run states {stated!r}, the check was given {compression!r}"
        )
    rows = result.get("jobs") if isinstance(result, dict) else None
    if not isinstance(rows, list):
        raise MmcInputError(f"readout: expected a list of job rows under 'jobs', got {type(rows).__name__}")
    jobs = []
    for i, x in enumerate(rows):
        missing = [
            k for k in ("id", "submitted_s", "start_s", "end_s") if not isinstance(x, dict) or k not in x
        ]
        if missing:
            raise MmcInputError(f"readout job row {i}: missing {', '.join(missing)}")
        for k in ("submitted_s", "start_s", "end_s"):
            if (x[k] is not None and not isinstance(x[k], int | float)) or isinstance(x[k], bool):
                raise MmcInputError(f"readout job row {i} ({x['id']!r}): {k} is {x[k]!r}, not seconds")
        evictions = (
            None  # not observed unless both counts are whole numbers >= 0 (the case's clause names it)
        )
        counts = (x.get("preempted"), x.get("requeued"))
        if all(type(n) is int and n >= 0 for n in counts):
            evictions = sum(counts)
        jobs.append(MmcJob(
            str(x["id"]), x["submitted_s"], x["start_s"], x["end_s"], queued_s=x.get("queued_s"),
            tenant=x.get("tenant"), gpus=x.get("gpus"), evictions=evictions,
        ))  # fmt: skip
    return MmcRun(servers, compression, tuple(jobs))
