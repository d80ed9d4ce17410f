"""A replay read back through the product's own instruments, beside the twin's own accounting
(twin/accounting.py): the ledger's recording rules as the target's Prometheus evaluated them
(gpu_finops/ledger/source.py's `window_sums`, what `gpu-finops ledger` reads) and the in-cluster collector's cost
records (gpu_finops/cost/store.py, what `gpu-finops cost` reads).

Both instruments work in whole steps: the rules evaluate once per interval (at an offset of Prometheus' own
within it), the collector writes one record per node per interval aligned to the epoch. So each is read over
the whole steps that cover the run, [start rounded down, end rounded up), once the rules have evaluated in its
last step and the collector has written its last interval. Wall figures become trace figures by the trace's
compression, as every twin figure is. The ledger's rules count every GPU node of the target (the twin's own
`foreign_gpu_nodes` names any that is not the fleet's); the collector's records are the fleet's nodes only.

What could not be read is an `error` naming what, where and what to do; what was read short (an evaluation or
a static node's interval missing, a record twice) is listed under `incomplete`, beside figures that cover
only what was read. Never a zero in place of data.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Collection
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from gpu_finops.facts import timeouts
from gpu_finops.facts.errors import UsageError
from gpu_finops.facts.timestamps import parse
from harness.waits import eventually

EXAMPLES = 5  # missing or doubled node-intervals named in `incomplete`


class ProductReadError(RuntimeError):
    """An instrument answered, but not with figures: said with what it read."""


def _settle(
    observe: Callable[[], Any], check: Callable[[Any], bool], permanent: tuple[type, ...], **wait: Any
) -> None:
    """`eventually`, except that an error no retry mends (a refused query, a store that is not ours) ends the
    wait at once, raised as itself, where `eventually` would retry it for the whole wait."""
    failed: list[BaseException] = []

    def look() -> Any:
        try:
            return observe()
        except permanent as exc:
            failed.append(exc)
            return exc

    eventually(look, lambda v: bool(failed) or check(v), **wait)
    if failed:
        raise failed[0]


def covering_window(start: float, end: float, step: int) -> tuple[float, float]:
    """The whole steps of `step` seconds, counted from the epoch, that cover [start, end)."""
    return math.floor(start / step) * step, math.ceil(end / step) * step


def rules_step() -> int:
    """The ledger rules' evaluation interval (gpu_finops/ledger/rules.yaml), in seconds."""
    from gpu_finops.ledger import rules
    from gpu_finops.ledger.conventions import interval_seconds

    return interval_seconds(str(rules.load()["groups"][0]["interval"]))


def _finite(series: str, value: Decimal | float) -> float:
    v = float(value)
    if not math.isfinite(v):
        raise ProductReadError(
            f"{series} summed to {value} over the window: not a figure; check the rule's inputs"
        )
    return v


def ledger_figures(url: str, start: float, end: float, compression: float, step: int) -> dict[str, Any]:
    """The ledger rules' buckets over [start, end) (whole steps), in trace GPU-hours: each sample stands for
    `step` wall seconds (the rules' interval), so a bucket's sum x step / 3600 x compression."""
    from gpu_finops.clients.promql import PrometheusQueryError
    from gpu_finops.ledger.rules import BUCKET, INSTALLED
    from gpu_finops.ledger.source import RangeClient, Window, window_sums

    client = RangeClient(url, retry_for=timeouts.PROM_RETRY)

    def latest() -> float | None:
        rows = client.query_exact(f"timestamp({INSTALLED})", datetime.now(UTC))
        return float(rows[0][1]) if rows else None

    latest()  # once outside the wait: an unreachable Prometheus is said now, not retried for the whole wait
    _settle(
        latest,
        lambda t: t is not None and t >= end - step,
        (PrometheusQueryError,),
        timeout=timeouts.PRODUCT_SETTLE,
        what=f"the ledger rules' evaluation in the run's last minute ({INSTALLED} at or after epoch "
        f"{end - step:.0f}) in {url}; the last observation is its latest evaluation (None: no series: are "
        "gpu_finops/ledger/rules.yaml's rules loaded in that Prometheus?)",
        interval=5.0,
    )
    sums = window_sums(client, Window(datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC)))
    installed = _finite(INSTALLED, sums.installed_sum)
    if installed <= 0:
        raise ProductReadError(f"{INSTALLED} summed to {sums.installed_sum} over {sums.observed_samples} "
                               "evaluations: no GPU installed; check kube-state-metrics' node series")  # fmt: skip
    if not sums.bucket_sums:
        raise ProductReadError(f"no {BUCKET} series over the window, with {INSTALLED} present: check the "
                               "bucket rules in gpu_finops/ledger/rules.yaml")  # fmt: skip
    per_sample = step / 3600 * compression
    buckets = {
        b: _finite(f'{BUCKET}{{bucket="{b}"}}', v) * per_sample for b, v in sorted(sums.bucket_sums.items())
    }
    expected = round((end - start) / step)
    incomplete = []
    if sums.observed_samples < expected:
        incomplete.append(
            f"{sums.observed_samples} of {expected} evaluations: installed and buckets cover those"
        )
    elif sums.observed_samples > expected:
        incomplete.append(f"{sums.observed_samples} evaluations in {expected} intervals: installed and buckets "
                          "count the extra ones too (a second Prometheus, or the rules loaded twice?)")  # fmt: skip
    return {
        "samples": sums.observed_samples,
        "expected_samples": expected,
        "installed_gpu_hours": installed * per_sample,
        "bucket_gpu_hours": buckets,
        "buckets_sum_percent": 100 * sum(buckets.values()) / (installed * per_sample),
        "missing_inputs": sums.missing_inputs,
        "incomplete": incomplete,
    }


