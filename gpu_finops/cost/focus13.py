"""FOCUS 1.3's split cost allocation columns over the per-tenant rows of gpu_finops/cost/focus.py (`--focus-version 1.3`).

FOCUS 1.3 (ratified December 2025) describes a data generator's split of one charge (the *origin charge*:
here a node-interval's cost) into *allocated charges* (here its rows per tenant and the unallocated rest):

- AllocatedMethodId `gpu-finops/gpu-seconds`, documented in docs/finops.md (the split by physical-GPU-seconds
  held, gpu_finops/cost/allocation.py); on every row of a split node-interval, the unallocated row too.
- AllocatedMethodDetails `{"Elements": [{"AllocatedRatio": r, "UsageUnit": "GPU-Seconds", "UsageQuantity": s}]}`:
  r is the row's share of the node-interval on a 10^-12 quantum, split by the largest-remainder method so the
  rows of one node-interval sum to exactly 1 (the exact fraction is `x_AllocatedRatioExact` beside it).
- AllocatedResourceId `TENANT/NAMESPACE` (unique within a node-interval) and AllocatedResourceName; null on the
  unallocated row ("the unallocated portion of the origin charge").
- AllocatedTags: the tenant and namespace tags, which move out of Tags: an allocated charge's dimensions
  (Tags, ChargeDescription) are the origin charge's, so Tags keeps the node's own tags (its node pool).
- ServiceProviderName and HostProviderName (1.3's replacements for ProviderName and PublisherName, which 1.3
  deprecates and this dataset keeps, so FOCUS 1.2 readers and validators still find them): the provider.

A node-interval nobody held any GPU of, or one whose holdings were not recorded (x_Status no-holdings), is
not split: its one row is the origin charge, and the allocation columns are null.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

from gpu_finops.cost.allocation import UNALLOCATED, split

TEXT = (
    "text"  # gpu_finops.cost.focus's kind of a string column (focus.py imports this module, not the reverse)
)
ALLOCATED_METHOD_ID = "gpu-finops/gpu-seconds"
USAGE_UNIT = "GPU-Seconds"
RATIO_QUANTUM = Decimal("0.000000000001")
SHARE_KEY = "_share"  # the row's gpu_finops.cost.allocation.Share, kept beside the row's columns by gpu_finops.cost.focus
FOCUS13_COLUMNS: dict[str, str] = {
    "AllocatedMethodDetails": TEXT,
    "AllocatedMethodId": TEXT,
    "AllocatedResourceId": TEXT,
    "AllocatedResourceName": TEXT,
    "AllocatedTags": TEXT,
    "HostProviderName": TEXT,
    "ServiceProviderName": TEXT,
}


def ratios(weights: Sequence[Fraction]) -> list[Decimal]:
    """Each weight on RATIO_QUANTUM, summing to exactly 1 (largest remainder)."""
    return split(Decimal(1), weights, RATIO_QUANTUM)


def _details(ratio: Decimal, gpu_seconds: Fraction, weight: Fraction) -> str:
    # float(ratio) prints as the same twelve-decimal number (its shortest repr), so the JSON text is exact.
    element = {"AllocatedRatio": float(ratio), "UsageUnit": USAGE_UNIT, "UsageQuantity": float(gpu_seconds)}
    return json.dumps({"Elements": [element], "x_AllocatedRatioExact": str(weight)})


def allocate(rows: list[dict[str, Any]], provider: str, origin_tags: str, origin_description: str) -> None:
    """Add the 1.3 columns to the rows of ONE node-interval, in place (rows carry their Share under SHARE_KEY)."""
    shares = [r[SHARE_KEY] for r in rows]
    is_split = any(s.tenant != UNALLOCATED for s in shares)
    parts = ratios([s.weight for s in shares]) if is_split else [None] * len(rows)
    for row, share, ratio in zip(rows, shares, parts, strict=True):
        row["ServiceProviderName"] = provider
        row["HostProviderName"] = provider  # EC2 runs on AWS's own infrastructure
        if not is_split:
            row.update(dict.fromkeys(("AllocatedMethodId", "AllocatedMethodDetails", "AllocatedResourceId",
                                      "AllocatedResourceName", "AllocatedTags")))  # fmt: skip
            continue
        held = share.tenant != UNALLOCATED
        allocated_tags = json.loads(row["Tags"])
        for key in json.loads(origin_tags):
            allocated_tags.pop(key, None)
        row.update(
            {
                "AllocatedMethodId": ALLOCATED_METHOD_ID,
                "AllocatedMethodDetails": _details(ratio, share.gpu_seconds, share.weight),
                "AllocatedResourceId": f"{share.tenant}/{share.namespace}" if held else None,
                "AllocatedResourceName": f"tenant {share.tenant}, namespace {share.namespace}"
                if held
                else None,
                "AllocatedTags": json.dumps(allocated_tags, sort_keys=True) if held else None,
                "Tags": origin_tags,
                "ChargeDescription": origin_description,
            }
        )
