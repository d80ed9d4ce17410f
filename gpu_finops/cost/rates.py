"""What an instance costs per hour: on-demand from the Pricing API, spot from spot price history.

On-demand prices come from `pricing:GetProducts` with the filters that select plain Linux shared-tenancy
on-demand capacity (without `capacitystatus=Used` and `marketoption=OnDemand`, GPU types also match
Capacity Block and reservation products). They are cached and refreshed every 12 hours; when a refresh
fails, the last good price is kept and flagged stale. Spot prices are a step function per availability
zone: the price at time t is the latest record with timestamp <= t. AWS returns records unsorted and
sometimes duplicated; both are handled here.
"""

from __future__ import annotations

import json
import logging
import time
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

log = logging.getLogger(__name__)

PRICING_REGION = "us-east-1"  # the Pricing API's endpoint region (also eu-central-1, ap-south-1)
REFRESH_SECONDS = 12 * 3600
SPOT_LOOKBACK = timedelta(days=1)  # how far before an interval to look for the price then in effect
SPOT_PRODUCT = "Linux/UNIX"


class RateUnavailable(RuntimeError):
    """No price could be found, and there is no last good one to fall back to."""


@dataclass(frozen=True)
class OnDemandPrice:
    usd_per_hour: float
    fetched_at: float  # time.time() of the successful fetch
    stale: bool = False  # True when the last refresh failed and this is the last good price


def pricing_filters(instance_type: str, region: str) -> list[dict[str, str]]:
    """The GetProducts filters for one plain on-demand Linux instance price."""
    fields = {
        "instanceType": instance_type,
        "regionCode": region,
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        "marketoption": "OnDemand",
    }
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in fields.items()]


def on_demand_usd_from_price_list(items: Iterable[str], instance_type: str, region: str) -> float:
    """Extract the one hourly USD price from PriceList JSON strings; refuse ambiguity."""
    prices: set[float] = set()
    for raw in items:
        product = json.loads(raw)
        for term in product.get("terms", {}).get("OnDemand", {}).values():
            for dim in term.get("priceDimensions", {}).values():
                if dim.get("unit") not in ("Hrs", "Hours"):
                    continue
                usd = dim.get("pricePerUnit", {}).get("USD")
                if usd is not None and float(usd) > 0:
                    prices.add(float(usd))
    if not prices:
        raise RateUnavailable(
            f"the Pricing API returned no hourly on-demand USD price for {instance_type} in {region}"
        )
    if len(prices) > 1:
        raise RateUnavailable(
            f"the Pricing API returned {len(prices)} different on-demand prices for {instance_type} in {region} "
            f"({sorted(prices)}); the filters in gpu_finops/cost/rates.py no longer select one product"
        )
    return prices.pop()


class OnDemandPrices:
    """Cached on-demand hourly prices, refreshed every 12 h, last good price kept when a refresh fails."""

    def __init__(
        self,
        pricing_client: Any,
        *,
        refresh_seconds: float = REFRESH_SECONDS,
        clock: Callable[[], float] = time.time,
    ):
        self.client = pricing_client
        self.refresh_seconds = refresh_seconds
        self.clock = clock
        self._cache: dict[tuple[str, str], OnDemandPrice] = {}
        self.api_calls = 0

    def _fetch(self, instance_type: str, region: str) -> float:
        items: list[str] = []
        kwargs: dict[str, Any] = {
            "ServiceCode": "AmazonEC2",
            "Filters": pricing_filters(instance_type, region),
            "FormatVersion": "aws_v1",
            "MaxResults": 100,
        }
        while True:
            self.api_calls += 1
            page = self.client.get_products(**kwargs)
            items.extend(page.get("PriceList", []))
            token = page.get("NextToken")
            if not token:
                break
            kwargs["NextToken"] = token
        return on_demand_usd_from_price_list(items, instance_type, region)

    def get(self, instance_type: str, region: str) -> OnDemandPrice:
        key = (instance_type, region)
        cached = self._cache.get(key)
        now = self.clock()
        if cached and not cached.stale and now - cached.fetched_at < self.refresh_seconds:
            return cached
        try:
            price = OnDemandPrice(self._fetch(instance_type, region), fetched_at=now)
        except (ClientError, BotoCoreError, RateUnavailable) as exc:
            if cached is None:
                raise RateUnavailable(
                    f"no on-demand price for {instance_type} in {region}: {exc}; and no earlier price to fall back on"
                ) from exc
            log.warning(
                "Pricing API refresh failed for %s in %s (%s); keeping the last good price $%.4f/h "
                "fetched %.0fs ago, flagged stale",
                instance_type,
                region,
                exc,
                cached.usd_per_hour,
                now - cached.fetched_at,
            )
            stale = OnDemandPrice(cached.usd_per_hour, cached.fetched_at, stale=True)
            self._cache[key] = stale
            return stale
        self._cache[key] = price
        return price


