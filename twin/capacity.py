"""What a GPU node's kubelet reports for cpu and memory, so the twin's nodes carry it rather than kwok's
defaults: capacity is the instance type's vCPUs and the memory the OS leaves (Karpenter's AWS provider
estimates it as the nominal memory less VM_MEMORY_OVERHEAD_PERCENT, default 7.5 %); allocatable subtracts
the EKS AMI's kube-reserved (cpu: 6 % of the first core, 1 % of the second, 0.5 % of the third and fourth,
0.25 % of every core above four; memory: 11 MiB per pod + 255 MiB) and the eviction threshold (100 MiB).
"""

from __future__ import annotations

VM_MEMORY_OVERHEAD = 0.075
MAX_PODS = 110  # the local catalog's pods per node (local/sim/catalog.py)
EVICTION_MIB = 100


def _mib(quantity: str) -> int:
    units = {"Gi": 1024, "Mi": 1}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return int(float(quantity[: -len(suffix)]) * factor)
    raise ValueError(f"memory {quantity!r}: expected Gi or Mi")


def kube_reserved_millicores(vcpus: int) -> int:
    steps = ((1, 60), (1, 10), (2, 5))  # (cores, millicores per core) for the first four cores
    left, total = vcpus, 0.0
    for cores, per in steps:
        used = min(left, cores)
        total += used * per
        left -= used
    return int(total + left * 2.5)


def kubelet_capacity(vcpus: int, memory: str, pods: int = MAX_PODS) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable) for cpu, memory and pods as the node's status would carry them."""
    mem = int(_mib(memory) * (1 - VM_MEMORY_OVERHEAD))
    reserved_mem = 11 * pods + 255 + EVICTION_MIB
    capacity = {"cpu": str(vcpus), "memory": f"{mem}Mi", "pods": str(pods)}
    allocatable = {
        "cpu": f"{vcpus * 1000 - kube_reserved_millicores(vcpus)}m",
        "memory": f"{mem - reserved_mem}Mi",
        "pods": str(pods),
    }
    return capacity, allocatable
