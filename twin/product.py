"""A replay read back through the product's own instruments, beside the twin's own accounting
(twin/accounting.py): the ledger's recording rules as the target's Prometheus evaluated them
(ledger/source.py's `window_sums`, what `gpu-finops ledger` reads) and the in-cluster collector's cost
records (finops/store.py, what `gpu-finops cost` reads).

Both instruments work in whole steps (the rules' 1 m evaluation, the collector's 60 s interval), so they are
read over the whole minutes that cover the run, [start rounded down, end rounded up), once the rules have
evaluated and the collector has written the interval at its end. Wall figures become trace figures by the
trace's compression, as every twin figure is. What the product could not read is an error in the readout,
naming what and where (`error`), never a zero.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from typing import Any

from facts import timeouts
from facts.timestamps import iso
from harness.waits import eventually

STEP = 60  # seconds: the ledger rules' group interval (ledger/rules.yaml) and the collector's (chart default)


def covering_window(start: float, end: float, step: int = STEP) -> tuple[float, float]:
    """The whole steps (epoch-aligned, as Prometheus' evaluations and the collector's intervals) that cover
    [start, end)."""
    return math.floor(start / step) * step, math.ceil(end / step) * step


def ledger_figures(
    url: str, start: float, end: float, compression: float, step: int = STEP
) -> dict[str, Any]:
    """The ledger rules' buckets over [start, end), in trace GPU-hours: each sample stands for `step` wall
    seconds (the rules' interval), so a bucket's sum x step / 3600 x compression."""
    from ledger.rules import INSTALLED
    from ledger.source import RangeClient, Window, window_sums

    client = RangeClient(url, retry_for=timeouts.PROM_RETRY)
    eventually(
        lambda: client.query_exact(f"timestamp({INSTALLED})", datetime.now(UTC)),
        lambda rows: bool(rows) and float(rows[0][1]) >= end - step,
        timeout=timeouts.PRODUCT_SETTLE,
        what=f"the ledger rules' evaluation at the run's end ({INSTALLED} at or after {end - step:.0f}) in {url}",
        interval=5.0,
    )
    sums = window_sums(client, Window(datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC)))
    per_sample = step / 3600 * compression
    buckets = {b: float(v) * per_sample for b, v in sorted(sums.bucket_sums.items())}
    installed = float(sums.installed_sum) * per_sample
    return {
        "samples": sums.observed_samples,
        "installed_gpu_hours": installed,
        "bucket_gpu_hours": buckets,
        "buckets_sum_percent": 100 * sum(buckets.values()) / installed if installed else None,
        "missing_inputs": sums.missing_inputs,
    }


def collector_figures(
    store_spec: str,
    start: float,
    end: float,
    compression: float,
    fleet_node: Callable[[str, str | None], bool],
) -> dict[str, Any]:
    """The collector's records of intervals starting in [start, end), the fleet's nodes only (`fleet_node`
    of the record's node name and NodePool), in trace dollars; records of other nodes are counted apart."""
    from finops.store import open_store

    since, until = (datetime.fromtimestamp(t, UTC) for t in (start, end))

    def written() -> list[Any]:
        store = open_store(store_spec, read_only=True)
        try:
            return store.records(since=since, until=until)
        finally:
            getattr(store, "close", lambda: None)()

    records = eventually(
        written,
        lambda rs: any(r.ChargePeriodEnd >= iso(until) for r in rs),
        timeout=timeouts.PRODUCT_SETTLE,
        what=f"the collector's record of the interval ending {until:%H:%M:%SZ} in {store_spec}",
        interval=5.0,
    )
    ours = [r for r in records if fleet_node(r.ResourceName, r.x_NodePool)]
    unpriced = [r for r in ours if r.EffectiveCost is None]
    no_idle = [r for r in ours if r.x_IdleCost is None]
    return {
        "records": len(ours),
        "nodes": len({r.ResourceName for r in ours}),
        "other_nodes_records": len(records) - len(ours),
        "statuses": _count(r.x_Status for r in ours),
        "instance_hours": sum(r.PricingQuantity for r in ours) * compression,
        "cost_dollars": None if unpriced else sum(r.EffectiveCost or 0.0 for r in ours) * compression,
        "idle_dollars": None if no_idle else sum(r.x_IdleCost or 0.0 for r in ours) * compression,
        "unpriced_records": len(unpriced),
        "records_without_sm_active": len(no_idle),
    }


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def product_figures(
    prometheus_url: str,
    store_spec: str,
    start: float,
    end: float,
    compression: float,
    fleet_nodes: Collection[str],
    fleet_pools: Collection[str],
) -> dict[str, Any]:
    """Both instruments over the whole minutes covering the run; each one's failure is its own `error`."""
    lo, hi = covering_window(start, end)
    out: dict[str, Any] = {
        "window": {"start": lo, "end": hi, "wall_seconds": hi - lo, "run_wall_seconds": end - start}
    }
    began = time.monotonic()
    for key, read in (
        ("ledger", lambda: ledger_figures(prometheus_url, lo, hi, compression)),
        (
            "collector",
            lambda: collector_figures(
                store_spec, lo, hi, compression, lambda n, p: n in fleet_nodes or p in fleet_pools
            ),
        ),
    ):
        try:
            out[key] = read()
        except Exception as exc:  # the run's own figures stand; this instrument's failure is said by name
            out[key] = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
    out["read_seconds"] = time.monotonic() - began
    return out
