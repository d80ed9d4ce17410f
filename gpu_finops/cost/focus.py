"""The collector's cost records as a FOCUS 1.2 cost and usage dataset, one row per tenant per node-interval.

FOCUS 1.2 by default; `version="1.3"` adds 1.3's split cost allocation columns (gpu_finops/cost/focus13.py). 1.2
stays the default: no installable validator checks 1.3 (focus-validator 2.2.1 bundles the 1.2 model), and in
1.3 the tenant moves from Tags to AllocatedTags, which readers of our 1.2 Tags would miss.

Every column FOCUS 1.2 makes mandatory is present and never null where the spec says so; so are the
conditional columns whose condition holds for EC2 (regions, resources, SKUs, list and contracted prices,
pricing currency, commitment discounts and capacity reservations, which exist at the provider even though
these rows use none, so those are present and null). EffectiveCost is never null: an interval with no
price is not a FOCUS row; it is returned in `unpriced`, with its x_Status, for the export to list apart.

Money is decimal.Decimal on MONEY_QUANTUM (one micro-dollar). Each node-interval's costs are quantized
once (half-even) from the collector's float, then split by gpu_finops.cost.allocation.split, so a node's rows
sum to its interval cost exactly. ContractedUnitPrice is the list price (no negotiated discount is
known); spot's saving shows as EffectiveCost below ContractedCost.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any

from gpu_finops.cost.allocation import QUANTITY_QUANTUM, UNALLOCATED, shares, split, to_decimal
from gpu_finops.cost.focus13 import FOCUS13_COLUMNS, SHARE_KEY, allocate
from gpu_finops.cost.gpu_holdings import GpuHolding
from gpu_finops.cost.holdings_record import STATUS_NO_HOLDINGS, IntervalHoldings
from gpu_finops.cost.records import CostRecord
from gpu_finops.facts.kube_keys import LABEL_NODEPOOL, LABEL_TENANT

FOCUS_VERSION = "1.2"
FOCUS_VERSIONS = ("1.2", "1.3")  # 1.3 adds the allocation columns (gpu_finops/cost/focus13.py)
TENANT_TAG = LABEL_TENANT
NAMESPACE_TAG = "kubernetes.io/namespace"
NODEPOOL_TAG = LABEL_NODEPOOL
ALLOCATION_METHOD = "gpu-seconds"

# Kinds of column, for the Parquet schema (gpu_finops/cost/export.py) and the Athena DDL (docs/finops.md).
MONEY, QUANTITY, TIME, TEXT, INT, FLOAT, BOOL = "money", "quantity", "time", "text", "int", "float", "bool"

FOCUS_COLUMNS: dict[str, str] = {
    "AvailabilityZone": TEXT,
    "BilledCost": MONEY,
    "BillingAccountId": TEXT,
    "BillingAccountName": TEXT,
    "BillingCurrency": TEXT,
    "BillingPeriodEnd": TIME,
    "BillingPeriodStart": TIME,
    "CapacityReservationId": TEXT,
    "CapacityReservationStatus": TEXT,
    "ChargeCategory": TEXT,
    "ChargeClass": TEXT,
    "ChargeDescription": TEXT,
    "ChargeFrequency": TEXT,
    "ChargePeriodEnd": TIME,
    "ChargePeriodStart": TIME,
    "CommitmentDiscountCategory": TEXT,
    "CommitmentDiscountId": TEXT,
    "CommitmentDiscountName": TEXT,
    "CommitmentDiscountQuantity": QUANTITY,
    "CommitmentDiscountStatus": TEXT,
    "CommitmentDiscountType": TEXT,
    "CommitmentDiscountUnit": TEXT,
    "ConsumedQuantity": QUANTITY,
    "ConsumedUnit": TEXT,
    "ContractedCost": MONEY,
    "ContractedUnitPrice": MONEY,
    "EffectiveCost": MONEY,
    "InvoiceId": TEXT,
    "InvoiceIssuerName": TEXT,
    "ListCost": MONEY,
    "ListUnitPrice": MONEY,
    "PricingCategory": TEXT,
    "PricingCurrency": TEXT,
    "PricingCurrencyContractedUnitPrice": MONEY,
    "PricingCurrencyEffectiveCost": MONEY,
    "PricingCurrencyListUnitPrice": MONEY,
    "PricingQuantity": QUANTITY,
    "PricingUnit": TEXT,
    "ProviderName": TEXT,
    "PublisherName": TEXT,
    "RegionId": TEXT,
    "RegionName": TEXT,
    "ResourceId": TEXT,
    "ResourceName": TEXT,
    "ResourceType": TEXT,
    "ServiceCategory": TEXT,
    "ServiceName": TEXT,
    "ServiceSubcategory": TEXT,
    "SkuId": TEXT,
    "SkuMeter": TEXT,
    "SkuPriceDetails": TEXT,
    "SkuPriceId": TEXT,
    "SubAccountId": TEXT,
    "SubAccountName": TEXT,
    "Tags": TEXT,
}
# The columns FOCUS 1.2 makes Mandatory (the rest above are Conditional or Recommended).
MANDATORY = (
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "ContractedCost",
    "EffectiveCost",
    "InvoiceIssuerName",
    "ListCost",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "ServiceCategory",
    "ServiceName",
)
X_COLUMNS: dict[str, str] = {
    "x_Tenant": TEXT,
    "x_Namespace": TEXT,
    "x_Pods": TEXT,  # JSON list of the pods that held the share
    "x_NodePool": TEXT,
    "x_InstanceType": TEXT,
    "x_CapacityType": TEXT,
    "x_GpuCount": INT,
    "x_GpuSeconds": FLOAT,  # physical-GPU-seconds this row held
    "x_AllocationMethod": TEXT,
    "x_AllocationShare": FLOAT,  # of the node-interval, 0..1 (exact fraction rounded for display)
    "x_NodeEffectiveCost": MONEY,  # the whole node-interval's EffectiveCost
    "x_IdleCost": MONEY,  # this row's part of EffectiveCost x (1 - SM_ACTIVE); null when not measured
    "x_SmActive": FLOAT,
    "x_GpuUtilPercent": FLOAT,
    "x_RateSource": TEXT,
    "x_RateStale": BOOL,
    "x_Status": TEXT,
}
COLUMNS: dict[str, str] = FOCUS_COLUMNS | X_COLUMNS


def columns(version: str = FOCUS_VERSION) -> dict[str, str]:
    """The dataset's columns for a FOCUS version: FOCUS columns in name order, then the x_ columns."""
    if version not in FOCUS_VERSIONS:
        raise ValueError(f"FOCUS version {version!r}: expected one of {', '.join(FOCUS_VERSIONS)}")
    focus = FOCUS_COLUMNS | (FOCUS13_COLUMNS if version == "1.3" else {})
    return dict(sorted(focus.items())) | X_COLUMNS


