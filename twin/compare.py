"""`gpu-finops twin compare`: the same trace under two or more policies, side by side, with the deltas of each
policy against the first, as JSON and as one chart (matplotlib, PNG or SVG by the file's suffix, as
gpu_finops/cost/cost_report.py writes its chart)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpu_finops.facts.output_files import figure_bytes, write_output

FIGURES = ("wait_mean_s", "wait_p50_s", "wait_p95_s", "wait_p99_s", "preempted", "requeued")
LEDGER = ("idle_dollars", "stranded_gpus_peak", "pending_peak")


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def deltas(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """policy -> its figures and their difference from the first policy's (trace time)."""
    names = list(results)
    base = results[names[0]]
    # a bucket no GPU fell in under one policy is 0 GPU-hours there, and still compared
    every_bucket = sorted({b for r in results.values() for b in r["ledger"]["bucket_gpu_hours"]})
    out: dict[str, Any] = {"baseline": names[0], "policies": {}}
    for name in names:
        r = results[name]
        tenants = {
            t: {f: {"value": fig[f], "delta": _delta(base["tenants"][t][f], fig[f])} for f in FIGURES}
            for t, fig in r["tenants"].items()
        }
        led = {
            f: {"value": r["ledger"][f], "delta": _delta(base["ledger"][f], r["ledger"][f])} for f in LEDGER
        }
        hours = {b: r["ledger"]["bucket_gpu_hours"].get(b, 0.0) for b in every_bucket}
        buckets = {
            b: {"value": h, "delta": _delta(base["ledger"]["bucket_gpu_hours"].get(b, 0.0), h)}
            for b, h in hours.items()
        }
        out["policies"][name] = {"tenants": tenants, "ledger": led, "bucket_gpu_hours": buckets}
    return out


def _hours(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:+.2f} h"


def delta_lines(d: dict[str, Any]) -> list[str]:
    """The deltas as a person reads them: each policy against the baseline, per tenant the mean and p95
    wait (trace hours), then the ledger's idle dollars, stranded peak and GPU-hours per bucket."""
    out = []
    for name, pol in d["policies"].items():
        if name == d["baseline"]:
            continue
        out.append(f"{name} against {d['baseline']}:")
        for tenant, figs in sorted(pol["tenants"].items()):
            preempted = figs["preempted"]["delta"]
            out.append(
                f"  {tenant}: wait mean {_hours(figs['wait_mean_s']['delta'])}, "
                f"p95 {_hours(figs['wait_p95_s']['delta'])}, "
                f"preempted {'-' if preempted is None else f'{preempted:+d}'}"
            )
        led = pol["ledger"]
        idle, stranded = led["idle_dollars"]["delta"], led["stranded_gpus_peak"]["delta"]
        out.append(f"  ledger: idle dollars {idle:+.2f}, stranded GPUs at the peak {stranded:+d}")
        buckets = ", ".join(
            f"{b} {v['delta']:+.2f}" for b, v in sorted(pol["bucket_gpu_hours"].items()) if v["delta"]
        )
        out.append(f"  GPU-hours by bucket: {buckets or 'no change'}")
    return out


def chart(results: dict[str, dict[str, Any]], path: Path) -> Path:
    """Two panels: per tenant p95 queue wait (trace hours) per policy; GPU-hours per ledger bucket per policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    tenants = sorted({t for r in results.values() for t in r["tenants"]})
    buckets = sorted({b for r in results.values() for b in r["ledger"]["bucket_gpu_hours"]})
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        waits = [(results[name]["tenants"][t]["wait_p95_s"] or 0.0) / 3600 for t in tenants]
        left.bar([x + i * width for x in range(len(tenants))], waits, width, label=name)
        hours = [results[name]["ledger"]["bucket_gpu_hours"].get(b, 0.0) for b in buckets]
        right.bar([x + i * width for x in range(len(buckets))], hours, width, label=name)
    left.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(tenants))], tenants)
    left.set_ylabel("p95 queue wait (trace hours)")
    left.set_title("Queue wait per tenant, p95")
    right.set_xticks(
        [x + width * (len(names) - 1) / 2 for x in range(len(buckets))], buckets, rotation=30, ha="right"
    )
    right.set_ylabel("GPU-hours (trace time)")
    right.set_title("Installed GPU-hours by ledger bucket")
    for ax in (left, right):
        ax.legend(title="policy")
    fig.suptitle("Fleet twin: the same trace under each policy")
    with plt.rc_context({"svg.fonttype": "none"}):  # text stays text in an SVG: searchable, accessible
        data = figure_bytes(fig, path.suffix.lstrip(".").lower() or "png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    write_output(path, data, "--chart")
    return path
