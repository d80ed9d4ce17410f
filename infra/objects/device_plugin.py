"""The NVIDIA device plugin's configs and values: whole cards by default; time-slicing, MPS or MIG (single or
mixed) where a node's label `nvidia.com/device-plugin.config` asks for it; kept off the DRA pool's nodes, where
NVIDIA's DRA driver publishes the cards instead (its values are in this module too: the two must never serve one
node)."""

from __future__ import annotations

from typing import Any

import yaml

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import GPU_ALLOCATION_DRA, LABEL_GPU_ALLOCATION
from gpu_finops.facts.kube_keys import GPU_RESOURCE as GPU
from infra.objects.gpu_taints import GPU_POOL_TOLERATIONS

WHOLE_DEVICE_CONFIG = "default"
MPS_DEVICE_CONFIG = "mps"  # each card as MPS clients, renamed nvidia.com/gpu.shared like time-sliced replicas
MIG_SINGLE_DEVICE_CONFIG = "mig-single"  # every card cut alike, each slice an nvidia.com/gpu
MIG_MIXED_DEVICE_CONFIG = "mig-mixed"  # a resource per MIG profile, nvidia.com/mig-<profile>
# The device plugin chart's node affinity (k8s-device-plugin v0.18.0 deployments/helm/nvidia-device-plugin/values.yaml,
# shared by the device plugin's, GFD's and the MPS control daemon's DaemonSets): a node NFD finds an NVIDIA PCI
# device on, one whose CPU vendor is NVIDIA (Tegra), or one labelled nvidia.com/gpu.present=true (nodeadm labels
# the EKS AL2023 NVIDIA AMI's nodes so at boot). Any one term suffices.
CHART_AFFINITY_TERMS: tuple[tuple[str, str], ...] = (
    ("feature.node.kubernetes.io/pci-10de.present", "true"),
    ("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
    ("nvidia.com/gpu.present", "true"),
)
NOT_DRA = {"key": LABEL_GPU_ALLOCATION, "operator": "NotIn", "values": [GPU_ALLOCATION_DRA]}
DRA_DRIVER_NAMESPACE = "nvidia-dra-driver-gpu"


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


def device_plugin_affinity() -> dict[str, Any]:
    """The chart's node affinity, each term also requiring a node not labelled for DRA: the EKS guide says the
    device plugin and the DRA driver must never run on one node (both would hand out its cards)."""
    terms = [
        {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}, dict(NOT_DRA)]}
        for key, value in CHART_AFFINITY_TERMS
    ]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def dra_driver_values(c: Config) -> dict[str, Any]:
    """NVIDIA's DRA driver chart (dra-driver-nvidia-gpu 0.4.1, values.yaml and templates/validation.yaml): GPUs
    only (no ComputeDomains: our GPU types have no multi-node NVLink), which the chart installs only when told the device plugin
    does not serve them (`gpuResourcesEnabledOverride`); the driver root of the EKS AL2023 NVIDIA AMI (the host's
    `/`); its kubelet plugin only on the DRA pool's nodes, tolerating their taints.
    It creates the DeviceClasses gpu.nvidia.com (with extendedResourceName nvidia.com/gpu on resource.k8s.io/v1),
    mig.nvidia.com and vfio.gpu.nvidia.com."""
    return {
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "nvidiaDriverRoot": "/",
        "kubeletPlugin": {
            "nodeSelector": {LABEL_GPU_ALLOCATION: GPU_ALLOCATION_DRA},
            "tolerations": [dict(t) for t in GPU_POOL_TOLERATIONS],  # the DRA pool's own taint too
        },
    }


def device_plugin_values(c: Config) -> dict[str, Any]:
    values: dict[str, Any] = {
        "config": {"map": device_plugin_configs(c), "default": WHOLE_DEVICE_CONFIG},
        "gfd": {"enabled": True},
        # The bundled NFD worker's own list tolerates only nvidia.com/gpu=present: without it on a GPU
        # node the NVIDIA PCI label never appears, so neither the device plugin nor GFD (whose affinity
        # needs that label) runs there. Helm replaces a list, so this is its whole list.
        "nfd": {"enabled": True, "worker": {"tolerations": [dict(t) for t in GPU_POOL_TOLERATIONS]}},
        # the device plugin's and GFD's DaemonSets (and the MPS control daemon's): every GPU pool's taints
        "tolerations": [dict(t) for t in GPU_POOL_TOLERATIONS],
    }
    if c.dra_cards:  # Helm replaces the chart's lists: the whole affinity, each term kept off DRA nodes
        values["affinity"] = device_plugin_affinity()
    return values
