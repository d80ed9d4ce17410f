"""The NVIDIA device plugin's configs and values: whole cards by default, time-slicing where a node's label
asks (moved from infra/objects.py)."""

from __future__ import annotations

from typing import Any

import yaml

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import GPU_RESOURCE as GPU

WHOLE_DEVICE_CONFIG = "default"
# Our GPU nodes' taint (infra/objects/karpenter.py GPU_TAINT, nvidia.com/gpu=true:NoSchedule), any value.
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}


def timeslicing_config(c: Config) -> str:
    """Replicas advertised as nvidia.com/gpu.shared (renameByDefault), so a replica is never mistaken for
    a card by Kueue, Karpenter or a workload that asks for nvidia.com/gpu."""
    return yaml.safe_dump(
        {
            "version": "v1",
            "sharing": {
                "timeSlicing": {
                    "renameByDefault": True,
                    "failRequestsGreaterThanOne": True,
                    "resources": [{"name": GPU, "replicas": c.timeslicing_replicas}],
                }
            },
        },
        sort_keys=False,
    )


def device_plugin_configs(c: Config) -> dict[str, str]:
    """Named device plugin configs: whole cards by default; time-slicing where a node's label asks."""
    return {
        WHOLE_DEVICE_CONFIG: yaml.safe_dump({"version": "v1"}, sort_keys=False),
        c.shared_device_config: timeslicing_config(c),
    }


def device_plugin_values(c: Config) -> dict[str, Any]:
    return {
        "config": {"map": device_plugin_configs(c), "default": WHOLE_DEVICE_CONFIG},
        "gfd": {"enabled": True},
        # The bundled NFD worker's own list tolerates only nvidia.com/gpu=present: without it on a GPU
        # node the NVIDIA PCI label never appears, so neither the device plugin nor GFD (whose affinity
        # needs that label) runs there. Helm replaces a list, so this is its whole list.
        "nfd": {"enabled": True, "worker": {"tolerations": [dict(GPU_TOLERATION)]}},
        "tolerations": [dict(GPU_TOLERATION)],  # the device plugin's and GFD's DaemonSets
    }
