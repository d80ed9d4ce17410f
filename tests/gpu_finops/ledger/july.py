"""The source's July 2026 as recorded-rule output: 10,000 GPUs, one sample an hour for 744 hours.

The golden test backfills the rules' OUTPUT series (the aggregates the report reads), not raw
kube-state-metrics and DCGM input: the rules are proven rule by rule with `promtool test rules`, and
a raw 10,000-GPU month at this step would be ~7.4 million samples per DCGM metric for no extra proof of the
reconciliation arithmetic. This way the backfill is ~22,000 samples and the test stays fast.

Every hour is a consistent fleet (buckets sum to installed; schedulable = installed - unschedulable
with nothing running on cordoned nodes). Hour 0 and the last hour differ from the rest and offset each
other, so the month's totals are the source's exactly while the last hour is the source's ladder snapshot:
10,000 installed / 9,600 schedulable / 8,900 allocated / 8,366 busy (94 % of allocated).
"""

from __future__ import annotations

from datetime import UTC, datetime

from benchmarks.ledger_data import JULY_TYPICAL
from gpu_finops.ledger.conventions import BUCKETS, DCGM_INPUTS, KSM_INPUTS
from gpu_finops.ledger.rules import BUCKET, INPUTS, LARGEST_PLACEABLE, RUNG

START = datetime(2026, 7, 1, tzinfo=UTC)
HOURS = 744
STEP = 3600

TYPICAL = JULY_TYPICAL  # the source's typical hour; the benchmark scales the same one to other fleet sizes
# the last hour: the source's ladder snapshot (400 unschedulable, 8,900 allocated)
SNAPSHOT = TYPICAL | {
    "unschedulable_repair_queue": 300,
    "unschedulable_driver_rollout": 100,
    "free_placeable": 400,
    "free_stranded": 300,
    "allocated_training_stepping": 4300,
    "allocated_training_restart": 600,
}
# the first hour offsets the last, so the month sums to 744 typical hours
OFFSET = {b: 2 * TYPICAL[b] - SNAPSHOT[b] for b in TYPICAL}

# the source's table: GPU-hours and share per line
EXPECTED = {
    "unschedulable_repair_queue": (148_800, "2.0"),
    "unschedulable_driver_rollout": (44_640, "0.6"),
    "free_placeable": (223_200, "3.0"),
    "free_stranded": (186_000, "2.5"),
    "allocated_serving_traffic": (2_232_000, "30.0"),
    "allocated_serving_headroom": (744_000, "10.0"),
    "allocated_training_stepping": (3_348_000, "45.0"),
    "allocated_training_restart": (513_360, "6.9"),
}

# days on which the SM clock series is missing (the input warning test reads July 31 alone)
NO_SM_CLOCK_FROM_HOUR = HOURS - 24


def composition(hour: int) -> dict[str, int]:
    buckets = SNAPSHOT if hour == HOURS - 1 else OFFSET if hour == 0 else TYPICAL
    return {b: buckets.get(b, 0) for b in BUCKETS}


def rungs(hour: int) -> dict[str, int]:
    c = composition(hour)
    installed = sum(c.values())
    unschedulable = sum(v for b, v in c.items() if b.startswith("unschedulable_"))
    allocated = sum(v for b, v in c.items() if b.startswith("allocated_") or b.startswith("busy_"))
    busy = {HOURS - 1: 8366, 0: 8900}.get(hour, 8600)
    return {
        "installed": installed,
        "schedulable": installed - unschedulable,
        "allocated": allocated,
        "busy_by_metric": busy,
        # busy-but-not-live GPUs are headroom replicas spinning an idle loop: not carved from a class
        "live_by_physics": busy - 600,
        "useful_training": c["allocated_training_stepping"] * 2 // 5,
    }


def openmetrics() -> str:
    """All series, grouped by metric family as OpenMetrics requires, timestamps in seconds."""
    t0 = int(START.timestamp())
    lines: list[str] = []

    def family(name: str, label: str, values: dict[str, list[int]]) -> None:
        lines.append(f"# TYPE {name} gauge")
        for key, series in values.items():
            selector = f'{name}{{{label}="{key}"}}' if label else name
            lines.extend(f"{selector} {v} {t0 + h * STEP}" for h, v in enumerate(series))

    hours = range(HOURS)
    family(RUNG, "rung", {r: [rungs(h)[r] for h in hours] for r in rungs(0)})
    family(BUCKET, "bucket", {b: [composition(h)[b] for h in hours] for b in BUCKETS})
    family(LARGEST_PLACEABLE, "", {"": [8 - (4 * h) // (HOURS - 1) for h in hours]})
    inputs = {name: [1250] * HOURS for name in (*KSM_INPUTS, *DCGM_INPUTS)}
    inputs["DCGM_FI_DEV_SM_CLOCK"] = [10_000 if h < NO_SM_CLOCK_FROM_HOUR else 0 for h in hours]
    family(INPUTS, "input", inputs)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
