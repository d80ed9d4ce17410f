"""The synthesized Terraform JSON, asserted as data: order, pins, quota-derived limits, SLR, FIS, CSV,
IMDSv2, encryption."""

from __future__ import annotations

import json

import pytest

from gpu_finops.dcgm.metrics_csv import exported_fields
from gpu_finops.facts import dcgm
from gpu_finops.facts.config import Versions, load_config
from gpu_finops.facts.names import TAG_PROJECT

C = load_config()


def resources(stack: dict, rtype: str) -> dict:
    return stack.get("resource", {}).get(rtype, {})


def test_three_stacks_in_dependency_order(synthesized):
    stacks = synthesized.manifest()["stacks"]
    assert set(stacks) == {"network", "cluster", "addons"}
    assert stacks["cluster"]["dependencies"] == ["network"]
    assert stacks["addons"]["dependencies"] == ["cluster"]


def test_network_has_nat_egress_for_every_private_subnet(synthesized):
    net = synthesized.stack("network")
    subnets = resources(net, "aws_subnet")
    private = {k for k, v in subnets.items() if k.startswith("private-")}
    assert len(private) >= 2 and len({subnets[k]["availability_zone"] for k in private}) >= 2
    routes = resources(net, "aws_route")
    nat_routes = [r for k, r in routes.items() if k.startswith("private-default")]
    assert len(nat_routes) == len(private)
    assert all(
        r["nat_gateway_id"] == "${aws_nat_gateway.nat.id}" and r["destination_cidr_block"] == "0.0.0.0/0"
        for r in nat_routes
    )
    nat = resources(net, "aws_nat_gateway")["nat"]
    assert nat["allocation_id"] == "${aws_eip.nat-eip.id}"
    for k in private:
        tags = subnets[k]["tags"]
        assert (
            tags["karpenter.sh/discovery"] == C.cluster_name
            and tags["kubernetes.io/role/internal-elb"] == "1"
        )


def test_everything_that_launches_nodes_waits_for_the_nat_routes(synthesized):
    cluster = synthesized.stack("cluster")
    egress = resources(cluster, "terraform_data")["egress"]["input"]["nat_routes"]
    assert any("aws_routeprivate-default" in ref for ref in egress)
    assert any("aws_route_table_associationprivate-rta" in ref for ref in egress)
    assert "terraform_data.egress" in resources(cluster, "aws_eks_cluster")["eks"]["depends_on"]
    assert "terraform_data.egress" in resources(cluster, "aws_eks_node_group")["system"]["depends_on"]


def test_addons_read_cluster_outputs_and_need_no_api_at_plan_time(synthesized):
    addons = synthesized.stack("addons")
    helm = addons["provider"]["helm"][0]["kubernetes"]
    assert "terraform_remote_state.cross-stack-reference-input-cluster" in helm["host"]
    assert "kubernetes_manifest" not in addons.get("resource", {})
    assert not any(k.startswith("kubectl") for k in addons.get("resource", {}))
    crs = resources(addons, "helm_release")["gpu-finops-crs"]
    assert {"helm_release.karpenter", "helm_release.kueue"} <= set(crs["depends_on"])
    karpenter = resources(addons, "helm_release")["karpenter"]
    queue = next(s for s in karpenter["set"] if s["name"] == "settings.interruptionQueue")
    assert "cross-stack-reference-input-cluster" in queue["value"]


def test_the_addons_stack_installs_the_product_chart_before_what_mounts_it(synthesized):
    """One source of the collector's objects: the stack's gpu-finops release is the repository's chart
    (copied byte for byte next to the stacks), Prometheus mounts its rules and dcgm-exporter its CSV after it."""
    from tools.chart_files import CHART

    releases = resources(synthesized.stack("addons"), "helm_release")
    ours = releases["gpu-finops"]
    copy = (synthesized.outdir / "stacks" / "addons" / ours["chart"]).resolve()
    shipped = {
        p.relative_to(CHART): p.read_bytes() for p in CHART.rglob("*") if p.is_file() and p.name != ".gitkeep"
    }
    copied = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    assert copied == shipped
    assert "helm_release.gpu-finops" in releases["prometheus"]["depends_on"]
    assert "helm_release.gpu-finops" in releases["dcgm-exporter"]["depends_on"]
    sets = {s["name"]: s["value"] for s in ours["set"]}
    assert set(sets) == {"collector.image.repository", "collector.image.tag", "collector.store"}
    assert "aws_ecr_repository" in sets["collector.image.repository"]
    assert sets["collector.store"].startswith("dynamodb:${")


