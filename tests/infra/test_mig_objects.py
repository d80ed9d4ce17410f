"""The MIG pool: one NodePool of a MIG-capable type labelled for its layout and the mixed strategy, a NodeOverlay
telling Karpenter the slices each card is cut into, a ResourceFlavor and one Kueue resource per profile with each
tenant's quota, and limits that are the cards the quotas fill. The AWS stacks and the cost guard get it only with
mig_on_aws."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpu_finops.facts.config import Config, ConfigError, Tenant, load_config
from infra.objects import karpenter, kueue
from nightly.guard import estimate, render


@pytest.fixture
def c() -> Config:
    return load_config()


def test_the_mig_pool_is_one_card_of_its_type_cut_by_the_layout_under_the_mixed_strategy(c):
    (mig,) = [p for p in karpenter.nodepools(c) if p["metadata"]["name"] == "gpu-mig"]
    template = mig["spec"]["template"]
    assert template["metadata"]["labels"] == {
        "gpu-finops.io/pool": "gpu-mig",
        "nvidia.com/device-plugin.config": "mig-mixed",
        "nvidia.com/mig.config": "all-balanced",
    }
    pins = {r["key"]: r["values"] for r in template["spec"]["requirements"]}
    assert pins["node.kubernetes.io/instance-type"] == ["p5.4xlarge"]
    assert pins["karpenter.k8s.aws/instance-cpu"] == ["16"]
    assert pins["karpenter.k8s.aws/instance-gpu-count"] == ["1"]
    assert pins["karpenter.sh/capacity-type"] == ["spot"]
    # two 1g.10gb, one 2g.20gb and one 3g.40gb of the tenants' quotas fill exactly one all-balanced card
    assert mig["spec"]["limits"] == {"cpu": "16", "nvidia.com/gpu": "1"}


def test_the_overlay_tells_karpenter_each_profiles_slices_per_node(c):
    overlay = karpenter.mig_capacity_overlay(c)
    assert overlay["kind"] == "NodeOverlay"
    assert overlay["spec"]["requirements"] == [
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu-mig"]}
    ]
    assert overlay["spec"]["capacity"] == {
        "nvidia.com/mig-1g.10gb": "2",
        "nvidia.com/mig-2g.20gb": "1",
        "nvidia.com/mig-3g.40gb": "1",
    }
    assert karpenter.karpenter_values(c, "q", "r")["settings"]["featureGates"] == {"nodeOverlay": True}


def test_kueue_admits_slices_per_profile_on_the_mig_flavor(c):
    objs = kueue.kueue_objects(c)
    flavors = {f["metadata"]["name"]: f["spec"] for f in objs if f["kind"] == "ResourceFlavor"}
    assert flavors["gpu-mig"]["nodeLabels"] == {"karpenter.sh/nodepool": "gpu-mig"}
    for q in kueue.cluster_queues(c):
        (group,) = [g for g in q["spec"]["resourceGroups"] if g["flavors"][0]["name"] == "gpu-mig"]
        assert group["coveredResources"] == [
            "nvidia.com/mig-1g.10gb",
            "nvidia.com/mig-2g.20gb",
            "nvidia.com/mig-3g.40gb",
        ]
        # every ClusterQueue of the cohort names every profile, in the covered order, borrowing none
        assert [r["name"] for r in group["flavors"][0]["resources"]] == group["coveredResources"]
        assert all(r["borrowingLimit"] == 0 for r in group["flavors"][0]["resources"])


def test_aws_gets_the_mig_pool_only_with_mig_on_aws(c):
    off = c.for_aws()
    assert off.mig_slices == {} and [t.mig_quota for t in off.tenants] == [{}, {}]
    assert "gpu-mig" not in [p["metadata"]["name"] for p in karpenter.nodepools(off)]
    assert all(len(q["spec"]["resourceGroups"]) == 2 for q in kueue.cluster_queues(off))
    on = replace(c, mig_on_aws=True)
    assert on.for_aws().mig_slices == c.mig_slices


def test_the_cost_guard_prices_the_mig_pool_and_says_what_it_costs_beside_the_g6e(c):
    prices = {"g6e.xlarge": 1.861, "p5.4xlarge": 6.88, "m7i.large": 0.1008}
    off = estimate(c, prices.__getitem__, max_hours=2.0)
    assert not any("MIG nodes" in i.what for i in off.items)
    assert "warning: the MIG pool is off on AWS (mig_on_aws: false): no MIG node, quota or act 8" in render(
        off
    )
    on = estimate(replace(c, mig_on_aws=True), prices.__getitem__, max_hours=2.0)
    (item,) = [i for i in on.items if i.what.startswith("MIG nodes")]
    assert item.what.startswith("MIG nodes: 1 x p5.4xlarge") and item.usd == pytest.approx(2 * 6.88)
    assert on.usd == pytest.approx(off.usd + 2 * 6.88)
    assert "p5.4xlarge costs $6.88/h on demand, 3.7 times a g6e.xlarge" in render(on)


@pytest.mark.parametrize(
    "change, key, why",
    [
        (
            {"tenants": (Tenant("team-a", 1, 4, {"4g.40gb": 1}), Tenant("team-b", 1))},
            "tenants.mig_quota",
            "tenant team-a has quota for 1 4g.40gb slice(s), which layout all-balanced never cuts (it cuts "
            "2 x 1g.10gb, 1 x 2g.20gb, 1 x 3g.40gb per card)",
        ),
        ({"mig_layout": "all-disabled"}, "mig_layout", "'all-disabled' is not a MIG layout of p5.4xlarge"),
        ({"mig_layout": "all-9g"}, "mig_layout", "'all-9g' is not a MIG layout of p5.4xlarge"),
        ({"mig_instance_type": "g6e.xlarge"}, "mig_instance_type", "'g6e.xlarge' has no MIG-capable card"),
        ({"mig_nodepool_name": "gpu-shared"}, "mig_nodepool_name", "is already another NodePool's name"),
        (
            {"tenants": (Tenant("team-a", 1, 4, {"3g": 1}), Tenant("team-b", 1))},
            "tenants.mig_quota",
            "a MIG profile like 1g.10gb",
        ),
        (
            {"tenants": (Tenant("team-a", 1, 4, {"1g.10gb": -1}), Tenant("team-b", 1))},
            "tenants.mig_quota.1g.10gb",
            "must be >= 0",
        ),
    ],
)
def test_a_mig_pool_the_hardware_cannot_cut_is_refused_naming_the_key(c, change, key, why):
    with pytest.raises(ConfigError) as err:
        replace(c, **change).validate()
    assert err.value.key == key and why in str(err.value), str(err.value)


def test_a_layout_change_without_mig_quota_is_not_checked_against_a_pool_nobody_uses(c):
    plain = replace(c, tenants=(Tenant("team-a", 1, 4), Tenant("team-b", 1)), mig_layout="all-9g").validate()
    assert plain.mig_slices == {} and plain.mig_cards == 0
