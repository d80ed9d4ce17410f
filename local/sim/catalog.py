"""The local target's GPU instance types, shaped for Karpenter's kwok provider (the types and their
prices are facts/catalog.py's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from facts.catalog import GPU_TYPES, ON_DEMAND, SPOT
from facts.config import Config
from facts.kube_keys import GPU_RESOURCE, LABEL_CAPACITY_TYPE, LABEL_ZONE


def instance_types(c: Config) -> list[dict[str, Any]]:
    """Entries shaped as Karpenter kwok's InstanceTypeOptions (offerings: Price, Available, Requirements)."""
    out = []
    for name, (cpu, mem, gpus, od, spot) in GPU_TYPES.items():
        offerings = []
        for zone in c.availability_zones:
            for capacity, price in ((SPOT, spot), (ON_DEMAND, od)):
                offerings.append(
                    {
                        "Price": price,
                        "Available": True,
                        "Requirements": [
                            {"key": LABEL_CAPACITY_TYPE, "operator": "In", "values": [capacity]},
                            {"key": LABEL_ZONE, "operator": "In", "values": [zone]},
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
                    GPU_RESOURCE: str(gpus),
                },
                "offerings": offerings,
            }
        )
    return out


def write(c: Config, path: Path) -> Path:
    path.write_text(json.dumps(instance_types(c), indent=2))
    return path
