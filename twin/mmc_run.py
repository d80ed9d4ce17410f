"""The M/M/c case's input: a run's jobs in trace seconds, as `twin.readout` gives them, checked for shape
before any clause reads them (twin/mmc_claim.py is the claim). MmcInputError names a parameter or a
readout field that is not what the case is made of: such a run cannot be checked at all."""

from __future__ import annotations

import math
from dataclasses import dataclass


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
