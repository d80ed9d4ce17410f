"""The acts, for real, on the local rehearsal target — and proof that each can fail there.

Uses the local target tests/local/conftest.py brings up once (binaries cached outside the clone), runs the
nine acts as a user does (`pytest acts --target=local`, a skip counting as a failure), then breaks, one at
a time, the thing each act exists to catch, and asserts the act fails for that precise reason: an
on-demand-only NodePool (act 1), quota two per tenant (act 2), no preemption policy (act 3), a device plugin
that gives one replica (act 4), a Karpenter without its interruption queue (act 5), the exporter's default
CSV without SM_ACTIVE (act 6), a device plugin with no MIG strategy (act 8), an "mps" config that time-slices
(act 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_finops.dcgm.metrics_csv import EXPORTER_DEFAULT_METRICS, render
from tests.local.act_runs import ROOT, run_acts

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(3600)]


ACTS = {
    "test_cold_start": "acts/test_01_cold_start.py",
    "test_two_of_twelve_admitted_one_per_tenant_running_at_once": "acts/test_02_quota_admits_one_job_per_tenant.py",
    "test_high_priority_preempts_low_which_is_requeued": "acts/test_03_preempted_job_is_requeued_not_killed.py",
    "test_one_gpu_four_replicas_four_pods_at_once_one_uuid": "acts/test_04_one_gpu_runs_four_pods_at_once.py",
    "test_spot_interruption_cordons_within_the_notice_evicts_and_the_workload_runs_again": (
        "acts/test_05_spot_interruption.py"
    ),
    "test_every_record_has_gpu_util_sm_active_cost_and_idle_share": "acts/test_06_every_record_has_cost_and_idle_share.py",
    # act 7's own mutation lives in tests/local/test_act_7_on_local.py
    "test_each_waiting_gpu_pod_is_diagnosed_with_the_cause_it_was_built_with": "acts/test_07_diagnosis_names_the_cause.py",
    "test_one_card_cut_into_mig_slices_runs_two_tenants_at_once_each_billed_its_share": (
        "acts/test_08_one_card_cut_into_mig_slices_for_two_tenants.py"
    ),
    "test_one_card_shared_by_mps_clients_runs_two_tenants_at_once_each_limited_and_billed_its_share": (
        "acts/test_09_one_card_shared_by_mps_clients_of_two_tenants.py"
    ),
}


def test_all_nine_acts_pass_on_the_local_target_and_none_is_skipped(local_cluster, tmp_path):
    code, acts, out = run_acts(tmp_path, env={"GPU_FINOPS_REQUIRE_ALL_ACTS": "1"})
    assert code == 0, out[-8000:]
    outcomes = {name.split("::")[-1]: a["outcome"] for name, a in acts.items()}
    assert outcomes == dict.fromkeys(ACTS, "passed"), out[-8000:]
    cold = acts["test_cold_start"]["verdict"]
    assert cold["holds"] and cold["evidence"]["timings"]["node_ready_s"] is not None
    spot = acts["test_spot_interruption_cordons_within_the_notice_evicts_and_the_workload_runs_again"][
        "verdict"
    ]
    assert spot["evidence"]["delivery"] == "sqs: delivered", spot
    assert 0 <= spot["evidence"]["timings"]["warning_to_cordon_s"] <= 120, spot
    assert (tmp_path / "reports" / "acts-timeline.png").exists() and (
        tmp_path / "reports" / "acts.junit.xml"
    ).exists()
    # the figures docs/benchmarks.md quotes, from this run
    (ROOT / "reports").mkdir(exist_ok=True)
    (ROOT / "reports" / "local-act-timings.json").write_text(
        json.dumps({name: a["timings"] for name, a in acts.items()}, indent=2)
    )


def only(acts: dict) -> dict:
    (act,) = acts.values()
    return act


def assert_fails_for(
    tmp_path: Path, act: str, reason: str, env: dict[str, str] | None = None, *, also: tuple[str, ...] = ()
) -> None:
    """The act fails, saying `reason` (and each of `also`)."""
    code, acts, out = run_acts(tmp_path, ACTS[act], env=env)
    assert code != 0, out[-4000:]
    got = only(acts)
    assert got["outcome"] == "failed", got
    # the message is the failure's last 4,000 characters; the verdict's `observed` has every clause's whole
    observed = (got.get("verdict") or {}).get("observed") or ""
    for said in (reason, *also):
        assert said in got["message"] or said in observed, (said, got["message"][-3000:], observed[:3000])
    assert got["evidence"] and (Path(got["evidence"]) / "nodes.json").exists(), got.get("evidence")


def reapply(cluster, kinds: set[str]) -> None:
    from local.charts import render

    cluster.kube().apply([o for o in render.all_objects(cluster.config) if o["kind"] in kinds])


def test_act_1_fails_when_the_nodepool_may_launch_only_on_demand(local_cluster, tmp_path):
    from gpu_finops.clients.karpenter import KarpenterClient
    from gpu_finops.facts.kube_keys import LABEL_CAPACITY_TYPE
    from local.charts import render

    kube = local_cluster.kube()
    pool = render.nodepool(local_cluster.config)
    for r in pool["spec"]["template"]["spec"]["requirements"]:
        if r["key"] == "karpenter.sh/capacity-type":
            r["values"] = ["on-demand"]
    kube.apply([pool])
    try:
        assert_fails_for(tmp_path, "test_cold_start", "karpenter.sh/capacity-type=on-demand, not spot")
    finally:
        reapply(local_cluster, {"NodePool"})
        karpenter = KarpenterClient(kube.custom)
        for claim in karpenter.nodeclaim_objects():
            if (claim["metadata"].get("labels") or {}).get(LABEL_CAPACITY_TYPE) == "on-demand":
                karpenter.delete_nodeclaim(claim["metadata"]["name"])


def test_act_2_fails_when_quota_is_two_per_tenant(local_cluster, tmp_path):
    kube = local_cluster.kube()
    for t in local_cluster.config.tenants:
        cq = kube.custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", t.name)
        groups = cq["spec"]["resourceGroups"]
        groups[0]["flavors"][0]["resources"][0]["nominalQuota"] = 2
        kube.custom.patch_cluster_custom_object(
            "kueue.x-k8s.io", "v1beta2", "clusterqueues", t.name, {"spec": {"resourceGroups": groups}}
        )
    try:
        assert_fails_for(
            tmp_path,
            "test_two_of_twelve_admitted_one_per_tenant_running_at_once",
            "4 admitted during the observation",
        )
    finally:
        reapply(local_cluster, {"ClusterQueue"})


def test_act_3_fails_without_a_preemption_policy(local_cluster, tmp_path):
    kube = local_cluster.kube()
    never = {"spec": {"preemption": {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"}}}
    for t in local_cluster.config.tenants:
        kube.custom.patch_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", t.name, never)
    try:
        assert_fails_for(
            tmp_path,
            "test_high_priority_preempts_low_which_is_requeued",
            "no eviction window observed on job-low-",
        )
    finally:
        reapply(local_cluster, {"ClusterQueue"})


def test_act_4_fails_when_the_device_plugin_gives_one_replica(local_cluster, tmp_path):
    import yaml

    from local.sim import device_plugin

    kube, c = local_cluster.kube(), local_cluster.config
    cm = kube.core.read_namespaced_config_map(device_plugin.CONFIG_MAP, device_plugin.CONFIG_NAMESPACE)
    config = yaml.safe_load(cm.data[c.shared_device_config])
    config["sharing"]["timeSlicing"]["resources"][0]["replicas"] = 1
    kube.core.patch_namespaced_config_map(
        device_plugin.CONFIG_MAP,
        device_plugin.CONFIG_NAMESPACE,
        {"data": {c.shared_device_config: yaml.safe_dump(config)}},
    )
    try:
        assert_fails_for(
            tmp_path,
            "test_one_gpu_four_replicas_four_pods_at_once_one_uuid",
            "nvidia.com/gpu.shared capacity is 1, expected 4 = 1 physical x 4 replicas",
        )
    finally:
        reapply(local_cluster, {"ConfigMap"})


def test_act_8_fails_when_the_device_plugin_has_no_mig_strategy(local_cluster, tmp_path):
    """MIG strategy none: the plugin ignores the MIG manager's slices and advertises the card whole, so the MIG
    pool's node never offers a slice and act 8 says so, naming the node's labels."""
    import yaml

    from infra.objects.device_plugin import MIG_MIXED_DEVICE_CONFIG
    from local.sim import device_plugin

    kube = local_cluster.kube()
    cm = kube.core.read_namespaced_config_map(device_plugin.CONFIG_MAP, device_plugin.CONFIG_NAMESPACE)
    config = yaml.safe_load(cm.data[MIG_MIXED_DEVICE_CONFIG])
    config["flags"]["migStrategy"] = "none"
    kube.core.patch_namespaced_config_map(
        device_plugin.CONFIG_MAP,
        device_plugin.CONFIG_NAMESPACE,
        {"data": {MIG_MIXED_DEVICE_CONFIG: yaml.safe_dump(config)}},
    )
    try:
        assert_fails_for(
            tmp_path,
            "test_one_card_cut_into_mig_slices_runs_two_tenants_at_once_each_billed_its_share",
            "MIG labels are {'strategy': None, 'layout': 'all-balanced', 'state': 'success'}, expected "
            "{'strategy': 'mixed', 'layout': 'all-balanced', 'state': 'success'}",
        )
    finally:
        reapply(local_cluster, {"ConfigMap"})


def test_act_9_fails_when_the_mps_config_time_slices(local_cluster, tmp_path):
    """The "mps" config with sharing.timeSlicing in place of sharing.mps: the MPS pool's node still offers four
    nvidia.com/gpu.shared and the pods run, but as time-sliced replicas with no control daemon limiting them, so
    act 9 fails naming the node's sharing strategy and the missing daemon."""
    import yaml

    from infra.objects.device_plugin import MPS_DEVICE_CONFIG
    from local.sim import device_plugin

    kube = local_cluster.kube()
    cm = kube.core.read_namespaced_config_map(device_plugin.CONFIG_MAP, device_plugin.CONFIG_NAMESPACE)
    config = yaml.safe_load(cm.data[MPS_DEVICE_CONFIG])
    config["sharing"] = {"timeSlicing": config["sharing"]["mps"]}
    kube.core.patch_namespaced_config_map(
        device_plugin.CONFIG_MAP,
        device_plugin.CONFIG_NAMESPACE,
        {"data": {MPS_DEVICE_CONFIG: yaml.safe_dump(config)}},
    )
    try:
        assert_fails_for(
            tmp_path,
            "test_one_card_shared_by_mps_clients_runs_two_tenants_at_once_each_limited_and_billed_its_share",
            "no MPS control daemon ran on node ",
            also=(
                "'sharing': 'time-slicing', 'mps.capable': 'false', 'replicas': '4'}, expected {'count': '1', "
                "'sharing': 'mps', 'mps.capable': 'true', 'replicas': '4'}",
            ),
        )
    finally:
        reapply(local_cluster, {"ConfigMap"})


