"""The ledger's outputs: a rich table for a terminal, JSON and CSV for pipes, a PNG for people."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from rich.table import Table

from gpu_finops.facts.output_files import figure_bytes, write_output
from gpu_finops.ledger.accounting import Ledger
from gpu_finops.ledger.source import Ladder

RUNG_LABELS = {
    "installed": "installed",
    "schedulable": "schedulable (Ready, not cordoned)",
    "allocated": "allocated (Running pods' GPU limits)",
    "busy_by_metric": "busy by the metric (GPU_UTIL)",
    "live_by_physics": "live by physics (power and SM clock)",
    "useful_training": "useful (training GPUs x MFU)",
}


def _num(value: Decimal | None, places: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{places}f}"


def ledger_table(ledger: Ledger) -> Table:
    table = Table(title=f"fleet ledger {ledger.start} .. {ledger.end}", title_justify="left")
    table.add_column("line")
    table.add_column("GPU-hours", justify="right")
    table.add_column("share", justify="right")
    table.add_column("owner")
    table.add_row("installed GPU-hours", f"{ledger.installed_shown:,}", "100.0%", "", style="bold")
    for line in ledger.lines:
        style = "dim" if line.gpu_hours == 0 else None
        table.add_row(
            f"  {line.label}", f"{line.gpu_hours_shown:,}", f"{line.share_percent}%", line.owner, style=style
        )
    return table


def ledger_json(ledger: Ledger) -> dict[str, Any]:
    return {
        "start": ledger.start,
        "end": ledger.end,
        "step_seconds": ledger.step_seconds,
        "installed_gpu_hours": str(ledger.installed_gpu_hours),
        "installed_gpu_hours_shown": ledger.installed_shown,
        "observed_samples": ledger.observed_samples,
        "expected_samples": ledger.expected_samples,
        "lines": [
            {
                "line": line.key,
                "label": line.label,
                "owner": line.owner,
                "gpu_hours": str(line.gpu_hours),
                "gpu_hours_shown": line.gpu_hours_shown,
                "share_percent": line.share_percent,
            }
            for line in ledger.lines
        ],
        "warnings": ledger.warnings,
    }


def ledger_csv(ledger: Ledger) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["line", "label", "gpu_hours", "gpu_hours_shown", "share_percent", "owner"])
    writer.writerow(
        ["installed", "installed GPU-hours", ledger.installed_gpu_hours, ledger.installed_shown, "100.0", ""]
    )
    for line in ledger.lines:
        writer.writerow(
            [line.key, line.label, line.gpu_hours, line.gpu_hours_shown, line.share_percent, line.owner]
        )
    return out.getvalue()


def trend(ladder: Ladder) -> dict[str, Any]:
    """First, last, min, max of the largest placeable allocation and its least-squares slope per day."""
    points = ladder.largest_placeable_series
    if not points:
        return {"points": 0}
    xs = [t for t, _ in points]
    ys = [float(v) for _, v in points]
    n = len(points)
    slope = 0.0
    if n > 1:
        mx, my = sum(xs) / n, sum(ys) / n
        var = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var * 86400 if var else 0.0
    return {"points": n, "first": ys[0], "last": ys[-1], "min": min(ys), "max": max(ys), "per_day": slope}


def ladder_table(ladder: Ladder) -> Table:
    installed = next((r.latest for r in ladder.rungs if r.rung == "installed"), None)
    allocated = next((r.latest for r in ladder.rungs if r.rung == "allocated"), None)
    table = Table(title=f"allocation ladder {ladder.window.label()}", title_justify="left")
    for name, justify in (
        ("rung", "left"),
        ("now", "right"),
        ("of installed", "right"),
        ("of allocated", "right"),
        ("mean GPUs", "right"),
        ("GPU-hours", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in ladder.rungs:
        of_installed = f"{r.latest / installed:.0%}" if r.latest is not None and installed else "-"
        of_allocated = (
            f"{r.latest / allocated:.0%}"
            if r.latest is not None and allocated and r.rung not in ("installed", "schedulable", "allocated")
            else ""
        )
        table.add_row(
            RUNG_LABELS[r.rung],
            _num(r.latest),
            of_installed,
            of_allocated,
            _num(r.mean_gpus, 1),
            _num(r.gpu_hours),
        )
    t = trend(ladder)
    table.caption = (
        f"largest placeable allocation now: {_num(ladder.largest_placeable)} GPUs; trend over the window: "
        + (
            f"{t['first']:g} -> {t['last']:g} (min {t['min']:g}, max {t['max']:g}, {t['per_day']:+.2f}/day)"
            if t["points"]
            else "no data"
        )
    )
    return table


def ladder_json(ladder: Ladder) -> dict[str, Any]:
    return {
        "start": ladder.window.start.isoformat(),
        "end": ladder.window.end.isoformat(),
        "rungs": [
            {
                "rung": r.rung,
                "now": None if r.latest is None else str(r.latest),
                "mean_gpus": str(r.mean_gpus),
                "gpu_hours": str(r.gpu_hours),
            }
            for r in ladder.rungs
        ],
        "largest_placeable": None if ladder.largest_placeable is None else str(ladder.largest_placeable),
        "largest_placeable_trend": trend(ladder),
        "warnings": ladder.missing_inputs,
    }


def ladder_csv(ladder: Ladder) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["rung", "now", "mean_gpus", "gpu_hours"])
    for r in ladder.rungs:
        writer.writerow([r.rung, "" if r.latest is None else r.latest, r.mean_gpus, r.gpu_hours])
    writer.writerow(
        ["largest_placeable", "" if ladder.largest_placeable is None else ladder.largest_placeable, "", ""]
    )
    return out.getvalue()


def chart(
    path: Path,
    *,
    rungs: dict[str, float],
    by_day: dict[str, list[tuple[float, Decimal]]],
    labels: dict[str, str],
    title: str,
) -> Path:
    """Left: the ladder as a waterfall (each drop between rungs is a loss with a name). Right: GPU-hours
    per bucket per day, stacked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(17, 5.5), gridspec_kw={"width_ratios": [1, 1.4]})
    names = [n for n in RUNG_LABELS if n in rungs]
    values = [rungs[n] for n in names]
    for i, value in enumerate(values):
        left.bar(i, value, color="#4c72b0")
        left.text(i, value, f"{value:,.0f}", ha="center", va="bottom", fontsize=8)
        if i:
            drop = values[i - 1] - value
            if drop > 0:
                left.bar(i, drop, bottom=value, color="#dd8452", alpha=0.6)
    left.set_xticks(
        range(len(names)), [RUNG_LABELS[n].split(" (")[0] for n in names], rotation=30, ha="right"
    )
    left.set_ylabel("GPUs (mean over the window)")
    left.set_title("allocation ladder (orange: lost between rungs)")
    bottom: dict[float, float] = {}
    colors = plt.get_cmap("tab20").colors
    order = [b for b in labels if b in by_day] + [b for b in by_day if b not in labels]
    for i, bucket in enumerate(order):
        points = by_day[bucket]
        xs = [datetime.fromtimestamp(t, UTC) for t, _ in points]
        ys = [float(v) for _, v in points]
        base = [bottom.get(t, 0.0) for t, _ in points]
        right.bar(
            xs,
            ys,
            bottom=base,
            width=0.85,
            align="edge",
            color=colors[i % 20],
            label=labels.get(bucket, bucket),
        )
        for (t, _), y in zip(points, ys, strict=True):
            bottom[t] = bottom.get(t, 0.0) + y
    right.set_ylabel("GPU-hours per day")
    right.set_title("buckets by day")
    if by_day:
        right.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(title)
    fig.autofmt_xdate()
    fig.tight_layout()
    data = figure_bytes(fig, "png", dpi=110)
    plt.close(fig)
    write_output(path, data, "--png")
    return path


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2)
