"""The kwok provider's catalog carries each type's capacity as Karpenter's AWS provider computes it
(gpu_finops/facts/kubelet.py), so the kwok provider's allocatable (capacity less its fixed 100m/10Mi) starts from the
same figures as the node's simulated kubelet."""

from __future__ import annotations

from gpu_finops.facts.catalog import GPU_TYPES
from gpu_finops.facts.config import load_config
from gpu_finops.facts.kube_keys import GPU_RESOURCE
from gpu_finops.facts.kubelet import node_resources
from local.sim.catalog import instance_types


def test_each_type_offers_the_eks_capacity_and_its_gpus():
    entries = {e["name"]: e for e in instance_types(load_config())}
    assert sorted(entries) == sorted(GPU_TYPES)
    for name, entry in entries.items():
        assert entry["resources"] == {**node_resources(name)[0], GPU_RESOURCE: str(GPU_TYPES[name][2])}
    assert entries["g6e.xlarge"]["resources"]["cpu"] == "4"
    assert entries["g6e.xlarge"]["resources"]["memory"] == "30310Mi"  # 32 GiB less ceil(7.5 %)