def test_versions_are_pinned_and_kueue_comes_from_the_release_registry(synthesized):
    releases = resources(synthesized.stack("addons"), "helm_release")
    v = Versions()
    expected = {
        "karpenter-crd": v.karpenter_chart,
        "karpenter": v.karpenter_chart,
        "kueue": v.kueue_chart,
        "nvidia-device-plugin": v.device_plugin_chart,
        "dcgm-exporter": v.dcgm_exporter_chart,
        "prometheus": v.prometheus_chart,
    }
    assert {k: releases[k]["version"] for k in expected} == expected
    assert releases["kueue"]["repository"] == "oci://registry.k8s.io/kueue/charts"
    assert "staging" not in json.dumps(releases)
    assert resources(synthesized.stack("cluster"), "aws_eks_cluster")["eks"]["version"] == v.kubernetes


def test_kueue_runs_with_the_visibility_api_and_ranked_reasons_as_the_local_target_does(synthesized):
    """The Kueue chart's values turn on the gates `diagnose` quotes (VisibilityOnDemand: queue positions;
    UnadmittedWorkloadsObservability: KEP-10852's reasons), from the one map the local target starts Kueue
    with too."""
    import yaml

    from infra.objects.kueue import KUEUE_FEATURE_GATES
    from local.cluster.controllers import feature_gates_flag

    (values,) = resources(synthesized.stack("addons"), "helm_release")["kueue"]["values"]
    gates = yaml.safe_load(values)["controllerManager"]["featureGates"]
    assert gates == [
        {"name": "UnadmittedWorkloadsObservability", "enabled": True},
        {"name": "VisibilityOnDemand", "enabled": True},
    ]
    assert {g["name"]: g["enabled"] for g in gates} == KUEUE_FEATURE_GATES
    assert feature_gates_flag(KUEUE_FEATURE_GATES) == (
        "--feature-gates=UnadmittedWorkloadsObservability=true,VisibilityOnDemand=true"
    )


def test_karpenter_crds_come_from_the_karpenter_crd_chart_before_the_controller(synthesized):
    releases = resources(synthesized.stack("addons"), "helm_release")
    crd, karpenter = releases["karpenter-crd"], releases["karpenter"]
    assert (crd["chart"], crd["version"], crd["repository"]) == (
        "karpenter-crd",
        karpenter["version"],
        karpenter["repository"],
    )
    assert crd["namespace"] == karpenter["namespace"] == "kube-system"
    assert karpenter["skip_crds"] is True
    assert "skip_crds" not in crd or crd["skip_crds"] is False
    assert "helm_release.karpenter-crd" in karpenter["depends_on"]


def test_nodepool_is_spot_only_pinned_and_limited_by_the_quota(synthesized):
    pools = {
        d["metadata"]["name"]: d for d in synthesized.chart_docs("karpenter.yaml") if d["kind"] == "NodePool"
    }
    spec = pools[C.nodepool_name]["spec"]
    reqs = {r["key"]: r for r in spec["template"]["spec"]["requirements"]}
    assert reqs["karpenter.sh/capacity-type"]["values"] == ["spot"]
    assert reqs["node.kubernetes.io/instance-type"]["values"] == list(C.gpu_instance_types)
    assert reqs["karpenter.k8s.aws/instance-cpu"]["values"] == [str(C.gpu_node_vcpu)]
    assert reqs["karpenter.k8s.aws/instance-gpu-count"]["values"] == [str(C.gpus_per_node)]
    # the pools launch exactly the cards the quotas admit, and together fit in the account's spot vCPUs
    assert spec["limits"] == {
        "cpu": str(C.whole_cards * C.gpu_node_vcpu),
        "nvidia.com/gpu": str(C.whole_cards),
    }
    shared = pools[C.shared_nodepool_name]["spec"]["limits"]
    assert shared == {"cpu": str(C.shared_cards * C.gpu_node_vcpu), "nvidia.com/gpu": str(C.shared_cards)}
    assert int(spec["limits"]["cpu"]) + int(shared["cpu"]) <= C.gvt_spot_vcpu_quota
    # Kueue never admits more cards than the pools can launch: cards on gpu-spot, replicas on gpu-shared.
    kueue = synthesized.chart_docs("kueue.yaml")
    quotas: dict[str, int] = {}
    for cq in kueue:
        if cq["kind"] != "ClusterQueue":
            continue
        for g in cq["spec"]["resourceGroups"]:
            for f in g["flavors"]:
                for q in f["resources"]:
                    quotas[q["name"]] = quotas.get(q["name"], 0) + q["nominalQuota"]
    assert quotas["nvidia.com/gpu"] == int(spec["limits"]["nvidia.com/gpu"])
    assert quotas["nvidia.com/gpu.shared"] == int(shared["nvidia.com/gpu"]) * C.timeslicing_replicas


