"""Quota agrees with hardware in both modes: whole cards on one NodePool and flavor, time-sliced replicas on
another, counted in replicas by Kueue and told to Karpenter by a NodeOverlay."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpu_finops.facts.config import Config, ConfigError, Tenant, load_config
from infra.objects import device_plugin, karpenter, kueue


@pytest.fixture
def c() -> Config:
    return load_config()


def test_two_pools_with_limits_that_are_exactly_the_quotas_cards(c):
    whole, shared, _mig, _mps = karpenter.nodepools(c)
    assert whole["metadata"]["name"] == "gpu-spot" and shared["metadata"]["name"] == "gpu-shared"
    assert whole["spec"]["limits"] == {"cpu": "8", "nvidia.com/gpu": "2"}  # two tenants x one card
    assert shared["spec"]["limits"] == {"cpu": "4", "nvidia.com/gpu": "1"}  # four replicas = one card
    labels = shared["spec"]["template"]["metadata"]["labels"]
    assert labels["nvidia.com/device-plugin.config"] == "timeslice-4"
    assert "nvidia.com/device-plugin.config" not in whole["spec"]["template"]["metadata"]["labels"]
    assert c.for_aws().gpu_vcpus_needed == 12 <= c.gvt_spot_vcpu_quota  # the MPS pool is off on AWS


def test_the_overlay_tells_karpenter_the_shared_pools_replicas(c):
    overlay = karpenter.shared_capacity_overlay(c)
    assert overlay["apiVersion"] == "karpenter.sh/v1alpha1" and overlay["kind"] == "NodeOverlay"
    assert overlay["spec"]["requirements"] == [
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu-shared"]}
    ]
    assert overlay["spec"]["capacity"] == {"nvidia.com/gpu.shared": "4"}
    assert karpenter.karpenter_values(c, "q", "r")["settings"]["featureGates"] == {"nodeOverlay": True}


def test_kueue_counts_cards_and_replicas_on_their_own_flavors(c):
    flavors = {f["metadata"]["name"]: f for f in kueue.kueue_objects(c) if f["kind"] == "ResourceFlavor"}
    assert flavors["gpu-shared"]["spec"]["nodeLabels"] == {"karpenter.sh/nodepool": "gpu-shared"}
    queues = {q["metadata"]["name"]: q["spec"]["resourceGroups"] for q in kueue.cluster_queues(c)}
    quota = {
        name: {
            (f["name"], r["name"]): r["nominalQuota"]
            for g in groups
            for f in g["flavors"]
            for r in f["resources"]
        }
        for name, groups in queues.items()
    }
    assert quota == {
        "team-a": {("gpu-spot", "nvidia.com/gpu"): 1, ("gpu-shared", "nvidia.com/gpu.shared"): 4,
                   ("gpu-mps", "nvidia.com/gpu.shared"): 2, ("gpu-mig", "nvidia.com/mig-1g.10gb"): 1,
                   ("gpu-mig", "nvidia.com/mig-2g.20gb"): 0, ("gpu-mig", "nvidia.com/mig-3g.40gb"): 1},
        "team-b": {("gpu-spot", "nvidia.com/gpu"): 1, ("gpu-shared", "nvidia.com/gpu.shared"): 0,
                   ("gpu-mps", "nvidia.com/gpu.shared"): 2, ("gpu-mig", "nvidia.com/mig-1g.10gb"): 1,
                   ("gpu-mig", "nvidia.com/mig-2g.20gb"): 1, ("gpu-mig", "nvidia.com/mig-3g.40gb"): 0},
    }  # fmt: skip


def test_the_device_plugin_shares_cards_only_where_a_node_asks(c):
    values = device_plugin.device_plugin_values(c)["config"]
    assert values["default"] == "default"
    assert set(values["map"]) == {"default", "timeslice-4", "mps", "mig-single", "mig-mixed"}
    assert "renameByDefault: true" in values["map"]["timeslice-4"]
    assert "sharing" not in values["map"]["default"]


def test_without_replica_quota_there_is_one_pool_and_no_overlay(c):
    plain = replace(c, tenants=(Tenant("team-a", 1), Tenant("team-b", 1)), gvt_spot_vcpu_quota=8).validate()
    assert [p["metadata"]["name"] for p in karpenter.nodepools(plain)] == ["gpu-spot"]
    assert [o["kind"] for o in karpenter.karpenter_objects(plain)] == ["NodePool"]
    assert all(len(q["spec"]["resourceGroups"]) == 1 for q in kueue.cluster_queues(plain))
    assert karpenter.karpenter_values(plain, "q", "r")["settings"]["featureGates"] == {"nodeOverlay": False}


@pytest.mark.parametrize(
    "change, key, why",
    [
        (
            {"tenants": (Tenant("team-a", 1, 3), Tenant("team-b", 1))},
            "tenants.shared_gpu_quota",
            "3 replicas, which do not fill whole cards of 4",
        ),
        (
            {"gvt_spot_vcpu_quota": 8},
            "tenants",
            "Kueue would admit 2 whole card(s) and 4 replicas (1 card(s)) = 3 node(s), but the spot vCPU quota (8) "
            "runs only 2 node(s)",
        ),
        ({"tenants": (Tenant("team-a", 1, -4),)}, "tenants.shared_gpu_quota", "must be >= 0"),
        ({"shared_nodepool_name": "gpu-spot"}, "shared_nodepool_name", "is already another NodePool's name"),
    ],
)
def test_quota_that_disagrees_with_hardware_is_refused(c, change, key, why):
    with pytest.raises(ConfigError, match=None) as err:
        replace(c, **change).validate()
    assert err.value.key == key and why in str(err.value), str(err.value)
