"""gpu_finops/facts/kubelet.py against figures worked out by hand from karpenter-provider-aws v1.15.0's
pkg/providers/instancetype/types.go (memory, ENILimitedPods, kubeReservedResources, evictionThreshold), and
against that package's own test (suite_test.go, "Kube Reserved Resources / should use defaults when no
kubelet is specified": m5.xlarge, 4 vCPUs and 4 interfaces of 15 addresses as g6e.xlarge, gives kube-reserved
cpu 80m and memory 893Mi)."""

from __future__ import annotations

import pytest

from gpu_finops.facts import kubelet
from gpu_finops.facts.catalog import GPU_TYPES

EPHEMERAL_ALLOCATABLE = str(100 * 2**30 - 2**30 - 10 * 2**30)  # 100Gi - 1Gi kube-reserved - 10 % eviction

# instance type: (capacity, allocatable), each figure worked out in the comment beside it
CASES = {
    "g6e.xlarge": (
        # memory: 32768 MiB - ceil(32768 x 0.075 = 2457.6) = 30310; pods: 4 x (15 - 1) + 2 = 58
        {"cpu": "4", "memory": "30310Mi", "pods": "58", "ephemeral-storage": "100Gi"},
        # cpu: 4000 - (60 + 10 + 2000 x 0.005) = 3920m; memory: 30310 - (11 x 58 + 255 = 893) - 100 = 29317
        {"cpu": "3920m", "memory": "29317Mi", "pods": "58", "ephemeral-storage": EPHEMERAL_ALLOCATABLE},
    ),
    "g6e.12xlarge": (
        # memory: 393216 - ceil(29491.2) = 363724; pods: 10 x 29 + 2 = 292
        {"cpu": "48", "memory": "363724Mi", "pods": "292", "ephemeral-storage": "100Gi"},
        # cpu: 48000 - (80 + 44000 x 0.0025 = 110) = 47810m; memory: 363724 - (3212 + 255) - 100 = 360157
        {"cpu": "47810m", "memory": "360157Mi", "pods": "292", "ephemeral-storage": EPHEMERAL_ALLOCATABLE},
    ),
    "g6e.48xlarge": (
        # memory: 1572864 - ceil(117964.8) = 1454899; pods: 10 x 49 + 2 = 492
        {"cpu": "192", "memory": "1454899Mi", "pods": "492", "ephemeral-storage": "100Gi"},
        # cpu: 192000 - (80 + 188000 x 0.0025 = 470) = 191450m; memory: 1454899 - (5412 + 255) - 100 = 1449132
        {"cpu": "191450m", "memory": "1449132Mi", "pods": "492", "ephemeral-storage": EPHEMERAL_ALLOCATABLE},
    ),
    "p5.48xlarge": (
        # memory: 2097152 - ceil(157286.4) = 1939865; pods: 2 x 49 + 2 = 100 (network card 0: 2 interfaces)
        {"cpu": "192", "memory": "1939865Mi", "pods": "100", "ephemeral-storage": "100Gi"},
        # cpu: as g6e.48xlarge; memory: 1939865 - (11 x 100 + 255 = 1355) - 100 = 1938410
        {"cpu": "191450m", "memory": "1938410Mi", "pods": "100", "ephemeral-storage": EPHEMERAL_ALLOCATABLE},
    ),
    "p5.4xlarge": (
        # memory: 262144 - ceil(19660.8) = 242483; pods: 4 x (30 - 1) + 2 = 118
        {"cpu": "16", "memory": "242483Mi", "pods": "118", "ephemeral-storage": "100Gi"},
        # cpu: 16000 - (80 + 12000 x 0.0025 = 30) = 15890m; memory: 242483 - (11 x 118 + 255 = 1553) - 100 = 240830
        {"cpu": "15890m", "memory": "240830Mi", "pods": "118", "ephemeral-storage": EPHEMERAL_ALLOCATABLE},
    ),
}


@pytest.mark.parametrize("instance_type", sorted(CASES))
def test_node_resources_are_karpenters_figures_for_the_type(instance_type: str) -> None:
    assert kubelet.node_resources(instance_type) == CASES[instance_type]


def test_every_catalog_type_has_figures() -> None:
    assert sorted(CASES) == sorted(GPU_TYPES)


def test_kube_reserved_matches_karpenters_own_test_for_four_vcpus_and_58_pods() -> None:
    assert kubelet.kube_reserved_millicores(4) == 80
    assert kubelet.kube_reserved_memory_mib(kubelet.eni_limited_pods(4, 15)) == 893


@pytest.mark.parametrize(
    ("vcpus", "millicores"),
    [(1, 60), (2, 70), (3, 75), (4, 80), (5, 82), (8, 90), (96, 310), (192, 550)],
    # 5: 80 + int(1000 x 0.0025 = 2.5) = 82, truncated as Go's int64() does; 96: 80 + 92000 x 0.0025 = 310
)
def test_kube_reserved_cpu_by_range(vcpus: int, millicores: int) -> None:
    assert kubelet.kube_reserved_millicores(vcpus) == millicores


def test_vm_overhead_is_rounded_up_to_a_mib() -> None:
    assert kubelet.capacity_memory_mib(1024) == 1024 - 77  # 76.8 -> 77
    assert kubelet.capacity_memory_mib(4096) == 4096 - 308  # 307.2 -> 308


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: kubelet.node_resources("p9.huge"), "not in gpu_finops/facts/catalog.py GPU_TYPES"),
        (lambda: kubelet.max_pods("p9.huge"), "no network limits in gpu_finops/facts/catalog.py GPU_NETWORK"),
        (lambda: kubelet.memory_mib("32G"), "expected <n>Gi or <n>Mi"),
    ],
)
def test_unknown_inputs_are_named(call, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        call()
