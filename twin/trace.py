"""The twin's workload trace: a documented file (docs/twin.md, "The trace") a user can write from their own
history, read and checked completely before anything is submitted.

JSON Lines. Line 1 is the header, every other line one job; all times are trace seconds, and the run plays
them `compression` times faster on the wall clock (a job of 3,600 trace seconds holds its GPUs for 60 wall
seconds at compression 60). Every figure the twin reports is converted back to trace time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpu_finops.facts import input_files
from gpu_finops.facts.errors import ConfigError, shown
from gpu_finops.facts.output_files import write_output
from local.sim.profiles import PROFILES

FORMAT = "gpu-finops-twin-trace/v1"
KINDS = ("training", "serving")
SIZES = (1, 2, 4, 8)  # GPUs a job asks for: one pod with that many whole cards
PRIORITIES = ("low", "high")  # infra/objects/kueue.py's WorkloadPriorityClasses
MAX_JOBS = 1_000_000


@dataclass(frozen=True)
class TraceJob:
    """One job of the trace. `submit_s` and `duration_s` are trace seconds from the trace's start;
    `duration_s` is how long the job holds its GPUs once it runs. `profile` is the SM_ACTIVE profile the
    GPU simulator plays for its cards (local/sim/profiles.py). `restarts` is recorded, not yet replayed
    (docs/twin.md says so)."""

    id: str
    tenant: str
    submit_s: float
    gpus: int
    duration_s: float
    kind: str = "training"
    priority: str = "low"
    profile: str = "training-stepping"
    restarts: int = 0


@dataclass(frozen=True)
class Trace:
    compression: float  # trace seconds per wall second
    horizon_s: float  # the trace's length in trace seconds (jobs may run past it)
    seed: int | None  # the generator's seed; None for a trace written by hand or from history
    tenants: tuple[str, ...]
    jobs: tuple[TraceJob, ...] = field(default_factory=tuple)
    note: str = ""

    def wall(self, trace_seconds: float) -> float:
        """Trace seconds -> wall seconds of the replay."""
        return trace_seconds / self.compression

    def trace_time(self, wall_seconds: float) -> float:
        """Wall seconds of the replay -> trace seconds (every reported figure)."""
        return wall_seconds * self.compression

    def header(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "compression": self.compression,
            "horizon_s": self.horizon_s,
            "seed": self.seed,
            "tenants": list(self.tenants),
            "jobs": len(self.jobs),
            "note": self.note,
        }


def dump(trace: Trace, path: Path) -> Path:
    lines = [json.dumps(trace.header())] + [json.dumps(asdict(j)) for j in trace.jobs]
    write_output(path, "\n".join(lines) + "\n", "trace")
    return path


# A replay runs no slower than the trace's own time and no faster than the twin's controllers can follow;
# a trace spans at most a year and a day (what `twin generate --hours` allows, and jobs running past it).
MIN_COMPRESSION, MAX_COMPRESSION = 1.0, 1_000_000.0
MAX_TRACE_S = 367 * 86400.0


def _number(
    where: str, key: str, value: Any, *, positive: bool = True, low: float = 0.0, high: float = MAX_TRACE_S
) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(key, f"expected a finite number, found {shown(value)}", where)
    if value < 0 or (positive and value == 0):
        raise ConfigError(key, f"expected a number > {'0' if positive else '= 0'}, found {value}", where)
    if not low <= value <= high:
        raise ConfigError(key, f"expected a number from {low:g} to {high:g}, found {value:g}", where)
    return float(value)


def _job(where: str, raw: Any, tenants: tuple[str, ...], horizon: float) -> TraceJob:
    if not isinstance(raw, dict):
        raise ConfigError("job", f"expected a JSON object, found {shown(raw)}", where)
    known = set(TraceJob.__dataclass_fields__)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(unknown[0], f"unknown key; a job has {sorted(known)}", where)
    for key in ("id", "tenant", "submit_s", "gpus", "duration_s"):
        if key not in raw:
            raise ConfigError(key, "missing: every job names id, tenant, submit_s, gpus, duration_s", where)
    job = TraceJob(**raw)
    if not isinstance(job.id, str) or not job.id:
        raise ConfigError("id", f"expected a non-empty string, found {shown(job.id)}", where)
    if job.tenant not in tenants:
        raise ConfigError(
            "tenant", f"{shown(job.tenant)} is not in the header's tenants {list(tenants)}", where
        )
    submit = _number(where, "submit_s", job.submit_s, positive=False)
    if submit > horizon:
        raise ConfigError("submit_s", f"{submit} is past the header's horizon_s {horizon}", where)
    _number(where, "duration_s", job.duration_s)
    if job.gpus not in SIZES or isinstance(job.gpus, bool):
        raise ConfigError("gpus", f"expected one of {list(SIZES)}, found {shown(job.gpus)}", where)
    if job.kind not in KINDS:
        raise ConfigError("kind", f"expected one of {list(KINDS)}, found {shown(job.kind)}", where)
    if job.priority not in PRIORITIES:
        raise ConfigError(
            "priority", f"expected one of {list(PRIORITIES)}, found {shown(job.priority)}", where
        )
    if job.profile not in PROFILES:
        raise ConfigError("profile", f"expected one of {list(PROFILES)}, found {shown(job.profile)}", where)
    if isinstance(job.restarts, bool) or not isinstance(job.restarts, int) or job.restarts < 0:
        raise ConfigError("restarts", f"expected an integer >= 0, found {shown(job.restarts)}", where)
    return job


def parse(lines: Iterable[str], source: str) -> Trace:
    """The trace in `lines`, checked whole: a bad line is a ConfigError naming the file, line and key."""
    rows = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    if not rows:
        raise ConfigError("header", "the trace is empty: line 1 must be its header", source)
    decoded = [(n, input_files.json_line(line, f"{source}:{n}", "trace")) for n, line in rows]
    (n0, head), jobs = decoded[0], decoded[1:]
    where = f"{source}:{n0}"
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise ConfigError("format", f"expected {FORMAT!r} on the header line", where)
    compression = _number(
        where, "compression", head.get("compression"), low=MIN_COMPRESSION, high=MAX_COMPRESSION
    )
    horizon = _number(where, "horizon_s", head.get("horizon_s"))
    tenants = head.get("tenants")
    if not isinstance(tenants, list) or not tenants or not all(isinstance(t, str) and t for t in tenants):
        raise ConfigError("tenants", f"expected a list of tenant names, found {shown(tenants)}", where)
    if len(jobs) > MAX_JOBS:
        raise ConfigError("jobs", f"{len(jobs)} jobs, at most {MAX_JOBS}", source)
    if "jobs" in head and head["jobs"] != len(jobs):
        raise ConfigError("jobs", f"the header says {head['jobs']} jobs, the file has {len(jobs)}", where)
    parsed = tuple(_job(f"{source}:{n}", raw, tuple(tenants), horizon) for n, raw in jobs)
    seen: dict[str, str] = {}  # Kubernetes names are lowercase: ids differing by case would be one Job
    for (n, _), job in zip(jobs, parsed, strict=True):
        same = seen.get(job.id.lower())
        if same is not None:
            also = "" if same == job.id else f" (the same Kubernetes name as {same!r})"
            raise ConfigError("id", f"duplicate job id {job.id!r}{also}", f"{source}:{n}")
        seen[job.id.lower()] = job.id
    seed = head.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ConfigError("seed", f"expected an integer or null, found {shown(seed)}", where)
    ordered = tuple(sorted(parsed, key=lambda j: (j.submit_s, j.id)))
    return Trace(compression, horizon, seed, tuple(tenants), ordered, str(head.get("note", "")))


MAX_TRACE_BYTES = 512 * 1024 * 1024  # MAX_JOBS lines of a few hundred bytes each


def load(path: Path) -> Trace:
    """A trace file, read through the input layer (a regular file, UTF-8, each line strict JSON)."""
    lines = input_files.read_text(path, "trace", MAX_TRACE_BYTES).splitlines()
    try:
        return parse(lines, str(path))
    except ConfigError as exc:  # named as a trace file, at the line it found
        raise exc.in_file(exc.source or str(path), input_files.kind("trace")) from None
