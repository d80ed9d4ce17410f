"""The fleet file: nodes as the kubelet would report them, policies rendered by the addons stack's code."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_finops.facts.errors import ConfigError
from gpu_finops.facts.kube_keys import LABEL_NODEPOOL, LABEL_UNSCHEDULABLE_REASON
from gpu_finops.facts.kubelet import node_resources
from infra.objects.kueue import cluster_queues
from twin import fleet as fleet_mod

EXAMPLES = Path(fleet_mod.__file__).with_name("examples")


def test_the_small_fleet_has_its_nodes_and_its_cordons() -> None:
    f = fleet_mod.load(EXAMPLES / "fleet-small.yaml")
    nodes = f.nodes()
    assert (len(nodes), f.installed_gpus, f.schedulable_gpus) == (64, 512, 480)
    repair = [n for n in nodes if n["metadata"]["labels"].get(LABEL_UNSCHEDULABLE_REASON) == "repair-queue"]
    cordoned = [n for n in nodes if n["spec"]["unschedulable"]]
    assert len(repair) == 2 and len(cordoned) == 4 and all(n["spec"]["unschedulable"] for n in repair)
    assert {n["metadata"]["labels"][LABEL_NODEPOOL] for n in nodes} == {fleet_mod.STATIC_POOL}


def test_policies_render_through_the_addons_stacks_queues() -> None:
    f = fleet_mod.load(EXAMPLES / "fleet-borrowing.yaml")
    strict = [o for o in f.kueue("strict") if o["kind"] == "ClusterQueue"]
    borrow = [o for o in f.kueue("borrow") if o["kind"] == "ClusterQueue"]
    assert strict == cluster_queues(f.config())  # the shipped policy is the shipped rendering
    quota = borrow[0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert quota == {"name": "nvidia.com/gpu", "nominalQuota": 16}  # no borrowingLimit: borrow without limit
    assert strict[0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] == 0
    flavor = next(o for o in f.kueue("strict") if o["kind"] == "ResourceFlavor")
    assert flavor["spec"]["nodeLabels"] == {LABEL_NODEPOOL: fleet_mod.STATIC_POOL}


def test_static_nodes_report_what_the_kubelet_would() -> None:
    f = fleet_mod.parse(BASE, "fleet.yaml")
    capacity, allocatable = node_resources(
        "g6e.48xlarge"
    )  # tests/gpu_finops/facts/test_kubelet.py: the figures
    for node in f.nodes():
        assert node["status"] == {"capacity": capacity, "allocatable": allocatable}
    assert allocatable["cpu"] == "191450m" and capacity["cpu"] == "192"


BASE = {"instance_type": "g6e.48xlarge", "static_nodes": 2, "tenants": [{"name": "a", "quota": 8}]}


@pytest.mark.parametrize(
    ("change", "key", "says"),
    [
        ({"instance_type": "p9.huge"}, "instance_type", "catalog"),
        ({"static_nodes": -1}, "static_nodes", ">= 0"),
        ({"static_nodes": 0}, "static_nodes", "no nodes"),
        ({"cordoned": 2, "repair": 1}, "cordoned", "> static_nodes"),
        ({"tenants": [{"name": "a", "quota": 17}]}, "tenants", "schedules 16"),
        ({"tenants": []}, "tenants", "list"),
        ({"policies": {"x": {"default": {"borrowing_limit": -1}}}}, "policies.x.a.borrowing_limit", ">= 0"),
        ({"policies": {"x": {"default": {"speed": 1}}}}, "policies.x.a.speed", "unknown"),
        ({"policies": {"x": {"tenants": {"zz": {}}}}}, "policies.x.tenants", "not tenants"),
    ],
)
def test_a_bad_fleet_names_its_key(change: dict, key: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        fleet_mod.parse({**BASE, **change}, "f.yaml")
    assert err.value.key == key and says in err.value.problem and err.value.source == "f.yaml"


def test_an_unknown_policy_is_refused() -> None:
    f = fleet_mod.parse(BASE, "f.yaml")
    with pytest.raises(ConfigError, match="'borrow' is not in the fleet file's policies"):
        f.kueue("borrow")


def test_a_policy_value_kueue_does_not_know_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        fleet_mod.parse(
            {**BASE, "policies": {"x": {"default": {"reclaim_within_cohort": "Sometimes"}}}}, "f.yaml"
        )
    assert err.value.key == "policies.x.a.reclaim_within_cohort" and "'Any'" in err.value.problem
