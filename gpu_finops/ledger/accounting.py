"""The monthly reconciliation's arithmetic: sample sums in, GPU-hours and shares out, in Decimal.

Every installed GPU-hour lands on exactly one line. Two lines are the ledger's own gaps and are never
spread over the others: `unattributed` (installed GPU-hours no bucket claimed: a rule or input defect)
and `unobserved` (evaluations with no data, estimated at the mean installed count of the observed ones).
Displayed GPU-hours and shares are apportioned by largest remainder, so the printed lines sum exactly
to the printed total and to 100.0 %.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

from gpu_finops.facts import input_files
from gpu_finops.facts.errors import FILE, ConfigError, shown
from gpu_finops.facts.file_schema import json_kind
from gpu_finops.ledger.conventions import BUCKETS

UNATTRIBUTED = "unattributed"
UNOBSERVED = "unobserved"
LINES: tuple[str, ...] = (*BUCKETS, UNATTRIBUTED, UNOBSERVED)

LABELS: dict[str, str] = {
    "unschedulable_repair_queue": "unschedulable: repair queue",
    "unschedulable_driver_rollout": "unschedulable: driver rollout",
    "unschedulable_other": "unschedulable: other",
    "free_placeable": "free, placeable",
    "free_stranded": "free, stranded by fragmentation",
    "allocated_serving_traffic": "allocated: serving, serving traffic",
    "allocated_serving_headroom": "allocated: serving, warm headroom",
    "allocated_training_stepping": "allocated: training, stepping",
    "allocated_training_restart": "allocated: training, lost to restarts",
    "allocated_unclassified": "allocated: unclassified",
    "busy_by_metric_idle_by_physics": "allocated: busy by the metric, idle by physics",
    UNATTRIBUTED: "unattributed",
    UNOBSERVED: "unobserved (no data)",
}

OWNERS_PATH = Path(__file__).with_name("owners.yaml")
SHARE_UNITS = 1000  # shares are apportioned in tenths of a percent


def load_owners(path: Path | None = None) -> dict[str, str]:
    """Line -> owner from the owners file; every line must have one."""
    source = str(path or OWNERS_PATH)
    owners = input_files.read_yaml(path or OWNERS_PATH, "owners file") or {}
    if not isinstance(owners, dict):
        raise ConfigError(
            FILE, f"expected a mapping line -> owner, found {json_kind(owners)}", source, "owners file"
        )
    unknown = sorted(str(k) for k in owners if k not in LINES)
    if unknown:
        close = difflib.get_close_matches(unknown[0][:200], LINES, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"the lines are {', '.join(LINES)}"
        raise ConfigError(unknown[0][:80], f"not a ledger line; {hint}", source, "owners file")
    missing = [line for line in LINES if line not in owners]
    if missing:
        raise ConfigError(FILE, f"names no owner for: {', '.join(missing)}", source, "owners file")
    for line in LINES:
        if not isinstance(owners[line], str) or not owners[line].strip():
            raise ConfigError(
                line, f"expected an owner's name (a non-empty string), found {shown(owners[line])}", source,
                "owners file",
            )  # fmt: skip
    return {line: owners[line] for line in LINES}


def apportion(values: list[Decimal], units: int) -> list[int]:
    """Integers proportional to `values` that sum to exactly `units` (largest remainder; ties go to the
    earlier line). Values must be non-negative with a positive sum."""
    total = sum(values, Decimal(0))
    if total <= 0 or any(v < 0 for v in values):
        raise ValueError(f"cannot apportion {values}: need non-negative values with a positive sum")
    quotas = [v * units / total for v in values]
    floors = [int(q) for q in quotas]
    short = units - sum(floors)
    by_remainder = sorted(range(len(values)), key=lambda i: (-(quotas[i] - floors[i]), i))
    for i in by_remainder[:short]:
        floors[i] += 1
    return floors


@dataclass(frozen=True)
class Line:
    key: str
    label: str
    owner: str
    gpu_hours: Decimal  # exact
    gpu_hours_shown: int  # apportioned whole GPU-hours; the shown lines sum to the shown total
    share_tenths: int  # apportioned tenths of a percent; the lines sum to 1000

    @property
    def share_percent(self) -> str:
        return f"{self.share_tenths // 10}.{self.share_tenths % 10}"


@dataclass(frozen=True)
class Ledger:
    start: str
    end: str
    step_seconds: int
    installed_gpu_hours: Decimal  # observed installed + unobserved estimate
    installed_shown: int
    lines: list[Line]
    observed_samples: int
    expected_samples: int
    warnings: list[str] = field(default_factory=list)

    def line(self, key: str) -> Line:
        return next(line for line in self.lines if line.key == key)


def _hours(sample_sum: Decimal, step_seconds: int) -> Decimal:
    return sample_sum * step_seconds / 3600


def reconcile(
    *,
    start: str,
    end: str,
    step_seconds: int,
    installed_sum: Decimal,
    bucket_sums: dict[str, Decimal],
    observed_samples: int,
    expected_samples: int,
    owners: dict[str, str],
    warnings: list[str] | None = None,
) -> Ledger:
    """Turn per-series sample sums over a window into the ledger. Sums are of GPU counts per evaluation;
    GPU-hours = sum x step / 3600."""
    if observed_samples <= 0 or installed_sum <= 0:
        raise ValueError("no installed GPUs observed in the window")
    warnings = list(warnings or [])
    unknown = sorted(set(bucket_sums) - set(BUCKETS))
    if unknown:
        warnings.append(f"ignored unknown buckets from Prometheus: {', '.join(unknown)}")
    hours = {b: _hours(bucket_sums.get(b, Decimal(0)), step_seconds) for b in BUCKETS}
    observed_installed = _hours(installed_sum, step_seconds)
    hours[UNATTRIBUTED] = observed_installed - sum(hours.values(), Decimal(0))
    missing_samples = max(expected_samples - observed_samples, 0)
    hours[UNOBSERVED] = observed_installed * missing_samples / observed_samples
    total = observed_installed + hours[UNOBSERVED]
    if hours[UNATTRIBUTED] < 0:
        warnings.append(
            f"buckets exceed installed by {-hours[UNATTRIBUTED]:.1f} GPU-hours: a rule counts a GPU twice; "
            "shares below are computed without that line"
        )
    if missing_samples:
        warnings.append(
            f"{missing_samples} of {expected_samples} evaluations have no data: "
            f"{hours[UNOBSERVED]:.{0 if hours[UNOBSERVED] >= 100 else 3}f} GPU-hours are reported as unobserved"
        )
    keys = list(LINES)
    positive = [max(hours[k], Decimal(0)) for k in keys]
    installed_shown = int(total.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))
    shown = apportion(positive, installed_shown) if installed_shown > 0 else [0] * len(keys)
    shares = apportion(positive, SHARE_UNITS)
    lines = [Line(k, LABELS[k], owners[k], hours[k], shown[i], shares[i]) for i, k in enumerate(keys)]
    return Ledger(
        start=start,
        end=end,
        step_seconds=step_seconds,
        installed_gpu_hours=total,
        installed_shown=installed_shown,
        lines=lines,
        observed_samples=observed_samples,
        expected_samples=expected_samples,
        warnings=warnings,
    )