def test_act_5_fails_when_karpenter_has_no_interruption_queue(local_cluster, tmp_path):
    local_cluster.restart_karpenter(interruption_queue=False)
    try:
        assert_fails_for(
            tmp_path,
            "test_spot_interruption_cordons_within_the_notice_evicts_and_the_workload_runs_again",
            "no SpotInterrupted event on node",
        )
    finally:
        local_cluster.restart_karpenter(interruption_queue=True)


def test_act_6_fails_with_the_exporters_default_csv(local_cluster, tmp_path):
    csv = tmp_path / "default-counters.csv"
    csv.write_text(render(EXPORTER_DEFAULT_METRICS))
    assert_fails_for(
        tmp_path,
        "test_every_record_has_gpu_util_sm_active_cost_and_idle_share",
        "SM_ACTIVE missing (the collector said: missing-sm-active",
        env={"GPU_FINOPS_DCGM_CSV": str(csv)},
    )


def test_reaper_apply_deletes_only_the_eligible_nodeclaim_and_karpenter_removes_its_node(
    local_cluster, tmp_path, capsys
):
    """`gpu-finops reap --apply` against real Karpenter: of two idle GPU nodes of our NodePool, the one
    annotated do-not-disrupt keeps its NodeClaim; the other's NodeClaim is deleted and Karpenter drains
    and removes its node."""
    import uuid
    from datetime import UTC, datetime, timedelta

    from acts.jobs import gpu_job
    from acts.namespaces import cleanup_namespaces, local_queues_active
    from acts.targets import local_target
    from gpu_finops.cli import main
    from gpu_finops.clients.karpenter import KarpenterClient
    from gpu_finops.clients.nodes import KubeNodeSource
    from gpu_finops.cost.collector import align, make_record
    from gpu_finops.cost.pricing import IntervalCost
    from gpu_finops.cost.records import RATE_CATALOG
    from gpu_finops.cost.store import SqliteCostStore
    from gpu_finops.facts.kube_keys import ANNOTATION_DO_NOT_DISRUPT
    from harness.observe import job_pods, queue_state
    from harness.waits import eventually

    kube, config, target = local_cluster.kube(), local_cluster.config, local_target()
    run = uuid.uuid4().hex[:6]
    namespaces = {t.name: f"reap-{run}-{t.name}" for t in config.tenants}
    kube.apply(
        [o for tenant, ns in namespaces.items() for o in (
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
             "metadata": {"name": tenant, "namespace": ns}, "spec": {"clusterQueue": tenant}},
        )]
    )  # fmt: skip
    local_queues_active(kube, {ns: tenant for tenant, ns in namespaces.items()})
    kept = None
    try:
        for tenant, ns in namespaces.items():  # quota 1 GPU per tenant: one node each
            kube.batch.create_namespaced_job(ns, gpu_job(target, f"idle-{run}", ns, tenant, run, seconds=900))
        seen = eventually(
            lambda: (
                [p for ns in namespaces.values() for p in job_pods(kube, ns, f"idle-{run}")],
                queue_state(kube, list(namespaces.values()), list(namespaces)),
            ),
            lambda seen: len(seen[0]) == 2 and all(p.running and p.node for p in seen[0]),
            timeout=300,
            interval=2,
            what="two GPU pods Running on Karpenter nodes (the last observation: the pods, then Kueue's "
            "Workloads and ClusterQueues)",
        )
        pods = seen[0]
        reaped, kept = sorted(p.node for p in pods)
        assert reaped != kept
        kube.core.patch_node(kept, {"metadata": {"annotations": {ANNOTATION_DO_NOT_DISRUPT: "true"}}})
        claims = {c.node_name: c.name for c in KarpenterClient(kube.custom).nodeclaims()}
        assert reaped in claims and kept in claims, claims

        # Three consecutive measured intervals at SM_ACTIVE 0.02 (98 % idle) for both nodes.
        store = SqliteCostStore(tmp_path / "cost.sqlite")
        nodes = {n.name: n for n in KubeNodeSource(kube.core).gpu_nodes()}
        end = align(datetime.now(UTC), 10)
        readings = {"DCGM_FI_DEV_GPU_UTIL": {"g0": 100.0}, "DCGM_FI_PROF_SM_ACTIVE": {"g0": 0.02}}
        records = []
        for name in (reaped, kept):
            for i in range(3):
                s, e = end - timedelta(seconds=10 * (3 - i)), end - timedelta(seconds=10 * (2 - i))
                priced = IntervalCost(0.95 * 10 / 3600, 1.861, RATE_CATALOG)
                records.append(
                    make_record(nodes[name], s, e, (s, e), priced, None, readings, grace_seconds=0)
                )
        store.upsert(records)

        argv = ["reap", "--store", f"sqlite:{tmp_path / 'cost.sqlite'}", "--kubeconfig", str(local_cluster.kubeconfig),
                "--nodepool", config.nodepool_name, "--min-age", "0", "--window", "5", "--consecutive", "3", "--apply"]  # fmt: skip
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert f"deleted NodeClaim {claims[reaped]}" in out, out
        assert "annotated karpenter.sh/do-not-disrupt" in out, out

        eventually(
            lambda: {n.metadata.name for n in kube.core.list_node().items},
            lambda names: reaped not in names and kept in names,
            timeout=300,
            interval=2,
            what=f"Karpenter to drain and remove {reaped} while {kept} stays",
        )
        left = {c.node_name: c for c in KarpenterClient(kube.custom).nodeclaims()}
        assert kept in left and not left[kept].deleting, left
    finally:
        if kept:
            kube.core.patch_node(kept, {"metadata": {"annotations": {ANNOTATION_DO_NOT_DISRUPT: None}}})
        cleanup_namespaces(kube, list(namespaces.values()))
