"""The DRA pool: one NodePool of whole cards that NVIDIA's DRA driver publishes as devices, launched by Karpenter for
pods that ask by claim (the AWS provider's draNVIDIAGPU gate), its nodes labelled so that the device plugin's DaemonSets stay off them
and the driver's kubelet plugin runs only there, and tainted so that only workloads Kueue admitted on its flavor run
there; the flavor charges its cards as nvidia.com/gpu after the whole-card one (Kueue's deviceClassMappings, in the
chart's Configuration), and dcgm-exporter maps claimed cards to pods. AWS gets it only with dra_on_aws; without DRA
quota nothing of it is rendered."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import yaml

from gpu_finops.facts.config import Config, ConfigError, load_config
from gpu_finops.facts.kube_keys import GPU_ALLOCATION_DRA, LABEL_GPU_ALLOCATION
from infra.objects import device_plugin, karpenter, kueue
from infra.objects.monitoring import dcgm_exporter_values

DRA_TAINT = {"key": "gpu-finops.io/dra", "value": "true", "effect": "NoSchedule"}


@pytest.fixture
def plain() -> Config:
    return load_config()


@pytest.fixture
def dra(plain) -> Config:
    """One card through DRA per tenant, on AWS too; the spot vCPU quota raised for the pool's two nodes."""
    tenants = tuple(replace(t, dra_gpu_quota=1) for t in plain.tenants)
    return replace(plain, tenants=tenants, dra_on_aws=True, gvt_spot_vcpu_quota=20).validate()


def flavors(c: Config) -> dict[str, dict]:
    return {o["metadata"]["name"]: o["spec"] for o in kueue.kueue_objects(c) if o["kind"] == "ResourceFlavor"}


def test_without_dra_quota_nothing_of_the_dra_pool_is_rendered(plain):
    assert plain.dra_cards == 0
    assert "gpu-dra" not in [p["metadata"]["name"] for p in karpenter.nodepools(plain)]
    assert "awsFeatureGates" not in karpenter.karpenter_values(plain, "q", "r")["settings"]
    assert "gpu-dra" not in flavors(plain)
    assert "managerConfig" not in kueue.kueue_values(plain)
    assert "affinity" not in device_plugin.device_plugin_values(plain)
    assert "--kubernetes-enable-dra" not in dcgm_exporter_values(plain)["arguments"]


def test_the_dra_pool_is_the_whole_card_shape_labelled_for_dra_tainted_and_launched_for_claims(dra):
    (pool,) = [p for p in karpenter.nodepools(dra) if p["metadata"]["name"] == "gpu-dra"]
    whole = karpenter.nodepool(dra)
    template = pool["spec"]["template"]
    assert template["metadata"]["labels"] == {"gpu-finops.io/pool": "gpu-dra", LABEL_GPU_ALLOCATION: "dra"}
    assert template["spec"]["requirements"] == whole["spec"]["template"]["spec"]["requirements"]
    assert template["spec"]["taints"] == [*whole["spec"]["template"]["spec"]["taints"], DRA_TAINT]
    assert pool["spec"]["limits"] == {"cpu": "8", "nvidia.com/gpu": "2"}  # two cards of one-GPU 4-vCPU nodes
    assert karpenter.karpenter_values(dra, "q", "r")["settings"]["awsFeatureGates"] == {"draNVIDIAGPU": True}


