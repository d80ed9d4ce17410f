"""The NVIDIA device plugin's configs and values: whole cards by default; time-slicing, MPS or MIG (single or
mixed) where a node's label `nvidia.com/device-plugin.config` asks for it."""

from __future__ import annotations

from typing import Any

import yaml

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import GPU_RESOURCE as GPU

WHOLE_DEVICE_CONFIG = "default"
MPS_DEVICE_CONFIG = "mps"  # each card as MPS clients, renamed nvidia.com/gpu.shared like time-sliced replicas
MIG_SINGLE_DEVICE_CONFIG = "mig-single"  # every card cut alike, each slice an nvidia.com/gpu
MIG_MIXED_DEVICE_CONFIG = "mig-mixed"  # a resource per MIG profile, nvidia.com/mig-<profile>
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


def mps_config(c: Config) -> str:
    """Each card as `timeslicing_replicas` MPS clients (the plugin's MPS control daemon gives each client
    100/replicas % of the SMs and 1/replicas of the memory), renamed as time-sliced replicas are. The plugin
    refuses MPS on MIG devices, so MPS and MIG are separate configs."""
    return yaml.safe_dump(
        {
            "version": "v1",
            "sharing": {
                "mps": {
                    "renameByDefault": True,
                    "resources": [{"name": GPU, "replicas": c.timeslicing_replicas}],
                }
            },
        },
        sort_keys=False,
    )


def mig_config(strategy: str) -> str:
    """The plugin's MIG strategy; the layout itself is the MIG manager's (a node's `nvidia.com/mig.config`)."""
    return yaml.safe_dump({"version": "v1", "flags": {"migStrategy": strategy}}, sort_keys=False)


def device_plugin_configs(c: Config) -> dict[str, str]:
    """Named device plugin configs: whole cards by default; time-slicing, MPS or MIG where a node's label asks."""
    return {
        WHOLE_DEVICE_CONFIG: yaml.safe_dump({"version": "v1"}, sort_keys=False),
        c.shared_device_config: timeslicing_config(c),
        MPS_DEVICE_CONFIG: mps_config(c),
        MIG_SINGLE_DEVICE_CONFIG: mig_config("single"),
        MIG_MIXED_DEVICE_CONFIG: mig_config("mixed"),
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