def collector_figures(
    store_spec: str,
    start: float,
    end: float,
    compression: float,
    fleet_node: Callable[[str, str | None], bool],
    static_nodes: Collection[str],
    step: int,
) -> dict[str, Any]:
    """The collector's records of intervals starting in [start, end) (whole intervals of `step`), the fleet's
    nodes only (`fleet_node` of the record's node name and NodePool), in trace dollars; records of other
    nodes are counted apart. Each static node should have one record per interval: what is missing or
    doubled is named under `incomplete`."""
    from gpu_finops.cost.store import open_store

    since, until = (datetime.fromtimestamp(t, UTC) for t in (start, end))
    store = open_store(store_spec, read_only=True)  # a missing or foreign store is said now, not waited on
    try:
        _settle(
            lambda: len(store.records(since=until - timedelta(seconds=step), until=until)),
            lambda n: n > 0,
            (UsageError,),  # StoreError: a record that is not the collector's
            timeout=timeouts.PRODUCT_SETTLE,
            what=f"the collector's records of its interval ending {until:%Y-%m-%dT%H:%M:%SZ} in {store_spec} "
            "(the last observation is how many it had; is the in-cluster collector running?)",
            interval=5.0,
        )
        records = store.records(since=since, until=until)
    finally:
        getattr(store, "close", lambda: None)()
    ours = [r for r in records if fleet_node(r.ResourceName, r.x_NodePool)]
    if not ours:
        raise ProductReadError(
            f"no record of the fleet's nodes in {store_spec} over {since:%H:%M:%SZ}..{until:%H:%M:%SZ} "
            f"({len(records)} of other nodes): is that the target's store, and does the collector see the nodes?"
        )
    keys = [(r.ResourceName, parse(r.ChargePeriodStart)) for r in ours]
    minutes = [since + timedelta(seconds=step * i) for i in range(round((end - start) / step))]
    missing = sorted({(n, m) for n in static_nodes for m in minutes} - set(keys), key=lambda k: (k[1], k[0]))
    doubled = sorted(k for k, times in Counter(keys).items() if times > 1)
    incomplete = []
    if missing:
        incomplete.append(f"{len(missing)} of {len(static_nodes) * len(minutes)} static node-intervals have no "
                          f"record, e.g. {_named(missing)}")  # fmt: skip
    if doubled:
        incomplete.append(f"{len(doubled)} node-intervals have more than one record, e.g. {_named(doubled)}")
    unpriced = [r for r in ours if r.EffectiveCost is None]
    no_idle = [r for r in ours if r.x_IdleCost is None]
    return {
        "records": len(ours),
        "nodes": len({r.ResourceName for r in ours}),
        "other_nodes_records": len(records) - len(ours),
        "statuses": dict(sorted(Counter(r.x_Status for r in ours).items())),
        "instance_hours": sum(r.PricingQuantity for r in ours) * compression,
        "cost_dollars": None if unpriced else sum(r.EffectiveCost or 0.0 for r in ours) * compression,
        "idle_dollars": None if no_idle else sum(r.x_IdleCost or 0.0 for r in ours) * compression,
        "unpriced_records": len(unpriced),
        "records_without_idle_cost": len(no_idle),
        "incomplete": incomplete,
    }


def _named(keys: list[tuple[str, datetime]]) -> str:
    return ", ".join(f"{n}@{t:%H:%MZ}" for n, t in keys[:EXAMPLES]) + (" ..." if len(keys) > EXAMPLES else "")


def product_figures(
    prometheus_url: str,
    store_spec: str,
    start: float,
    end: float,
    compression: float,
    fleet_nodes: Collection[str],
    fleet_pools: Collection[str],
    collector_step: int,
) -> dict[str, Any]:
    """Both instruments over the whole steps covering the run; each one's failure is its own `error`."""
    out: dict[str, Any] = {"run_wall_seconds": end - start}
    began = time.monotonic()

    def ledger() -> dict[str, Any]:
        rules = rules_step()
        lo, hi = covering_window(start, end, rules)
        out["window"] = {"start": lo, "end": hi, "wall_seconds": hi - lo}
        return ledger_figures(prometheus_url, lo, hi, compression, rules)

    def collector() -> dict[str, Any]:
        lo, hi = covering_window(start, end, collector_step)
        out["collector_window"] = {"start": lo, "end": hi, "wall_seconds": hi - lo}
        in_fleet = lambda n, p: n in fleet_nodes or p in fleet_pools  # noqa: E731
        return collector_figures(store_spec, lo, hi, compression, in_fleet, fleet_nodes, collector_step)

    for key, read in (("ledger", ledger), ("collector", collector)):
        try:
            out[key] = read()
        except Exception as exc:  # the run's own figures stand; this instrument's failure is said by name
            # one line: a wait's message carries its last observation on lines of its own
            out[key] = {"error": f"{type(exc).__name__}: {_short(' | '.join(str(exc).splitlines()))}"}
    out["read_seconds"] = time.monotonic() - began
    return out


def _short(text: str, limit: int = 600) -> str:
    """The message's head and tail: a wait's message ends with its last observation, which can be long."""
    return text if len(text) <= limit else f"{text[: limit - 200]} ... {text[-190:]}"
