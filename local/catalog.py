"""The local target's GPU instance types: one catalog for Karpenter's kwok provider and the collector's
prices. Prices are the sandbox region's published figures the docs and tests use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infra.config import Config

# instance type -> (vCPU, memory, GPUs, on-demand $/h, spot $/h)
GPU_TYPES: dict[str, tuple[int, str, int, float, float]] = {
    "g6e.xlarge": (4, "32Gi", 1, 1.861, 0.95),
    "g6e.12xlarge": (48, "384Gi", 4, 10.493, 5.2),
}


def instance_types(c: Config) -> list[dict[str, Any]]:
    """Entries shaped as Karpenter kwok's InstanceTypeOptions (offerings: Price, Available, Requirements)."""
    out = []
    for name, (cpu, mem, gpus, od, spot) in GPU_TYPES.items():
        offerings = []
        for zone in c.availability_zones:
            for capacity, price in (("spot", spot), ("on-demand", od)):
                offerings.append(
                    {
                        "Price": price,
                        "Available": True,
                        "Requirements": [
                            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity]},
                            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]},
                        ],
                    }
                )
        out.append(
            {
                "name": name,
                "architecture": "amd64",
                "operatingSystems": ["linux"],
                "resources": {
                    "cpu": str(cpu),
                    "memory": mem,
                    "pods": "110",
                    "ephemeral-storage": "100Gi",
                    "nvidia.com/gpu": str(gpus),
                },
                "offerings": offerings,
            }
        )
    return out


def prices() -> dict[tuple[str, str], float]:
    """(instance type, capacity type) -> $/h, for finops.pricing.CatalogRates."""
    out = {}
    for name, (_, _, _, od, spot) in GPU_TYPES.items():
        out[(name, "on-demand")] = od
        out[(name, "spot")] = spot
    return out


def write(c: Config, path: Path) -> Path:
    path.write_text(json.dumps(instance_types(c), indent=2))
    return path