@dataclass(frozen=True)
class SpotStep:
    at: datetime
    usd_per_hour: float


class SpotPriceCurve:
    """A spot price step function for one instance type in one zone."""

    def __init__(self, steps: Iterable[SpotStep]):
        unique: dict[datetime, float] = {}
        for step in steps:
            # Duplicates with one timestamp: AWS repeats records across pages; keep one.
            unique[step.at] = step.usd_per_hour
        self.steps = [SpotStep(at, unique[at]) for at in sorted(unique)]
        self._times = [s.at for s in self.steps]

    def price_at(self, t: datetime) -> float:
        index = bisect_right(self._times, t) - 1
        if index < 0:
            first = self._times[0].isoformat() if self._times else "none"
            raise RateUnavailable(f"no spot price in effect at {t.isoformat()} (first record: {first})")
        return self.steps[index].usd_per_hour

    def cost(self, start: datetime, end: datetime) -> float:
        """Integrate the step function over [start, end]: dollars for one instance."""
        if end <= start:
            return 0.0
        total = 0.0
        cursor = start
        price = self.price_at(start)
        for step in self.steps:
            if step.at <= start:
                continue
            if step.at >= end:
                break
            total += price * (step.at - cursor).total_seconds() / 3600
            cursor, price = step.at, step.usd_per_hour
        total += price * (end - cursor).total_seconds() / 3600
        return total


class SpotPrices:
    """Spot price curves from DescribeSpotPriceHistory, one per (instance type, zone)."""

    def __init__(self, ec2_client: Any, *, lookback: timedelta = SPOT_LOOKBACK):
        self.client = ec2_client
        self.lookback = lookback
        self.api_calls = 0

    def curve(self, instance_type: str, zone: str, start: datetime, end: datetime) -> SpotPriceCurve:
        steps: list[SpotStep] = []
        kwargs: dict[str, Any] = {
            "InstanceTypes": [instance_type],
            "ProductDescriptions": [SPOT_PRODUCT],
            "AvailabilityZone": zone,
            "StartTime": start - self.lookback,
            "EndTime": end,
        }
        while True:
            self.api_calls += 1
            try:
                page = self.client.describe_spot_price_history(**kwargs)
            except (ClientError, BotoCoreError) as exc:
                raise RateUnavailable(
                    f"spot price history for {instance_type} in {zone} failed: {exc}"
                ) from exc
            for record in page.get("SpotPriceHistory", []):
                # Some paginated responses mix zones when the filter is loose; keep only ours.
                if record.get("AvailabilityZone") != zone or record.get("InstanceType") != instance_type:
                    continue
                steps.append(SpotStep(record["Timestamp"], float(record["SpotPrice"])))
            token = page.get("NextToken")
            if not token:
                break
            kwargs["NextToken"] = token
        if not steps:
            raise RateUnavailable(
                f"no spot price history for {instance_type} in {zone} between "
                f"{(start - self.lookback).isoformat()} and {end.isoformat()}"
            )
        return SpotPriceCurve(steps)
