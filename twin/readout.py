"""A replay's figures, every one in trace time: per tenant the queue wait (Job submitted -> Workload
QuotaReserved) p50/p95/p99 and mean, admitted / preempted / requeued counts; GPU-hours per ledger bucket
with their share of installed; stranded GPUs at the peak; idle dollars (allocated GPUs idle by their
profile's SM_ACTIVE, free and unschedulable GPUs idle whole, at the catalog's spot price per GPU)."""

from __future__ import annotations

import statistics
from typing import Any

from gpu_finops.facts import dcgm
from gpu_finops.facts.catalog import GPU_TYPES
from local.sim.profiles import profile_values
from twin.jobs import job_name
from twin.replay import Replay

CONDITION_RESOLUTION = 1.0  # seconds: metav1.Time
WATCH_SLACK = 2.0  # seconds a watch event may trail the transition on this 2-core machine


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def job_rows(r: Replay) -> list[dict[str, Any]]:
    """One row per trace job: trace seconds from the replay's start of submission, wait, hold (admission
    to finish), preemptions; None where the job was never admitted or never finished (said by the caller)."""
    by_job = {w.job: w for w in r.observer.workloads.values() if w.job_uid in r.observer.job_uids}
    rows = []
    for j in r.trace.jobs:
        name = job_name(j)
        w, sub = by_job.get(name), r.submitted.get(name)
        row: dict[str, Any] = {
            "id": j.id,
            "tenant": j.tenant,
            "gpus": j.gpus,
            "submit_s": j.submit_s,
            "submitted_s": None if sub is None else r.trace.trace_time(sub - r.start),
        }
        # when the Workload first appeared (the watch's wall time): from then Kueue can queue it
        row["queued_s"] = None if w is None else r.trace.trace_time(w.first_seen - r.start)
        if w is None or sub is None or w.reserved is None:
            row.update(
                wait_s=None,
                hold_s=None,
                start_s=None,
                end_s=None,
                preempted=0,
                requeued=0,
                condition_gap_s=None,
            )
        else:
            row["wait_s"] = r.trace.trace_time(max(w.reserved - sub, 0.0))
            row["hold_s"] = r.trace.trace_time(w.finished - w.reserved) if w.finished else None
            row["start_s"] = r.trace.trace_time(w.reserved - r.start)
            row["end_s"] = r.trace.trace_time(w.finished - r.start) if w.finished else None
            row["preempted"], row["requeued"] = len(w.preemptions), len(w.requeues)
            # the watch's wall time against the condition's own lastTransitionTime (1 s resolution)
            row["condition_gap_s"] = (
                None if w.reserved_condition is None else w.reserved - w.reserved_condition
            )
        rows.append(row)
    return rows


def peak_admitted_gpus(rows: list[dict[str, Any]]) -> int:
    """The most GPUs the rows held admitted at once (a sweep over admission and finish times)."""
    events = []
    for r in rows:
        if r["start_s"] is not None:
            events.append((r["start_s"], r["gpus"]))
            if r["end_s"] is not None:
                events.append((r["end_s"], -r["gpus"]))
    peak = held = 0
    for _, delta in sorted(events, key=lambda e: (e[0], e[1])):  # a finish before a start at the same time
        held += delta
        peak = max(peak, held)
    return peak


def tenant_figures(rows: list[dict[str, Any]], tenants: tuple[str, ...]) -> dict[str, Any]:
    out = {}
    for t in tenants:
        mine = [r for r in rows if r["tenant"] == t]
        waits = [r["wait_s"] for r in mine if r["wait_s"] is not None]
        out[t] = {
            "jobs": len(mine),
            "admitted": len(waits),
            "never_admitted": len(mine) - len(waits),
            "preempted": sum(r["preempted"] for r in mine),
            "requeued": sum(r["requeued"] for r in mine),
            "peak_admitted_gpus": peak_admitted_gpus(mine),
            "wait_mean_s": statistics.fmean(waits) if waits else None,
            **{f"wait_p{q}_s": (percentile(waits, q) if waits else None) for q in (50, 95, 99)},
        }
    return out


def ledger_figures(r: Replay) -> dict[str, Any]:
    led, trace, fleet = r.ledger, r.trace, r.fleet
    hours = {b: trace.trace_time(s) / 3600 for b, s in sorted(led.gpu_seconds.items())}
    installed = trace.trace_time(led.installed_gpu_seconds) / 3600
    total = sum(hours.values())
    spot_per_gpu_hour = GPU_TYPES[fleet.instance_type][4] / fleet.gpus_per_node
    # x_IdleCost's rule (gpu_finops/cost/records.py): cost x (1 - SM_ACTIVE); a GPU nobody holds has SM_ACTIVE 0
    active = sum(
        trace.trace_time(s) / 3600 * profile_values(p)[dcgm.SM_ACTIVE]
        for p, s in led.allocated_by_profile.items()
        if p
    )
    return {
        "installed_gpu_hours": installed,
        "bucket_gpu_hours": hours,
        "bucket_share_percent": {b: (100 * v / installed if installed else None) for b, v in hours.items()},
        "buckets_sum_percent": 100 * total / installed if installed else None,
        "stranded_gpus_peak": led.stranded_peak,
        "pending_peak": led.peak_pending,
        "idle_dollars": (installed - active) * spot_per_gpu_hour,
        "spent_dollars": installed * spot_per_gpu_hour,
        "price_per_gpu_hour": spot_per_gpu_hour,
        # GPU nodes the target held that are not the fleet's: not counted, named (twin/accounting.py)
        "foreign_gpu_nodes": sorted(led.foreign_nodes),
    }


def readout(r: Replay) -> dict[str, Any]:
    rows = job_rows(r)
    gaps = [abs(x["condition_gap_s"]) for x in rows if x["condition_gap_s"] is not None]
    return {
        "run": {
            "id": r.run_id,
            "policy": r.policy,
            "compression": r.trace.compression,
            "jobs": len(r.trace.jobs),
            "wall_seconds": r.wall_seconds,
            "trace_hours": r.trace.trace_time(r.wall_seconds) / 3600,
            "fleet": {
                "instance_type": r.fleet.instance_type,
                "static_nodes": r.fleet.static_nodes,
                "cordoned": r.fleet.cordoned,
                "repair": r.fleet.repair,
                "gpus": r.fleet.installed_gpus,
            },
            "watch_errors": list(r.observer.errors),
            # wall seconds from each Job's due time to its create being sent (twin/submit.py)
            "submit_lag": r.submit_lag,
            # the watch's times against the Workload conditions' own: within their 1 s resolution + slack
            "condition_gap_max_s": max(gaps) if gaps else None,
            "condition_gap_bound_s": CONDITION_RESOLUTION + WATCH_SLACK,
        },
        "tenants": tenant_figures(rows, r.trace.tenants),
        "ledger": ledger_figures(r),
        "diagnose_at_peak": r.peak.result,
        # the same run through the ledger's rules and the collector's records ({} where not read)
        "product": r.product,
        "jobs": rows,
    }
