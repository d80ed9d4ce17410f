"""The local target's GPU instance types, shaped for Karpenter's kwok provider (the types and their
prices are gpu_finops/facts/catalog.py's).

`resources` is the instance type's capacity as Karpenter's AWS provider computes it (gpu_finops/facts/kubelet.py: cpu,
memory less the VM overhead, ENI-limited pods, the root volume), plus its GPUs. The kwok provider launches
nodes whose allocatable is this less its own fixed overhead (100m cpu, 10Mi), and whose capacity is only what
the NodeClaim requested (sigs.k8s.io/karpenter v1.15.0 kwok/cloudprovider: toNode, newInstanceType); the
simulated kubelet (local/sim/device_plugin.py) then sets both to the EKS figures, as the node's kubelet
would, so NodePool limits count whole instances as they do on AWS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpu_finops.facts.catalog import GPU_TYPES, ON_DEMAND, SPOT
from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import GPU_RESOURCE, LABEL_CAPACITY_TYPE, LABEL_ZONE
from gpu_finops.facts.kubelet import node_resources


def instance_types(c: Config) -> list[dict[str, Any]]:
    """Entries shaped as Karpenter kwok's InstanceTypeOptions (offerings: Price, Available, Requirements)."""
    out = []
    for name, (_, _, gpus, od, spot) in GPU_TYPES.items():
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
                "resources": {**node_resources(name)[0], GPU_RESOURCE: str(gpus)},
                "offerings": offerings,
            }
        )
    return out


def write(c: Config, path: Path) -> Path:
    path.write_text(json.dumps(instance_types(c), indent=2))
    return path