def test_kueue_queues_one_per_tenant_in_one_cohort_v1beta2(synthesized):
    docs = synthesized.chart_docs("kueue.yaml")
    cqs = [d for d in docs if d["kind"] == "ClusterQueue"]
    assert {d["metadata"]["name"] for d in cqs} == {t.name for t in C.tenants}
    assert all(d["apiVersion"] == "kueue.x-k8s.io/v1beta2" and d["spec"]["cohortName"] == "gpu" for d in cqs)
    assert all("cohort" not in d["spec"] for d in cqs)
    assert all(d["spec"]["preemption"]["withinClusterQueue"] == "LowerPriority" for d in cqs)
    assert {d["metadata"]["name"] for d in docs if d["kind"] == "WorkloadPriorityClass"} == {"low", "high"}
    assert {
        (d["metadata"]["namespace"], d["spec"]["clusterQueue"]) for d in docs if d["kind"] == "LocalQueue"
    } == {(t.name, t.name) for t in C.tenants}


def test_spot_slr_is_only_read_never_managed(synthesized):
    for name in ("network", "cluster", "addons"):
        assert "aws_iam_service_linked_role" not in synthesized.stack(name).get("resource", {})
    assert (
        synthesized.stack("cluster")["data"]["aws_iam_role"]["spot-slr"]["name"] == "AWSServiceRoleForEC2Spot"
    )


def test_fis_targets_only_our_tagged_spot_instances(synthesized):
    cluster = synthesized.stack("cluster")
    (tpl,) = resources(cluster, "aws_fis_experiment_template").values()
    (target,) = tpl["target"]
    assert target["resource_type"] == "aws:ec2:spot-instance"
    assert {t["key"]: t["value"] for t in target["resource_tag"]} == {
        "karpenter.sh/nodepool": C.nodepool_name,
        "gpu-finops.io/project": C.project,
    }
    assert tpl["action"][0]["action_id"] == "aws:ec2:send-spot-instance-interruptions"
    assert tpl["action"][0]["parameter"] == [{"key": "durationBeforeInterruption", "value": "PT2M"}]
    policy = json.loads(resources(cluster, "aws_iam_role_policy")["fis-policy"]["policy"])
    interrupt = next(s for s in policy["Statement"] if s["Action"] == "ec2:SendSpotInstanceInterruptions")
    assert interrupt["Condition"]["StringEquals"]["aws:ResourceTag/karpenter.sh/nodepool"] == C.nodepool_name
    trust = json.loads(resources(cluster, "aws_iam_role")["fis-role"]["assume_role_policy"])
    assert trust["Statement"][0]["Principal"]["Service"] == "fis.amazonaws.com"


def test_interruption_queue_and_rules(synthesized):
    cluster = synthesized.stack("cluster")
    q = resources(cluster, "aws_sqs_queue")["interruption-queue"]
    assert q["message_retention_seconds"] == 300 and q["sqs_managed_sse_enabled"] is True
    rules = resources(cluster, "aws_cloudwatch_event_rule")
    assert len(rules) == 4
    patterns = json.dumps(rules)
    for detail in (
        "EC2 Spot Instance Interruption Warning",
        "EC2 Instance Rebalance Recommendation",
        "EC2 Instance State-change Notification",
        "AWS Health Event",
    ):
        assert detail in patterns
    targets = resources(cluster, "aws_cloudwatch_event_target")
    assert all(t["arn"] == "${aws_sqs_queue.interruption-queue.arn}" for t in targets.values())


