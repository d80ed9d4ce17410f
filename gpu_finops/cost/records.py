"""One cost record per GPU node per interval, with FinOps FOCUS column names where one fits.

FOCUS columns: ChargePeriodStart/End, ResourceId, ResourceName, ResourceType, RegionId,
AvailabilityZone, PricingCategory, PricingUnit, PricingQuantity, ListUnitPrice, EffectiveCost.
Everything else is ours, prefixed `x_`. GPU_UTIL (percent, as DCGM reports it) and SM_ACTIVE (a ratio)
are both stored on every record so the gap between them is in the data. Missing measurements stay None
(null), never 0 or 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from gpu_finops.facts import timestamps

# Why a record has no idle cost (x_Status); "ok" means every measurement is present.
STATUS_OK = "ok"
STATUS_STARTING = "starting"  # node younger than the grace period and no GPU series yet
STATUS_MISSING_SM_ACTIVE = "missing-sm-active"  # GPU_UTIL series exist, SM_ACTIVE do not: CSV misconfigured
STATUS_NO_GPU_SERIES = "no-gpu-series"  # node past its grace period and no DCGM series at all
STATUS_PARTIAL = "partial-gpu-series"  # fewer GPUs report SM_ACTIVE than the node has
STATUS_NO_RATE = "no-rate"  # no price could be found

RATE_ON_DEMAND = "on-demand"
RATE_SPOT = "spot"
RATE_FALLBACK = "fallback"  # spot history unavailable: on-demand list price used instead
RATE_CATALOG = "catalog"  # a fixed price list (the local rehearsal target's instance types)


@dataclass
class CostRecord:
    ChargePeriodStart: str  # ISO 8601 UTC, the interval's start
    ChargePeriodEnd: str
    ResourceId: str  # EC2 instance id, or the node name where there is none
    ResourceName: str  # the Kubernetes node name
    ResourceType: str  # "GPU node"
    RegionId: str | None
    AvailabilityZone: str | None
    PricingCategory: str | None  # FOCUS: "Standard" (on-demand) or "Dynamic" (spot)
    PricingUnit: str  # "Hours"
    PricingQuantity: float  # observed instance-hours inside the interval
    ListUnitPrice: float | None  # on-demand $/h
    EffectiveCost: float | None  # what the interval cost, $ (None only with x_Status no-rate)
    x_InstanceType: str | None
    x_CapacityType: str | None
    x_NodePool: str | None
    x_GpuCount: int
    x_InstanceSeconds: float
    x_EffectiveUnitPrice: float | None  # average $/h over the interval
    x_RateSource: str | None
    x_RateStale: bool
    x_GpuUtilPercent: float | None  # DCGM_FI_DEV_GPU_UTIL in percent 0..100, mean over GPUs and interval
    x_SmActive: float | None  # DCGM_FI_PROF_SM_ACTIVE, ratio 0..1
    x_SmOccupancy: float | None
    x_PowerWatts: float | None
    x_SmClockMHz: float | None
    x_GpusReporting: int
    x_IdleCost: float | None  # EffectiveCost x (1 - SM_ACTIVE)
    x_Status: str
    x_Message: str | None = None
    # the unit the exporter reported GPU_UTIL in, read from the data (gpu_finops/facts/dcgm_inputs.py: percent, ratio,
    # or "percent|ratio (all zero)"); x_GpuUtilPercent is always in percent. None: no GPU_UTIL series
    x_GpuUtilUnit: str | None = None
    # each figure's provenance: how many of the node's cards reported it, and the series it was read from (the
    # fleet's spelling of it). None: a record written before these columns (schema version 3 or older)
    x_GpusReportingGpuUtil: int | None = None
    x_GpusReportingSmActive: int | None = None
    x_GpuUtilSeries: str | None = None
    x_SmActiveSeries: str | None = None

    def to_dict(self) -> dict[str, Any]:
        # Every field is a scalar, so a shallow read is the whole record (asdict deep-copies each value,
        # which was most of a 1,000-GPU collector cycle).
        return {name: getattr(self, name) for name in COLUMNS}

    def row(self) -> tuple[Any, ...]:
        """The values in COLUMNS order, for the SQLite store."""
        return tuple(getattr(self, name) for name in COLUMNS)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CostRecord:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(CostRecord))
# each column's Python type and whether it may be None, from the annotations ("float | None")
_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool, int)}
_KINDS = {f.name: (str(f.type).split(" | ")[0], "None" in str(f.type)) for f in fields(CostRecord)}


def column_problem(name: str, value: Any) -> str | None:
    """Why `value` cannot be column `name` of a record (None if it can): a store another program wrote
    to, or edited by hand, may hold text or NULL where a cost belongs; reading it on would crash a report
    or show a NaN as a figure."""
    kind, optional = _KINDS[name]
    if value is None:
        return None if optional else f"{name} is NULL; expected {kind}"
    if not isinstance(value, _TYPES[kind]) or (kind != "bool" and isinstance(value, bool)):
        return (
            f"{name} is {type(value).__name__} {value!r:.40}; expected {kind}{' or NULL' if optional else ''}"
        )
    if kind == "float" and not math.isfinite(value):
        return f"{name} is {value!r}; expected a finite number{' or NULL' if optional else ''}"
    if kind in ("float", "int") and abs(value) > MAX_FIGURE:
        return f"{name} is {value!r:.40}; expected a figure within ±{MAX_FIGURE:.0e} (no interval costs more)"
    if name in ("ChargePeriodStart", "ChargePeriodEnd") and timestamps.parse_or_none(value) is None:
        return f"{name} is {value!r:.40}; expected an ISO 8601 time with a zone, in 1970-9998"
    return None


MAX_FIGURE = 1e12  # no record's dollars, seconds or watts come near this: beyond it is a broken store


def record_problem(data: dict[str, Any]) -> str | None:
    """Why a row whose columns are each valid is still no interval (None if it is one)."""
    start, end = (timestamps.parse_or_none(data.get(k)) for k in ("ChargePeriodStart", "ChargePeriodEnd"))
    if start is not None and end is not None and end <= start:
        return f"ChargePeriodEnd {data['ChargePeriodEnd']} is not after ChargePeriodStart {data['ChargePeriodStart']}"
    return None


KEY = ("ResourceId", "ChargePeriodStart")


@dataclass
class CycleResult:
    start: datetime
    end: datetime
    records: list[CostRecord]
    queries: int
    seconds: float
    problems: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems
