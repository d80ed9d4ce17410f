"""The GPU instance types the project knows, with prices: one list for the local target's Karpenter
(kwok) catalog, the collector's offline rates and the cost guard's offline ceiling. Prices are the
sandbox region's published figures the docs and tests use."""

from __future__ import annotations

# instance type -> (vCPU, memory, GPUs, on-demand $/h, spot $/h)
GPU_TYPES: dict[str, tuple[int, str, int, float, float]] = {
    "g6e.xlarge": (4, "32Gi", 1, 1.861, 0.95),
    "g6e.12xlarge": (48, "384Gi", 4, 10.493, 5.2),
    # eight L40S: the fleet twin's node of 8 GPUs. Spot is a stand-in at half of on-demand, the ratio of the
    # two sizes above (spot moves by the hour and zone; the twin reports idle dollars at this price).
    "g6e.48xlarge": (192, "1536Gi", 8, 30.131, 15.07),
}

# instance type -> (network interfaces on the default network card, IPv4 addresses per interface), EC2's
# DescribeInstanceTypes NetworkInfo as karpenter-provider-aws v1.15.0 records it
# (pkg/providers/instancetype/zz_generated.vpclimits.go: NetworkCards[DefaultNetworkCardIndex]
# .MaximumNetworkInterfaces, IPv4PerInterface). They set the pods a node may run on EKS (gpu_finops/facts/kubelet.py).
GPU_NETWORK: dict[str, tuple[int, int]] = {
    "g6e.xlarge": (4, 15),
    "g6e.12xlarge": (10, 30),
    "g6e.48xlarge": (10, 50),
}

ON_DEMAND, SPOT = "on-demand", "spot"  # Karpenter's capacity types


def prices() -> dict[tuple[str, str], float]:
    """(instance type, capacity type) -> $/h, for gpu_finops.cost.pricing.CatalogRates."""
    out = {}
    for name, (_, _, _, od, spot) in GPU_TYPES.items():
        out[(name, ON_DEMAND)] = od
        out[(name, SPOT)] = spot
    return out