def test_csv_shipped_to_the_exporter_exports_sm_active(synthesized):
    (cm,) = [d for d in synthesized.product_chart_docs() if d["metadata"]["name"] == "dcgm-metrics"]
    fields = exported_fields(cm["data"]["gpu-finops.csv"])
    assert dcgm.SM_ACTIVE in fields and set(dcgm.COLLECTED) <= fields
    values = json.dumps(resources(synthesized.stack("addons"), "helm_release")["dcgm-exporter"]["values"])
    assert "gpu-finops.csv" in values


def test_imdsv2_required_on_every_node(synthesized):
    lt = resources(synthesized.stack("cluster"), "aws_launch_template")["system-lt"]
    assert lt["metadata_options"]["http_tokens"] == "required"
    node_class = next(d for d in synthesized.chart_docs("karpenter.yaml") if d["kind"] == "EC2NodeClass")
    assert node_class["spec"]["metadataOptions"]["httpTokens"] == "required"


def test_encryption_everywhere(synthesized):
    cluster = synthesized.stack("cluster")
    eks = resources(cluster, "aws_eks_cluster")["eks"]
    assert eks["encryption_config"]["resources"] == ["secrets"]
    assert eks["encryption_config"]["provider"]["key_arn"] == "${aws_kms_key.kms.arn}"
    assert resources(cluster, "aws_kms_key")["kms"]["enable_key_rotation"] is True
    assert resources(cluster, "aws_dynamodb_table")["cost-table"]["server_side_encryption"]["enabled"] is True
    node_class = next(d for d in synthesized.chart_docs("karpenter.yaml") if d["kind"] == "EC2NodeClass")
    assert all(b["ebs"]["encrypted"] for b in node_class["spec"]["blockDeviceMappings"])


def test_cost_table_keys_match_the_collector(synthesized):
    from gpu_finops.cost.records import KEY

    table = resources(synthesized.stack("cluster"), "aws_dynamodb_table")["cost-table"]
    assert (table["hash_key"], table["range_key"]) == KEY


@pytest.mark.parametrize("stack", ["network", "cluster", "addons"])
def test_every_stack_has_state_outside_the_synth_folder(synthesized, stack):
    backend = synthesized.stack(stack)["terraform"]["backend"]["local"]["path"]
    assert backend.endswith(f"terraform.{stack}.tfstate") and "cdktf.out" not in backend


def test_eks_addons_are_pinned_or_resolved_to_ekss_default_for_the_pinned_minor(synthesized):
    cluster = synthesized.stack("cluster")
    addons = {a["addon_name"]: a for a in resources(cluster, "aws_eks_addon").values()}
    defaults = cluster.get("data", {}).get("aws_eks_addon_version", {})
    assert set(addons) == set(Versions().eks_addons())
    for name, pinned in Versions().eks_addons().items():
        if pinned:
            assert addons[name]["addon_version"] == pinned, name
        else:
            lookup = defaults[f"addon-{name}-default"]
            assert (
                addons[name]["addon_version"]
                == f"${{data.aws_eks_addon_version.addon-{name}-default.version}}"
            )
            assert (lookup["addon_name"], lookup["most_recent"]) == (name, False)
            assert lookup["kubernetes_version"] == "${aws_eks_cluster.eks.version}"
    assert Versions().addon_kube_proxy.startswith(f"v{Versions().kubernetes}.")


def test_the_node_ami_alias_is_a_dated_release_never_latest(synthesized):
    import re

    node_class = next(d for d in synthesized.chart_docs("karpenter.yaml") if d["kind"] == "EC2NodeClass")
    (term,) = node_class["spec"]["amiSelectorTerms"]
    assert term == {"alias": Versions().node_ami_alias}
    assert re.fullmatch(r"al2023@v20\d{6}", term["alias"]), term


