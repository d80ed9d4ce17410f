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
    # eight H100 80GB, the MIG-capable type (g6e's L40S cannot be partitioned): on-demand as listed after AWS's
    # June 2025 P5 price cut; spot the same half-of-on-demand stand-in
    "p5.48xlarge": (192, "2048Gi", 8, 55.04, 27.52),
    # one H100 80GB, the smallest MIG-capable type and the MIG pool's (a card cut into slices of two tenants):
    # on-demand as listed for us-east-1 since its launch in 2025; spot the same half-of-on-demand stand-in
    "p5.4xlarge": (16, "256Gi", 1, 6.88, 3.44),
}

# NVML's total memory of one card by instance family, MiB, as GFD labels it (`nvidia.com/gpu.memory`) and the
# MPS control daemon divides among its clients: the L40S of g6e 46068, the H100 80GB HBM3 of p5 81559.
CARD_MEMORY_MIB: dict[str, int] = {"g6e": 46068, "p5": 81559}

# MIG-capable cards by instance type: the card's name as GFD labels it, and the GPU instance profiles a card can
# be cut into with how many of each fit one card (mig-parted's config-default.yaml: the H100 80GB's). A card
# has 7 compute slices; a profile's `<g>g` is its share of them.
MIG_CARDS: dict[str, tuple[str, dict[str, int]]] = {
    "p5.48xlarge": (
        "NVIDIA-H100-80GB-HBM3",
        {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    ),
    "p5.4xlarge": (
        "NVIDIA-H100-80GB-HBM3",
        {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    ),
}


def mig_layouts(instance_type: str) -> dict[str, dict[str, int] | None]:
    """The MIG manager's named layouts for a MIG-capable type, each the GPU instances it cuts per card (None:
    MIG disabled), as mig-parted's config-default.yaml names them: `all-disabled`, `all-<profile>` with as many
    of it as fit one card, and `all-balanced` (two of the smallest, one 2g and one 3g: 7 compute slices).
    Raises ValueError for a type whose card cannot be partitioned."""
    if instance_type not in MIG_CARDS:
        raise ValueError(
            f"instance type {instance_type!r} has no MIG-capable card (MIG: {sorted(MIG_CARDS)})"
        )
    _, profiles = MIG_CARDS[instance_type]
    layouts: dict[str, dict[str, int] | None] = {"all-disabled": None}
    layouts |= {f"all-{profile}": {profile: count} for profile, count in profiles.items()}
    compute = {p: int(p.split("g", 1)[0]) for p in profiles}  # `<g>g.<memory>gb`: g compute slices of 7
    small, two, three = (next(p for p in profiles if compute[p] == g) for g in (1, 2, 3))
    layouts["all-balanced"] = {small: 2, two: 1, three: 1}
    return layouts


# instance type -> (network interfaces on the default network card, IPv4 addresses per interface), EC2's
# DescribeInstanceTypes NetworkInfo as karpenter-provider-aws v1.15.0 records it
# (pkg/providers/instancetype/zz_generated.vpclimits.go: NetworkCards[DefaultNetworkCardIndex]
# .MaximumNetworkInterfaces, IPv4PerInterface). They set the pods a node may run on EKS (gpu_finops/facts/kubelet.py).
GPU_NETWORK: dict[str, tuple[int, int]] = {
    "g6e.xlarge": (4, 15),
    "g6e.12xlarge": (10, 30),
    "g6e.48xlarge": (10, 50),
    "p5.48xlarge": (2, 50),  # its network card 0 of 32
    "p5.4xlarge": (4, 30),
}

ON_DEMAND, SPOT = "on-demand", "spot"  # Karpenter's capacity types


def prices() -> dict[tuple[str, str], float]:
    """(instance type, capacity type) -> $/h, for gpu_finops.cost.pricing.CatalogRates."""
    out = {}
    for name, (_, _, _, od, spot) in GPU_TYPES.items():
        out[(name, ON_DEMAND)] = od
        out[(name, SPOT)] = spot
    return out