def test_kueue_charges_the_dra_cards_as_nvidia_gpu_on_their_own_flavor_after_the_whole_card_one(dra):
    flavor = flavors(dra)["gpu-dra"]
    assert flavor["nodeLabels"] == {"karpenter.sh/nodepool": "gpu-dra"}
    # only a workload that tolerates the pool's taint is given the flavor: an nvidia.com/gpu ask never overflows
    assert flavor["nodeTaints"] == [DRA_TAINT]
    for q in kueue.cluster_queues(dra):
        (group,) = [g for g in q["spec"]["resourceGroups"] if g["coveredResources"] == ["nvidia.com/gpu"]]
        assert [(f["name"], f["resources"][0]["nominalQuota"]) for f in group["flavors"]] == [
            ("gpu-spot", 1),
            ("gpu-dra", 1),
        ]
    shipped = yaml.safe_load(kueue.kueue_values(dra)["managerConfig"]["controllerManagerConfigYaml"])
    assert shipped["resources"] == {
        "deviceClassMappings": [{"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]}]
    }


def test_the_kueue_configuration_passed_is_the_charts_own_with_the_mappings_added(dra):
    """Our copy of the Configuration Kueue's chart installs, against its values.yaml at the pinned version."""
    from local.build import versions
    from local.charts.chart_render import module_dir

    chart = module_dir(f"sigs.k8s.io/kueue@{versions.KUEUE}") / "charts/kueue/values.yaml"
    shipped = yaml.safe_load(
        yaml.safe_load(chart.read_text())["managerConfig"]["controllerManagerConfigYaml"]
    )
    ours = yaml.safe_load(kueue.kueue_values(dra)["managerConfig"]["controllerManagerConfigYaml"])
    assert ours.pop("resources") == {"deviceClassMappings": kueue.KUEUE_DEVICE_CLASS_MAPPINGS}
    assert ours == shipped


def test_the_device_plugin_keeps_the_charts_affinity_and_stays_off_dra_nodes_in_every_term(dra):
    affinity = device_plugin.device_plugin_values(dra)["affinity"]["nodeAffinity"]
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert len(terms) == 3
    for term in terms:
        exclusion = {"key": LABEL_GPU_ALLOCATION, "operator": "NotIn", "values": [GPU_ALLOCATION_DRA]}
        assert exclusion in term["matchExpressions"], term


def test_the_affinity_terms_are_the_device_plugin_charts_own(dra):
    """Our copy of the chart's terms (each with the DRA exclusion added) against its values.yaml at the module
    version the placement rehearsal renders."""
    from local.charts.gpu_placement import device_plugin_chart

    shipped = yaml.safe_load((device_plugin_chart() / "values.yaml").read_text())["affinity"]
    ours = device_plugin.device_plugin_values(dra)["affinity"]
    for term in ours["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]:
        term["matchExpressions"].remove(dict(device_plugin.NOT_DRA))
    assert ours == shipped


def test_the_dra_driver_serves_gpus_only_on_dra_nodes_and_the_exporter_maps_claims(dra):
    values = device_plugin.dra_driver_values(dra)
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resources"] == {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}}
    assert values["kubeletPlugin"]["nodeSelector"] == {LABEL_GPU_ALLOCATION: GPU_ALLOCATION_DRA}
    assert "--kubernetes-enable-dra" in dcgm_exporter_values(dra)["arguments"]


def test_every_daemonset_serving_gpu_nodes_tolerates_every_taint_of_every_gpu_pool(dra):
    """The device plugin's (and GFD's, and the MPS daemon's), NFD's worker, dcgm-exporter and the DRA driver's
    kubelet plugin, against the taints of every pool with every optional pool on."""
    every = replace(dra, mig_on_aws=True, mps_on_aws=True)
    pools = karpenter.nodepools(every)
    taints = {(t["key"], t["effect"]) for p in pools for t in p["spec"]["template"]["spec"]["taints"]}
    assert {("gpu-finops.io/mps", "NoSchedule"), ("gpu-finops.io/dra", "NoSchedule")} <= taints
    plugin = device_plugin.device_plugin_values(every)
    lists = {
        "device plugin": plugin["tolerations"],
        "nfd worker": plugin["nfd"]["worker"]["tolerations"],
        "dcgm-exporter": dcgm_exporter_values(every)["tolerations"],
        "dra kubelet plugin": device_plugin.dra_driver_values(every)["kubeletPlugin"]["tolerations"],
    }
    for name, tolerations in lists.items():
        tolerated = {(t["key"], t["effect"]) for t in tolerations if t["operator"] == "Exists"}
        assert taints <= tolerated, (name, taints - tolerated)


def test_aws_gets_the_dra_pool_only_with_dra_on_aws(dra):
    off = replace(dra, dra_on_aws=False).for_aws()
    assert off.dra_cards == 0 and [t.dra_gpu_quota for t in off.tenants] == [0, 0]
    assert "gpu-dra" not in [p["metadata"]["name"] for p in karpenter.nodepools(off)]
    assert dra.for_aws().dra_cards == 2


def test_the_dra_pools_nodes_count_against_the_spot_vcpu_quota(dra):
    aws = dra.for_aws()  # whole cards 2 nodes, shared replicas 1, DRA 2 (the MPS pool is off on AWS)
    assert aws.gpu_nodes_at_limits == 5 and aws.gpu_vcpus_needed == 20
    with pytest.raises(ConfigError) as e:
        replace(dra, gvt_spot_vcpu_quota=16).validate()
    assert "and 2 DRA card(s) = 5 node(s), but the spot vCPU quota (16) runs only 4 node(s)" in str(e.value)


def test_the_dra_pool_needs_a_name_of_its_own(dra):
    with pytest.raises(ConfigError) as e:
        replace(dra, dra_nodepool_name="gpu-spot").validate()
    assert "dra_nodepool_name" in str(e.value) and "'gpu-spot' is already another NodePool's name" in str(
        e.value
    )


def test_the_addons_stack_installs_the_dra_driver_chart_before_dcgm_exporter(dra, tmp_path, supported_node):
    from infra.app import synth

    synth(dra, tmp_path)
    addons = json.loads((tmp_path / "stacks" / "addons" / "cdk.tf.json").read_text())
    releases = addons["resource"]["helm_release"]
    driver = releases["dra-driver-nvidia-gpu"]
    assert (driver["chart"], driver["repository"], driver["version"], driver["namespace"]) == (
        "dra-driver-nvidia-gpu",
        "oci://registry.k8s.io/dra-driver-nvidia/charts",
        "0.4.1",
        "nvidia-dra-driver-gpu",
    )
    assert yaml.safe_load(driver["values"][0]) == device_plugin.dra_driver_values(dra)
    assert "helm_release.dra-driver-nvidia-gpu" in releases["dcgm-exporter"]["depends_on"]


def test_the_cost_guard_prices_the_dra_pools_nodes_and_says_whether_it_is_on(dra):
    from nightly.guard import estimate

    prices = {"g6e.xlarge": 1.861, "m7i.large": 0.1008}
    on = estimate(dra, prices.__getitem__, max_hours=2.0)
    off = estimate(replace(dra, dra_on_aws=False, gvt_spot_vcpu_quota=12), prices.__getitem__, max_hours=2.0)
    (gpu_on,) = [i for i in on.items if i.what.startswith("GPU nodes")]
    (gpu_off,) = [i for i in off.items if i.what.startswith("GPU nodes")]
    assert (gpu_on.quantity, gpu_off.quantity) == (10.0, 6.0)  # 5 and 3 nodes for 2 hours
    assert any("the DRA pool is on (dra_on_aws: true, alpha): 2 g6e.xlarge card(s)" in n for n in on.notes)
    assert any("the DRA pool is off on AWS (dra_on_aws: false)" in n for n in off.notes)


def test_dcgm_exporter_runs_on_every_gpu_pool_the_configuration_has(dra):
    every = replace(dra, mig_on_aws=True, mps_on_aws=True)
    (term,) = dcgm_exporter_values(every)["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {
            "key": "karpenter.sh/nodepool",
            "operator": "In",
            "values": ["gpu-spot", "gpu-shared", "gpu-mig", "gpu-mps", "gpu-dra"],
        }
    ]
