"""What a GPU node's kubelet reports on EKS for cpu, memory, pods and ephemeral storage: capacity, and
allocatable = capacity - kube-reserved - system-reserved - the hard eviction threshold.

The figures are the ones Karpenter's AWS provider computes for an instance type, so that a node of the
local target or the twin reports what Karpenter (and the scheduler) would see for the same type on AWS,
and NodePool limits count the same. Source: github.com/aws/karpenter-provider-aws v1.15.0 (the version
local/build/versions.py pins), pkg/providers/instancetype/types.go:

- `NewInstanceType`: Capacity from `computeCapacity`; Overhead = {KubeReserved: `kubeReservedResources(cpu,
  ENILimitedPods(...))` (the AMI family uses ENI-limited memory overhead: AL2023, our EC2NodeClass's alias,
  takes `DefaultFamily.FeatureFlags()`, UsesENILimitedMemoryOverhead true), SystemReserved: none unless the
  EC2NodeClass sets it (ours does not), EvictionThreshold: `evictionThreshold(...)`}.
- `cpu`: the type's default vCPUs.
- `memory`: MemoryInfo.SizeInMiB less ceil(SizeInMiB x VM_MEMORY_OVERHEAD_PERCENT) MiB (default 0.075,
  pkg/operator/options/options.go): Karpenter's estimate of what the kubelet sees before any node of the
  type has registered (the real MemTotal differs by a few tens of MiB).
- `pods`: with no kubelet.maxPods and an AMI family with ENI-limited pod density (AL2023),
  `ENILimitedPods` = interfaces x (IPv4 per interface - 1) + 2 on the default network card; Karpenter
  passes it to the kubelet as maxPods (pkg/providers/amifamily/resolver.go).
- `kubeReservedResources`: memory 11 MiB x pods + 255 MiB; cpu 6 % of the first core, 1 % of the second,
  0.5 % of the third and fourth, 0.25 % of every further core (millicores, truncated per range); ephemeral
  storage 1 GiB.
- `evictionThreshold`: memory.available 100 MiB; nodefs.available 10 % of the ephemeral storage (rounded
  up to a byte), unless the EC2NodeClass's kubelet.evictionHard overrides them (ours does not).
- `ephemeralStorage`: the root volume of the EC2NodeClass's blockDeviceMappings (ROOT_VOLUME_GIB).
"""

from __future__ import annotations

import math
import re

from gpu_finops.facts.catalog import GPU_NETWORK, GPU_TYPES

VM_MEMORY_OVERHEAD_PERCENT = 0.075  # karpenter-provider-aws options: VM_MEMORY_OVERHEAD_PERCENT's default
EVICTION_MEMORY_MIB = 100  # evictionThreshold: memory.available
EVICTION_NODEFS_PERCENT = 10  # evictionThreshold: nodefs.available
KUBE_RESERVED_EPHEMERAL_GIB = 1
ROOT_VOLUME_GIB = 100  # the EC2NodeClass's root volume (infra/objects/karpenter.py blockDeviceMappings)
# kubeReservedResources' cpu ranges: (start, end) in millicores, the share of each reserved
CPU_RANGES = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, 1 << 31, 0.0025))
GIB = 1024**3


def memory_mib(quantity: str) -> int:
    """The catalog's nominal memory ("32Gi") in MiB, as EC2's MemoryInfo.SizeInMiB."""
    m = re.fullmatch(r"([0-9]+)(Gi|Mi)", quantity)
    if not m:
        raise ValueError(f"memory {quantity!r} (gpu_finops/facts/catalog.py): expected <n>Gi or <n>Mi")
    return int(m.group(1)) * (1024 if m.group(2) == "Gi" else 1)


def capacity_memory_mib(nominal_mib: int) -> int:
    """`memory`: nominal less the VM overhead, computed in bytes as Karpenter does, then ceil'd to MiB."""
    overhead = math.ceil(float(nominal_mib * 1024 * 1024) * VM_MEMORY_OVERHEAD_PERCENT / 1024 / 1024)
    return nominal_mib - overhead


def eni_limited_pods(interfaces: int, ipv4_per_interface: int) -> int:
    """`ENILimitedPods` with no reserved or EFA-only interfaces."""
    return interfaces * (ipv4_per_interface - 1) + 2


def kube_reserved_millicores(vcpus: int) -> int:
    total, cpu = 0, vcpus * 1000
    for start, end, share in CPU_RANGES:
        if cpu >= start:
            total += int(float((min(cpu, end)) - start) * share)
    return total


def kube_reserved_memory_mib(pods: int) -> int:
    return 11 * pods + 255


def max_pods(instance_type: str) -> int:
    if instance_type not in GPU_NETWORK:
        raise ValueError(
            f"instance type {instance_type!r} has no network limits in gpu_finops/facts/catalog.py GPU_NETWORK "
            f"(known: {sorted(GPU_NETWORK)}): add its default card's interfaces and IPv4 per interface"
        )
    return eni_limited_pods(*GPU_NETWORK[instance_type])


def node_resources(instance_type: str) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable) for cpu, memory, pods and ephemeral-storage, as quantities the node's status
    carries on EKS for `instance_type` of gpu_finops/facts/catalog.py (GPUs are the device plugin's, not here)."""
    if instance_type not in GPU_TYPES:
        raise ValueError(
            f"instance type {instance_type!r} is not in gpu_finops/facts/catalog.py GPU_TYPES {sorted(GPU_TYPES)}"
        )
    vcpus, nominal = GPU_TYPES[instance_type][:2]
    pods = max_pods(instance_type)
    mem = capacity_memory_mib(memory_mib(nominal))
    storage = ROOT_VOLUME_GIB * GIB
    eviction_storage = math.ceil(float(storage) / 100 * EVICTION_NODEFS_PERCENT)
    capacity = {
        "cpu": str(vcpus),
        "memory": f"{mem}Mi",
        "pods": str(pods),
        "ephemeral-storage": f"{ROOT_VOLUME_GIB}Gi",
    }
    allocatable = {
        "cpu": f"{vcpus * 1000 - kube_reserved_millicores(vcpus)}m",
        "memory": f"{mem - kube_reserved_memory_mib(pods) - EVICTION_MEMORY_MIB}Mi",
        "pods": str(pods),
        "ephemeral-storage": str(storage - KUBE_RESERVED_EPHEMERAL_GIB * GIB - eviction_storage),
    }
    return capacity, allocatable
