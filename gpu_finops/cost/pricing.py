"""Turn a node and an interval into dollars: which rate applies, and what the interval cost."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from gpu_finops.clients.nodes import GpuNode
from gpu_finops.cost.rates import OnDemandPrices, RateUnavailable, SpotPrices
from gpu_finops.cost.records import RATE_CATALOG, RATE_FALLBACK, RATE_ON_DEMAND, RATE_SPOT


@dataclass(frozen=True)
class IntervalCost:
    cost: float  # dollars for [start, end] of this node
    list_unit_price: float | None  # on-demand $/h, when known
    source: str  # on-demand | spot | fallback | catalog
    stale: bool = False
    message: str | None = None


class RateBook(Protocol):
    def interval_cost(self, node: GpuNode, start: datetime, end: datetime) -> IntervalCost: ...


class AwsRates:
    """On-demand from the Pricing API, spot from spot price history; spot falls back to on-demand, flagged."""

    def __init__(self, on_demand: OnDemandPrices, spot: SpotPrices, default_region: str | None = None):
        self.on_demand = on_demand
        self.spot = spot
        self.default_region = default_region

    def interval_cost(self, node: GpuNode, start: datetime, end: datetime) -> IntervalCost:
        hours = (end - start).total_seconds() / 3600
        region = node.region or self.default_region
        if not node.instance_type or not region:
            raise RateUnavailable(f"node {node.name} has no instance-type or zone label; cannot price it")
        od = self.on_demand.get(node.instance_type, region)
        if node.capacity_type == "spot":
            if not node.zone:
                raise RateUnavailable(f"spot node {node.name} has no zone label; spot prices are per zone")
            try:
                curve = self.spot.curve(node.instance_type, node.zone, start, end)
                return IntervalCost(curve.cost(start, end), od.usd_per_hour, RATE_SPOT, od.stale)
            except RateUnavailable as exc:
                return IntervalCost(
                    od.usd_per_hour * hours,
                    od.usd_per_hour,
                    RATE_FALLBACK,
                    od.stale,
                    f"spot price unavailable ({exc}); charged at the on-demand price",
                )
        notes = []
        if node.capacity_type is None:  # priced on-demand, and the record says it did not know
            notes.append(
                f"node {node.name} has no capacity type (no karpenter.sh/capacity-type or "
                "eks.amazonaws.com/capacityType label, and EC2's instance lifecycle was not read): priced "
                "on-demand"
            )
        if od.stale:
            notes.append("on-demand price is stale: the Pricing API refresh failed")
        return IntervalCost(
            od.usd_per_hour * hours, od.usd_per_hour, RATE_ON_DEMAND, od.stale, "; ".join(notes) or None
        )


class CatalogRates:
    """A fixed price list per (instance type, capacity type): the local target's instance-type catalog."""

    def __init__(self, prices: dict[tuple[str, str], float]):
        self.prices = prices

    def interval_cost(self, node: GpuNode, start: datetime, end: datetime) -> IntervalCost:
        key = (node.instance_type or "", node.capacity_type or "on-demand")
        if key not in self.prices:
            raise RateUnavailable(
                f"no catalog price for {key[0]!r} ({key[1]}) of node {node.name}; "
                f"known: {sorted(self.prices)}"
            )
        hours = (end - start).total_seconds() / 3600
        list_price = self.prices.get((key[0], "on-demand"))
        unknown = (
            f"node {node.name} has no capacity type label: priced on-demand"
            if not node.capacity_type
            else None
        )
        return IntervalCost(self.prices[key] * hours, list_price, RATE_CATALOG, message=unknown)