MONEY_COLUMNS = tuple(c for c, kind in COLUMNS.items() if kind == MONEY)

# EC2's region names as AWS's own FOCUS export spells them; an unlisted region falls back to its id.
REGION_NAMES = {
    "us-east-1": "US East (N. Virginia)",
    "us-east-2": "US East (Ohio)",
    "us-west-2": "US West (Oregon)",
    "eu-west-1": "Europe (Ireland)",
    "eu-central-1": "Europe (Frankfurt)",
    "ap-northeast-1": "Asia Pacific (Tokyo)",
}


@dataclass(frozen=True)
class FocusContext:
    """Who bills these rows. The defaults describe EC2 bought from AWS."""

    billing_account_id: str
    billing_account_name: str
    provider: str = "AWS"  # ProviderName, PublisherName and InvoiceIssuerName
    service_name: str = "Amazon Elastic Compute Cloud"
    currency: str = "USD"
    sub_account_id: str | None = None
    sub_account_name: str | None = None


@dataclass
class FocusDataset:
    rows: list[dict[str, Any]] = field(default_factory=list)
    unpriced: list[CostRecord] = field(default_factory=list)  # out of the FOCUS rows, listed apart
    version: str = FOCUS_VERSION


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def billing_period(t: datetime) -> tuple[datetime, datetime]:
    """The calendar month (UTC) holding t: [first day, first day of the next month)."""
    start = datetime(t.year, t.month, 1, tzinfo=UTC)
    end = datetime(t.year + (t.month == 12), t.month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def period_key(t: datetime) -> str:
    return f"{t.year:04d}-{t.month:02d}"


def _tags(tenant: str, namespace: str | None, nodepool: str | None) -> str:
    tags = {TENANT_TAG: tenant}
    if namespace:
        tags[NAMESPACE_TAG] = namespace
    if nodepool:
        tags[NODEPOOL_TAG] = nodepool
    return json.dumps(tags, sort_keys=True)


def node_rows(
    record: CostRecord, holdings: Sequence[GpuHolding] | None, ctx: FocusContext, version: str = FOCUS_VERSION
) -> list[dict[str, Any]]:
    """The FOCUS rows of one priced node-interval: one per (tenant, namespace) that held its GPUs, plus
    the unallocated remainder. Their money columns sum to the node-interval's exactly. `holdings` None:
    nobody recorded who held the GPUs, so the whole interval is one unallocated row, x_Status no-holdings."""
    unknown = holdings is None
    holdings = holdings or []
    if record.EffectiveCost is None:
        raise ValueError(f"{record.ResourceName} {record.ChargePeriodStart}: no price ({record.x_Status})")
    start, end = parse_time(record.ChargePeriodStart), parse_time(record.ChargePeriodEnd)
    capacity = Fraction(record.x_GpuCount) * Fraction(to_decimal(record.x_InstanceSeconds, QUANTITY_QUANTUM))
    parts = shares(record.ResourceName, start, end, capacity, holdings)
    weights = [s.weight for s in parts]

    effective = to_decimal(record.EffectiveCost)
    quantity = to_decimal(record.PricingQuantity, QUANTITY_QUANTUM)
    list_price = to_decimal(record.ListUnitPrice) if record.ListUnitPrice is not None else None
    # Without a list price (a catalog rate with none), list and contracted are what was paid.
    list_cost = to_decimal(list_price * quantity) if list_price is not None else effective
    idle = None
    if record.x_IdleCost is not None and record.x_SmActive is not None:
        idle = to_decimal(effective * (1 - Decimal(repr(record.x_SmActive))))
    columns = {
        "EffectiveCost": split(effective, weights),
        "BilledCost": split(effective, weights),
        "ListCost": split(list_cost, weights),
        "PricingQuantity": split(quantity, weights, QUANTITY_QUANTUM),
    }
    idle_parts = split(idle, weights) if idle is not None else [None] * len(parts)
    p_start, p_end = billing_period(start)
    spot = record.x_CapacityType == "spot"
    unit_price = (
        list_price if list_price is not None else (to_decimal(effective / quantity) if quantity else None)
    )
    sku = record.x_InstanceType
    out = []
    for i, share in enumerate(parts):
        who = "nobody (unallocated)" if share.tenant == UNALLOCATED else f"tenant {share.tenant}"
        if unknown:
            who = "nobody known (unallocated: no GPU holdings were recorded for this interval)"
        out.append(
            {
                "AvailabilityZone": record.AvailabilityZone,
                "BilledCost": columns["BilledCost"][i],
                "BillingAccountId": ctx.billing_account_id,
                "BillingAccountName": ctx.billing_account_name,
                "BillingCurrency": ctx.currency,
                "BillingPeriodEnd": p_end,
                "BillingPeriodStart": p_start,
                "CapacityReservationId": None,
                "CapacityReservationStatus": None,
                "ChargeCategory": "Usage",
                "ChargeClass": None,  # not a correction
                "ChargeDescription": (
                    f"{record.x_InstanceType or 'GPU'} {record.x_CapacityType or ''} instance hours of "
                    f"GPU node {record.ResourceName}, share held by {who}"
                ).replace("  ", " "),
                "ChargeFrequency": "Usage-Based",
                "ChargePeriodEnd": end,
                "ChargePeriodStart": start,
                "CommitmentDiscountCategory": None,
                "CommitmentDiscountId": None,
                "CommitmentDiscountName": None,
                "CommitmentDiscountQuantity": None,
                "CommitmentDiscountStatus": None,
                "CommitmentDiscountType": None,
                "CommitmentDiscountUnit": None,
                "ConsumedQuantity": columns["PricingQuantity"][i],
                "ConsumedUnit": "Hours",
                "ContractedCost": columns["ListCost"][i],
                "ContractedUnitPrice": unit_price,
                "EffectiveCost": columns["EffectiveCost"][i],
                "InvoiceId": None,
                "InvoiceIssuerName": ctx.provider,
                "ListCost": columns["ListCost"][i],
                "ListUnitPrice": unit_price,
                "PricingCategory": "Dynamic" if spot else "Standard",
                "PricingCurrency": ctx.currency,
                "PricingCurrencyContractedUnitPrice": unit_price,
                "PricingCurrencyEffectiveCost": columns["EffectiveCost"][i],
                "PricingCurrencyListUnitPrice": unit_price,
                "PricingQuantity": columns["PricingQuantity"][i],
                "PricingUnit": "Hours",
                "ProviderName": ctx.provider,
                "PublisherName": ctx.provider,
                "RegionId": record.RegionId,
                "RegionName": REGION_NAMES.get(record.RegionId or "", record.RegionId),
                "ResourceId": record.ResourceId,
                "ResourceName": record.ResourceName,
                "ResourceType": "Virtual Machine",
                "ServiceCategory": "Compute",
                "ServiceName": ctx.service_name,
                "ServiceSubcategory": "Virtual Machines",
                "SkuId": sku,
                "SkuMeter": "Compute Usage" if sku else None,
                "SkuPriceDetails": None,
                "SkuPriceId": f"{sku}:{record.x_CapacityType}:{record.RegionId}" if sku else None,
                "SubAccountId": ctx.sub_account_id,
                "SubAccountName": ctx.sub_account_name,
                "Tags": _tags(share.tenant, share.namespace, record.x_NodePool),
                "x_Tenant": share.tenant,
                "x_Namespace": share.namespace,
                "x_Pods": json.dumps(list(share.pods)),
                "x_NodePool": record.x_NodePool,
                "x_InstanceType": record.x_InstanceType,
                "x_CapacityType": record.x_CapacityType,
                "x_GpuCount": record.x_GpuCount,
                "x_GpuSeconds": float(share.gpu_seconds),
                "x_AllocationMethod": ALLOCATION_METHOD,
                "x_AllocationShare": float(share.weight),
                "x_NodeEffectiveCost": effective,
                "x_IdleCost": idle_parts[i],
                "x_SmActive": record.x_SmActive,
                "x_GpuUtilPercent": record.x_GpuUtilPercent,
                "x_RateSource": record.x_RateSource,
                "x_RateStale": record.x_RateStale,
                "x_Status": STATUS_NO_HOLDINGS if unknown else record.x_Status,
                SHARE_KEY: share,
            }
        )
    if version == "1.3":
        origin = f"{record.x_InstanceType or 'GPU'} {record.x_CapacityType or ''} instance hours of GPU node"
        allocate(
            out,
            ctx.provider,
            _node_tags(record.x_NodePool),
            f"{origin} {record.ResourceName}".replace("  ", " "),
        )
    return out


def _node_tags(nodepool: str | None) -> str:
    return json.dumps({NODEPOOL_TAG: nodepool} if nodepool else {}, sort_keys=True)


def focus_dataset(
    records: Iterable[CostRecord],
    holdings: Sequence[GpuHolding] | Mapping[tuple[str, str], IntervalHoldings],
    ctx: FocusContext,
    version: str = FOCUS_VERSION,
) -> FocusDataset:
    """Every priced record as FOCUS rows split by tenant; every unpriced one in `unpriced`.

    `holdings`: what the collector recorded per node-interval (the store's `holdings()`, keyed by
    (ResourceName, ChargePeriodStart)): an interval missing from it is one unallocated row with x_Status
    `no-holdings`. Or a list of holdings read now (a file, or the cluster's pods today), applied to every
    interval: pods deleted since are not in it, so their share shows as unallocated."""
    recorded = isinstance(holdings, Mapping)
    by_node: dict[str, list[GpuHolding]] = {}
    if not recorded:
        for h in holdings:
            by_node.setdefault(h.node, []).append(h)
    columns(version)  # refuses an unknown version before any work
    out = FocusDataset(version=version)
    for record in records:
        if record.EffectiveCost is None:
            out.unpriced.append(record)
            continue
        if recorded:
            interval = holdings.get((record.ResourceName, record.ChargePeriodStart))
            held = list(interval.holdings) if interval is not None else None
        else:
            held = by_node.get(record.ResourceName, [])
        out.rows.extend(node_rows(record, held, ctx, version))
    return out
