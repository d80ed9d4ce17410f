"""The GPU instance types the project knows, with prices: one list for the local target's Karpenter
(kwok) catalog, the collector's offline rates and the cost guard's offline ceiling. Prices are the
sandbox region's published figures the docs and tests use."""

from __future__ import annotations

# instance type -> (vCPU, memory, GPUs, on-demand $/h, spot $/h)
GPU_TYPES: dict[str, tuple[int, str, int, float, float]] = {
    "g6e.xlarge": (4, "32Gi", 1, 1.861, 0.95),
    "g6e.12xlarge": (48, "384Gi", 4, 10.493, 5.2),
}

ON_DEMAND, SPOT = "on-demand", "spot"  # Karpenter's capacity types


def prices() -> dict[tuple[str, str], float]:
    """(instance type, capacity type) -> $/h, for finops.pricing.CatalogRates."""
    out = {}
    for name, (_, _, _, od, spot) in GPU_TYPES.items():
        out[(name, ON_DEMAND)] = od
        out[(name, SPOT)] = spot
    return out
