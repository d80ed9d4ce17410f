"""Two days of a 100-GPU fleet's recorded-rule output in which kube-state-metrics goes away, hourly:

- 2026-08-01 00:00-12:00: everything observed (80 GPUs training, 20 free);
- 2026-08-01 12:00 to 2026-08-03 00:00: kube-state-metrics down. The rules keep running, so
  `fleet:ledger_input_series:count` says 0 for every kube-state-metrics input while the DCGM inputs stay
  present; every ladder and bucket series is absent (they are gated on installed GPUs being observed).
- 2026-08-01 06:00-09:00: 3 DCGM_FI_DEV_GPU_UTIL series carry neither `hostname` nor `Hostname` (the rules
  leave them out of busy and live); the other unplaced counts stay 0.
"""

from __future__ import annotations

from datetime import UTC, datetime

from gpu_finops.ledger.conventions import DCGM_INPUTS, DCGM_UNPLACED, KSM_INPUTS
from gpu_finops.ledger.rules import BUCKET, INPUTS, RUNG

START = datetime(2026, 8, 1, tzinfo=UTC)
HOURS = 48
OBSERVED_HOURS = 12
STEP = 3600
FLEET = {"free_placeable": 20, "allocated_training_stepping": 80}
UNPLACED_UTIL = "DCGM_FI_DEV_GPU_UTIL without hostname or Hostname"
UNPLACED_HOURS = range(6, 9)
LADDER = {"installed": 100, "schedulable": 100, "allocated": 80, "busy_by_metric": 80, "live_by_physics": 80}


def openmetrics() -> str:
    t0 = int(START.timestamp())
    lines: list[str] = []

    def family(name: str, label: str, series: dict[str, list[int | None]]) -> None:
        lines.append(f"# TYPE {name} gauge")
        for key, values in series.items():
            lines.extend(
                f'{name}{{{label}="{key}"}} {v} {t0 + h * STEP}'
                for h, v in enumerate(values)
                if v is not None
            )

    seen = [h < OBSERVED_HOURS for h in range(HOURS)]
    family(RUNG, "rung", {r: [n if s else None for s in seen] for r, n in LADDER.items()})
    family(BUCKET, "bucket", {b: [n if s else None for s in seen] for b, n in FLEET.items()})
    inputs: dict[str, list[int | None]] = {name: [100 if s else 0 for s in seen] for name in KSM_INPUTS}
    inputs |= {name: [100] * HOURS for name in DCGM_INPUTS}
    inputs |= {name: [0] * HOURS for name in DCGM_UNPLACED}
    inputs[UNPLACED_UTIL] = [3 if h in UNPLACED_HOURS else 0 for h in range(HOURS)]
    family(INPUTS, "input", inputs)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
