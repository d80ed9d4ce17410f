"""The MPS pool: one NodePool whose nodes select the device plugin's MPS config and carry the pool's own taint, a
NodeOverlay telling Karpenter the clients each card holds, an MPS ResourceFlavor beside the time-sliced one on
nvidia.com/gpu.shared that tolerates that taint, each tenant's quota of clients, and limits that are the cards
the quotas fill. The AWS stacks and the cost guard get it only with mps_on_aws."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpu_finops.facts.config import Config, ConfigError, Tenant, load_config
from infra.objects import karpenter, kueue
from nightly.guard import estimate, render

MPS_TAINT = {"key": "gpu-finops.io/mps", "value": "true", "effect": "NoSchedule"}


@pytest.fixture
def c() -> Config:
    return load_config()


def test_the_mps_pool_selects_the_mps_config_and_is_tainted_for_its_flavor_alone(c):
    pools = {p["metadata"]["name"]: p for p in karpenter.nodepools(c)}
    mps = pools["gpu-mps"]
    template = mps["spec"]["template"]
    assert template["metadata"]["labels"] == {
        "gpu-finops.io/pool": "gpu-mps",
        "nvidia.com/device-plugin.config": "mps",
    }
    assert template["spec"]["taints"] == [karpenter.GPU_TAINT, MPS_TAINT]
    assert mps["spec"]["limits"] == {"cpu": "4", "nvidia.com/gpu": "1"}  # 2 + 2 clients = one card of 4
    pinned = {r["key"]: r["values"] for r in template["spec"]["requirements"]}
    assert pinned["node.kubernetes.io/instance-type"] == ["g6e.xlarge"]
    # no other pool carries the MPS taint: a pod asking a replica or a card elsewhere never needs it
    assert all(
        MPS_TAINT not in p["spec"]["template"]["spec"]["taints"] for n, p in pools.items() if n != "gpu-mps"
    )


def test_the_overlay_tells_karpenter_the_mps_pools_clients(c):
    overlays = {
        o["metadata"]["name"]: o for o in karpenter.karpenter_objects(c) if o["kind"] == "NodeOverlay"
    }
    overlay = overlays["gpu-mps-clients"]
    assert overlay["spec"]["requirements"] == [
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu-mps"]}
    ]
    assert overlay["spec"]["capacity"] == {"nvidia.com/gpu.shared": "4"}


def test_kueue_admits_on_the_mps_flavor_only_workloads_that_tolerate_the_pools_taint(c):
    flavors = {f["metadata"]["name"]: f for f in kueue.kueue_objects(c) if f["kind"] == "ResourceFlavor"}
    assert flavors["gpu-mps"]["spec"]["nodeLabels"] == {"karpenter.sh/nodepool": "gpu-mps"}
    # a nodeTaint: Kueue assigns the flavor only to a podset that tolerates it; a toleration of it among the
    # flavor's own would make Kueue add it to any pod, and a full gpu-shared quota overflow onto MPS
    assert flavors["gpu-mps"]["spec"]["nodeTaints"] == [
        {"key": "gpu-finops.io/mps", "value": "true", "effect": "NoSchedule"}
    ]
    assert all(t["key"] != "gpu-finops.io/mps" for f in flavors.values() for t in f["spec"]["tolerations"])
    assert all("nodeTaints" not in f["spec"] for n, f in flavors.items() if n != "gpu-mps")
    for q in kueue.cluster_queues(c):
        (group,) = [
            g for g in q["spec"]["resourceGroups"] if g["coveredResources"] == ["nvidia.com/gpu.shared"]
        ]
        assert [f["name"] for f in group["flavors"]] == ["gpu-shared", "gpu-mps"], (
            "time-sliced first, as before"
        )


def test_aws_gets_the_mps_pool_only_with_mps_on_aws(c):
    off = c.for_aws()
    assert off.mps_clients == 0 and [t.mps_quota for t in off.tenants] == [0, 0]
    assert "gpu-mps" not in [p["metadata"]["name"] for p in karpenter.nodepools(off)]
    assert "gpu-mps" not in [o["metadata"]["name"] for o in kueue.kueue_objects(off)]
    on = replace(c, mps_on_aws=True, gvt_spot_vcpu_quota=16).validate()
    assert on.for_aws().mps_clients == 4 and on.for_aws().gpu_vcpus_needed == 16
    both = replace(on, mig_on_aws=True)
    assert both.for_aws() is both


def test_the_cost_guard_counts_the_mps_pool_only_where_aws_runs_it(c):
    prices = {"g6e.xlarge": 1.861, "p5.4xlarge": 6.88, "m7i.large": 0.1008}
    off = estimate(c, prices.__getitem__, max_hours=2.0)
    assert "warning: the MPS pool is off on AWS (mps_on_aws: false): no MPS node, quota or act 9" in render(
        off
    )
    on = estimate(replace(c, mps_on_aws=True, gvt_spot_vcpu_quota=16), prices.__getitem__, max_hours=2.0)
    (gpu,) = [i for i in on.items if i.what.startswith("GPU nodes")]
    assert gpu.what.startswith("GPU nodes: 4 x g6e.xlarge")
    assert on.usd == pytest.approx(off.usd + 2 * 1.861)
    assert "the MPS pool is on (mps_on_aws: true): 1 g6e.xlarge card(s) of MPS clients" in render(on)


@pytest.mark.parametrize(
    "change, key, why",
    [
        (
            {"tenants": (Tenant("team-a", 1, 4, {}, 3), Tenant("team-b", 1))},
            "tenants.mps_quota",
            "the MPS quotas add up to 3 clients, which do not fill whole cards of 4 clients",
        ),
        (
            {"mps_nodepool_name": "gpu-shared"},
            "mps_nodepool_name",
            "'gpu-shared' is already another NodePool's name",
        ),
        (
            {"mps_nodepool_name": "gpu-mig"},
            "mps_nodepool_name",
            "'gpu-mig' is already another NodePool's name",
        ),
        (
            {"mps_on_aws": True},
            "tenants",
            "and 4 MPS clients (1 card(s)) = 4 node(s), but the spot vCPU quota (12) runs only 3 node(s)",
        ),
        (
            {"tenants": (Tenant("team-a", 1, 4, {}, -4), Tenant("team-b", 1))},
            "tenants.mps_quota",
            "must be >= 0",
        ),
    ],
)
def test_an_mps_pool_that_cannot_be_filled_or_run_is_refused_naming_the_key(c, change, key, why):
    with pytest.raises(ConfigError) as err:
        replace(c, **change).validate()
    assert err.value.key == key and why in str(err.value), str(err.value)


def test_the_vcpu_quota_counts_the_mps_pool_only_where_aws_runs_it(c):
    assert c.gpu_vcpus_needed == 16 and c.for_aws().gpu_vcpus_needed == 12 <= c.gvt_spot_vcpu_quota
    assert c.validate() is c


def test_an_act_job_is_an_mps_client_only_when_it_tolerates_the_pools_taint():
    from acts.jobs import gpu_job
    from acts.targets import local_target

    def tolerated(job):
        return [t["key"] for t in job["spec"]["template"]["spec"]["tolerations"]]

    t = local_target()
    plain = gpu_job(t, "j", "ns", "team-a", "r", resource="nvidia.com/gpu.shared", pool="gpu-mps")
    client = gpu_job(t, "j", "ns", "team-a", "r", resource="nvidia.com/gpu.shared", pool="gpu-mps", mps=True)
    assert tolerated(plain) == ["nvidia.com/gpu"]
    assert tolerated(client) == ["nvidia.com/gpu", "gpu-finops.io/mps"]
