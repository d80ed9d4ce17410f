"""Cost records and GPU holdings shaped like the collector's and the Kubernetes reader's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpu_finops.cost.focus import FocusContext
from gpu_finops.cost.gpu_holdings import GpuHolding
from gpu_finops.cost.records import STATUS_NO_RATE, STATUS_OK, CostRecord

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
CTX = FocusContext(billing_account_id="123456789012", billing_account_name="gpu-finops sandbox")


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def record(
    node: str = "gpu-a",
    *,
    start: datetime = T0,
    seconds: int = 60,
    cost: float | None = 0.031017,
    sm_active: float | None = 0.4582,
    gpus: int = 1,
    capacity: str = "spot",
    list_price: float | None = 1.861,
) -> CostRecord:
    hours = seconds / 3600
    idle = cost * (1 - sm_active) if cost is not None and sm_active is not None else None
    return CostRecord(
        ChargePeriodStart=iso(start),
        ChargePeriodEnd=iso(start + timedelta(seconds=seconds)),
        ResourceId=f"i-{node}",
        ResourceName=node,
        ResourceType="GPU node",
        RegionId="us-east-1",
        AvailabilityZone="us-east-1a",
        PricingCategory="Dynamic" if capacity == "spot" else "Standard",
        PricingUnit="Hours",
        PricingQuantity=hours,
        ListUnitPrice=list_price,
        EffectiveCost=cost,
        x_InstanceType="g6e.xlarge",
        x_CapacityType=capacity,
        x_NodePool="gpu-spot",
        x_GpuCount=gpus,
        x_InstanceSeconds=float(seconds),
        x_EffectiveUnitPrice=cost / hours if cost is not None else None,
        x_RateSource="spot" if cost is not None else None,
        x_RateStale=False,
        x_GpuUtilPercent=100.0,
        x_SmActive=sm_active,
        x_SmOccupancy=0.3,
        x_PowerWatts=180.0,
        x_SmClockMHz=1980.0,
        x_GpusReporting=gpus,
        x_IdleCost=idle,
        x_Status=STATUS_OK if cost is not None else STATUS_NO_RATE,
        x_Message=None if cost is not None else "no spot price history for g6e.xlarge in us-east-1a",
    )


def hold(
    tenant: str,
    *,
    node: str = "gpu-a",
    pod: str | None = None,
    gpus: int = 1,
    replicas: int = 1,
    start: datetime = T0 - timedelta(minutes=5),
    end: datetime | None = None,
    namespace: str | None = None,
) -> GpuHolding:
    return GpuHolding(
        namespace=namespace or tenant,
        tenant=tenant,
        pod=pod or f"{tenant}-worker",
        node=node,
        gpus=gpus,
        start=start,
        end=end,
        replicas=replicas,
    )
