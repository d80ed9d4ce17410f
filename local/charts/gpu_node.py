"""The GPU node our EC2NodeClass and NodePool would produce on AWS, as a kwok Node, at each stage of its
life: which labels exist when decides which DaemonSets the real scheduler can place there.

Stages (each adds to the one before):
- `launched`: what the node carries when it registers and Karpenter has synced its NodeClaim onto it. From
  the kubelet: `kubernetes.io/hostname`, `kubernetes.io/os`, `kubernetes.io/arch`,
  `node.kubernetes.io/instance-type`, `topology.kubernetes.io/zone` and `region`. From Karpenter (the
  NodeClaim's labels: the NodePool template's labels, its single-valued requirements, and the AWS
  provider's well-known labels of the instance type): `karpenter.sh/nodepool`, `karpenter.sh/capacity-type`,
  `karpenter.k8s.aws/ec2nodeclass`, `karpenter.k8s.aws/instance-*`, `topology.k8s.aws/zone-id`,
  `karpenter.sh/registered`. Taints: the NodePool's (`nvidia.com/gpu=true:NoSchedule`). Capacity and
  allocatable: cpu, memory, pods and ephemeral storage as the type's kubelet reports them on EKS
  (gpu_finops/facts/kubelet.py, Karpenter's AWS provider's figures), no `nvidia.com/gpu` yet.
- `nfd`: NFD's worker has run there and its master has labelled the node: with the device plugin chart's
  NFD config (`sources.pci.deviceLabelFields: [vendor]`) an NVIDIA card is
  `feature.node.kubernetes.io/pci-10de.present=true`; this is the label the device plugin's and GFD's
  default affinity select on.
- `gfd`: GFD has labelled the card (`nvidia.com/gpu.count`, `gpu.product`, `mps.capable=false`, ...), and
  the device plugin has registered: capacity and allocatable `nvidia.com/gpu` = the card count.

What is a stand-in, not an AWS fact: the zone id (`use1-az1`-like, derived from the zone letter), memory
capacity (Karpenter's estimate, nominal less 7.5 %, not the instance's MemTotal), and the GFD label values
other than the count."""

from __future__ import annotations

import re
from typing import Any

from gpu_finops.facts.catalog import GPU_TYPES
from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import (
    GPU_RESOURCE,
    LABEL_ARCH,
    LABEL_CAPACITY_TYPE,
    LABEL_GPU_COUNT,
    LABEL_GPU_PRODUCT,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    LABEL_MPS_CAPABLE,
    LABEL_NODEPOOL,
    LABEL_ZONE,
)
from gpu_finops.facts.kubelet import node_resources
from infra.objects.karpenter import nodepool

STAGES = ("launched", "nfd", "gfd")
KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}  # the local target's kwok manages nodes so annotated
NFD_NVIDIA_PCI = "feature.node.kubernetes.io/pci-10de.present"  # PCI vendor 10de is NVIDIA
GPU_NAMES = {
    "g6e": ("l40s", "NVIDIA-L40S"),
    "g6": ("l4", "NVIDIA-L4"),
    "g5": ("a10g", "NVIDIA-A10G"),
    "p5": ("h100", "NVIDIA-H100-80GB-HBM3"),
}


def _memory_mib(quantity: str) -> int:
    m = re.fullmatch(r"(\d+)Gi", quantity)
    if not m:
        raise ValueError(f"gpu_finops/facts/catalog.py memory {quantity!r}: expected <n>Gi")
    return int(m.group(1)) * 1024


def instance_labels(instance_type: str) -> dict[str, str]:
    """The AWS provider's well-known labels for the type (pkg/providers/instancetype's computeRequirements),
    from what our catalog knows of it."""
    if instance_type not in GPU_TYPES:
        raise ValueError(f"instance type {instance_type!r} is not in gpu_finops/facts/catalog.py GPU_TYPES")
    vcpu, memory, gpus, _, _ = GPU_TYPES[instance_type]
    family, size = instance_type.split(".")
    m = re.fullmatch(r"([a-z]+)(\d+)([a-z]*)", family)
    if not m or family not in GPU_NAMES:
        raise ValueError(f"instance family {family!r} has no GPU name here (local/charts/gpu_node.py)")
    gpu_name, _ = GPU_NAMES[family]
    prefix = "karpenter.k8s.aws/"
    return {
        prefix + "instance-category": m.group(1),
        prefix + "instance-family": family,
        prefix + "instance-generation": m.group(2),
        prefix + "instance-size": size,
        prefix + "instance-cpu": str(vcpu),
        prefix + "instance-memory": str(_memory_mib(memory)),
        prefix + "instance-hypervisor": "nitro",
        prefix + "instance-gpu-count": str(gpus),
        prefix + "instance-gpu-manufacturer": "nvidia",
        prefix + "instance-gpu-name": gpu_name,
    }


def gpu_node(c: Config, stage: str, *, shared: bool = False, name: str = "gpu-node-0") -> dict[str, Any]:
    """The Node object at `stage` (one of STAGES), for the whole-card pool or the shared one."""
    if stage not in STAGES:
        raise ValueError(f"stage {stage!r}: expected one of {STAGES}")
    pool = nodepool(c, shared=shared)
    spec = pool["spec"]["template"]["spec"]
    single = {r["key"]: r["values"][0] for r in spec["requirements"] if len(r["values"]) == 1}
    itype = c.gpu_instance_types[0]
    zone = c.availability_zones[0]
    gpus = GPU_TYPES[itype][2]
    labels = {
        **pool["spec"]["template"]["metadata"]["labels"],
        **single,
        **instance_labels(itype),
        LABEL_NODEPOOL: pool["metadata"]["name"],
        LABEL_CAPACITY_TYPE: "spot",
        LABEL_INSTANCE_TYPE: itype,
        LABEL_ARCH: "amd64",
        "kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        LABEL_HOSTNAME: name,
        LABEL_ZONE: zone,
        "topology.kubernetes.io/region": c.region,
        "topology.k8s.aws/zone-id": f"use1-az{ord(zone[-1]) - ord('a') + 1}",
        "karpenter.k8s.aws/ec2nodeclass": spec["nodeClassRef"]["name"],
        "karpenter.sh/registered": "true",
    }
    capacity, allocatable = node_resources(itype)
    if stage in ("nfd", "gfd"):
        labels[NFD_NVIDIA_PCI] = "true"
    if stage == "gfd":
        labels |= {
            LABEL_GPU_COUNT: str(gpus),
            LABEL_GPU_PRODUCT: GPU_NAMES[itype.split(".")[0]][1],
            LABEL_MPS_CAPABLE: "false",
        }
        capacity[GPU_RESOURCE] = allocatable[GPU_RESOURCE] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": dict(KWOK_ANNOTATION)},
        "spec": {"taints": [dict(t) for t in spec.get("taints", [])], "providerID": f"kwok://{name}"},
        "status": {"capacity": capacity, "allocatable": allocatable},
    }