def test_the_focus_export_bucket_is_ours_versioned_encrypted_private_and_expires_old_versions(synthesized):
    cluster = synthesized.stack("cluster")
    bucket = resources(cluster, "aws_s3_bucket")["focus-export"]
    assert bucket["bucket"] == C.export_bucket("${data.aws_caller_identity.account.account_id}")
    assert bucket["tags"][TAG_PROJECT] == C.project
    assert "force_destroy" not in bucket or bucket["force_destroy"] is False
    ref = "${aws_s3_bucket.focus-export.id}"
    block = resources(cluster, "aws_s3_bucket_public_access_block")["focus-export-public-access"]
    assert block["bucket"] == ref
    assert all(
        block[k] is True
        for k in ("block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets")
    )
    versioning = resources(cluster, "aws_s3_bucket_versioning")["focus-export-versioning"]
    assert versioning["versioning_configuration"]["status"] == "Enabled"
    (sse,) = resources(cluster, "aws_s3_bucket_server_side_encryption_configuration")["focus-export-sse"][
        "rule"
    ]
    default = sse["apply_server_side_encryption_by_default"]
    assert (default["sse_algorithm"], default["kms_master_key_id"]) == ("aws:kms", "${aws_kms_key.kms.arn}")
    (rule,) = resources(cluster, "aws_s3_bucket_lifecycle_configuration")["focus-export-lifecycle"]["rule"]
    assert rule["status"] == "Enabled"
    assert rule["noncurrent_version_expiration"][0]["noncurrent_days"] > 0
    assert cluster["output"]["export_bucket"]["value"] == "${aws_s3_bucket.focus-export.bucket}"


def test_the_collector_records_holdings_and_may_read_what_they_need_only(synthesized):
    """The stack installs the product chart: `--holdings kube` as the collector's own parser reads it, and
    a ClusterRole bound to its ServiceAccount (the name EKS Pod Identity binds) that may list nodes, pods,
    namespaces, Jobs and Kueue LocalQueues, and, for the diagnosis exporter beside it, events and Kueue
    Workloads; nothing more (both only list), but the diagnosis' two gets by name (a LocalQueue, and its
    pendingworkloads in Kueue's visibility API)."""
    import argparse

    from gpu_finops.cost.cli_collect import add_arguments
    from gpu_finops.facts.names import COLLECTOR

    rendered = synthesized.product_chart_docs()
    docs = {d["kind"]: d for d in rendered if d["kind"] != "Deployment"}
    (dep,) = [d for d in rendered if d["kind"] == "Deployment" and d["metadata"]["name"] == COLLECTOR]
    pod = dep["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert container["args"][0] == "collect"
    args = parser.parse_args(container["args"][1:])
    assert args.holdings == "kube" and args.pod_resources_url is None and args.kubeconfig is None

    role, binding = docs["ClusterRole"], docs["ClusterRoleBinding"]
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    read = ("list",)
    wanted = [
        ("", "nodes"),
        ("", "pods"),
        ("", "namespaces"),
        ("batch", "jobs"),
        ("kueue.x-k8s.io", "localqueues"),
        ("events.k8s.io", "events"),
        ("kueue.x-k8s.io", "workloads"),
        ("resource.k8s.io", "resourceslices"),  # a DRA node's GPUs
        ("resource.k8s.io", "resourceclaims"),  # the devices a pod holds under DRA
        ("resource.k8s.io", "deviceclasses"),  # the diagnosis: which class serves nvidia.com/gpu
    ]
    # the diagnosis' two reads by name: a waiting workload's LocalQueue (its ClusterQueue) and its queue
    # positions from Kueue's visibility API (gpu_finops/diagnose/kueue_visibility.py)
    by_name = {
        ("kueue.x-k8s.io", "localqueues", "get"),
        ("visibility.kueue.x-k8s.io", "localqueues/pendingworkloads", "get"),
    }
    assert granted == {(g, r, v) for g, r in wanted for v in read} | by_name, sorted(granted)
    assert all(set(rule) == {"apiGroups", "resources", "verbs"} for rule in role["rules"]), role["rules"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": pod["serviceAccountName"],
            "namespace": docs["ServiceAccount"]["metadata"]["namespace"],
        }
    ]
    assert pod["serviceAccountName"] == docs["ServiceAccount"]["metadata"]["name"] == COLLECTOR
