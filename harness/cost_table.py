"""What act 6 reads on AWS: the in-cluster collector's records from the cost table, its own log lines,
and the price each interval should have been charged at (spot: the price-history step function
averaged over the node's part of the interval, so the check is independent of the collector's code)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from gpu_finops.facts.names import COLLECTOR
from gpu_finops.facts.timestamps import parse

COLLECTOR_SELECTOR = f"app.kubernetes.io/name={COLLECTOR}"


def node_records(store: Any, node: str, since: str) -> list[dict[str, Any]]:
    """The node's records with ChargePeriodStart >= since, as plain dicts."""
    return [r.to_dict() for r in store.records(since=since) if r.ResourceName == node]


def expected_unit_prices(
    records: Sequence[Mapping[str, Any]],
    cost_over: Callable[[datetime, datetime], float],
    node_created: datetime,
) -> dict[str, float]:
    """ChargePeriodStart -> the average $/h over [max(start, node created), end].

    `cost_over(a, b)` is dollars for one instance over [a, b] (for spot, SpotPriceCurve.cost)."""
    out: dict[str, float] = {}
    for r in records:
        start, end = max(parse(r["ChargePeriodStart"]), node_created), parse(r["ChargePeriodEnd"])
        hours = (end - start).total_seconds() / 3600
        if hours > 0:
            out[r["ChargePeriodStart"]] = cost_over(start, end) / hours
    return out


def collector_log(core: Any, namespace: str, *, tail: int = 200) -> list[str]:
    """The collector pods' last log lines, or one line saying why there are none to read."""
    pods = core.list_namespaced_pod(namespace, label_selector=COLLECTOR_SELECTOR).items
    if not pods:
        return [
            f"no collector pod ({COLLECTOR_SELECTOR}) in namespace {namespace}: is the addons stack applied?"
        ]
    lines: list[str] = []
    for pod in pods:
        text = core.read_namespaced_pod_log(pod.metadata.name, namespace, tail_lines=tail)
        lines += [f"{pod.metadata.name}: {line}" for line in text.splitlines()]
    return lines or [f"the collector pod(s) {[p.metadata.name for p in pods]} have logged nothing"]
