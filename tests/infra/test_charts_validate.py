"""What `make up` would apply, judged by the real components: helm renders the pinned charts with the
stack's values, a throwaway kube-apiserver with the charts' CRDs dry-runs every object (strict fields,
CRD schemas and CEL). The adjacent cases prove the check refuses what the server refuses."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from gpu_finops.facts.config import load_config
from gpu_finops.facts.names import COLLECTOR
from infra.objects import karpenter, kueue
from local.charts import chart_inputs, chart_render, dry_run

pytestmark = [pytest.mark.slow, pytest.mark.binaries]


@pytest.fixture(scope="module")
def config():
    return load_config()


@pytest.fixture(scope="module")
def report() -> dry_run.Report:
    return dry_run.Report()


@pytest.fixture(scope="module")
def rendered(synthesized, config, report, tmp_path_factory) -> dict[str, chart_render.Manifests]:
    sets = chart_render.render_all(config, synthesized.outdir, tmp_path_factory.mktemp("render"), report)
    return {m.source: m for m in sets}


@pytest.fixture(scope="module")
def server(config, report, tmp_path_factory) -> Iterator[Any]:
    """etcd + kube-apiserver on free ports with the CRDs installed; stopped after the module."""
    from local.charts.validation_server import ValidationServer

    with ValidationServer(tmp_path_factory.mktemp("apiserver")) as srv:
        api = srv.api_client()
        report.crds = dry_run.install_crds(api, chart_render.crd_files(config))
        yield api


@pytest.fixture(scope="module")
def dry(server, rendered) -> dry_run.DryRun:
    d = dry_run.DryRun(server)
    d.create_namespaces(chart_render.namespaces_of(list(rendered.values())))
    return d


def _env(docs: list[dict], kind: str) -> dict[str, str]:
    (dep,) = [d for d in docs if d["kind"] == kind]
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def test_both_charts_render_at_their_pins_with_the_stacks_values(rendered, config):
    karpenter = rendered[f"karpenter chart {config.versions.karpenter_chart}"]
    kueue = rendered[f"kueue chart {config.versions.kueue_chart}"]
    env = _env(karpenter.docs, "Deployment")
    stand_in = chart_inputs.stand_ins(config)
    observed = {k: env.get(k) for k in ("CLUSTER_NAME", "INTERRUPTION_QUEUE", "CLUSTER_ENDPOINT")}
    assert observed == {
        "CLUSTER_NAME": config.cluster_name,
        "INTERRUPTION_QUEUE": stand_in[("aws_sqs_queue", "name")],
        "CLUSTER_ENDPOINT": stand_in[("aws_eks_cluster", "endpoint")],
    }
    assert "NodeOverlay=true" in env.get("FEATURE_GATES", ""), env.get("FEATURE_GATES")
    assert {"Deployment", "ValidatingWebhookConfiguration"} <= {d["kind"] for d in kueue.docs}


def test_the_kueue_chart_runs_the_gates_diagnose_quotes_and_registers_the_visibility_api(rendered, config):
    """Rendered at its pin with the stack's values: the manager's --feature-gates carry both gates, and the
    chart registers visibility.kueue.x-k8s.io v1beta2 and v1beta1 behind its Service."""
    kueue = rendered[f"kueue chart {config.versions.kueue_chart}"].docs
    (manager,) = [d for d in kueue if d["kind"] == "Deployment"]
    (container,) = [c for c in manager["spec"]["template"]["spec"]["containers"] if c["name"] == "manager"]
    assert (
        "--feature-gates=UnadmittedWorkloadsObservability=true,VisibilityOnDemand=true" in container["args"]
    )
    services = {d["metadata"]["name"]: d["spec"] for d in kueue if d["kind"] == "APIService"}
    assert set(services) == {"v1beta1.visibility.kueue.x-k8s.io", "v1beta2.visibility.kueue.x-k8s.io"}
    names = {d["metadata"]["name"] for d in kueue if d["kind"] == "Service"}
    assert {s["service"]["name"] for s in services.values()} <= names


def test_the_karpenter_crd_chart_renders_every_karpenter_crd_our_objects_use(rendered, config):
    crds = rendered[f"karpenter-crd chart {config.versions.karpenter_chart}"].docs
    assert {d["kind"] for d in crds} == {"CustomResourceDefinition"}
    served = {(d["spec"]["group"], d["spec"]["names"]["kind"]) for d in crds}
    ours = {
        (d["apiVersion"].split("/")[0], d["kind"])
        for d in rendered["gpu-finops-crs chart"].docs
        if d["apiVersion"].split("/")[0] in {"karpenter.sh", "karpenter.k8s.aws"}
    }
    assert ours == {
        ("karpenter.k8s.aws", "EC2NodeClass"),
        ("karpenter.sh", "NodePool"),
        ("karpenter.sh", "NodeOverlay"),
    }
    assert ours <= served, f"not in the karpenter-crd chart: {sorted(ours - served)}"


def test_the_product_chart_renders_with_the_stacks_set_entries(rendered, config):
    ours = rendered["gpu-finops chart"]
    deps = {d["metadata"]["name"]: d for d in ours.docs if d["kind"] == "Deployment"}
    assert sorted(deps) == [COLLECTOR, COLLECTOR.replace("collector", "diagnosis")]
    (container,) = deps[COLLECTOR]["spec"]["template"]["spec"]["containers"]
    repo = chart_inputs.stand_ins(config)[("aws_ecr_repository", "repository_url")]
    table = chart_inputs.stand_ins(config)[("aws_dynamodb_table", "name")]
    assert container["image"] == f"{repo}:{config.versions.collector_image_tag}"
    assert f"--store=dynamodb:{table}" in container["args"]
    for dep in (
        deps.values()
    ):  # the diagnosis exporter runs the collector's image (the Dockerfile copies gpu_finops/diagnose/)
        assert [c["image"] for c in dep["spec"]["template"]["spec"]["containers"]] == [container["image"]]
    kinds = {d["kind"] for d in ours.docs}
    assert {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Service", "ConfigMap"} <= kinds
    assert "PrometheusRule" not in kinds  # the stack's Prometheus is the plain chart: rules as a ConfigMap
    operator = {d["kind"] for d in rendered[f"gpu-finops chart {chart_render.OPERATOR_VARIANT}"].docs}
    assert {"PrometheusRule", "ServiceMonitor"} <= operator


def test_the_cr_chart_renders_our_custom_resources(rendered):
    crs = rendered["gpu-finops-crs chart"]
    assert "Deployment" not in {d["kind"] for d in crs.docs}  # the collector is the product chart's
    kinds = {d["kind"] for d in crs.docs}
    assert {
        "EC2NodeClass",
        "NodePool",
        "NodeOverlay",
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
    } <= kinds


def test_every_values_key_we_set_is_one_the_chart_has(rendered, report):
    assert report.unknown_values == [], "\n".join(report.unknown_values)


def test_a_misspelled_values_key_is_found_against_the_real_values_yaml(tmp_path, config, synthesized):
    rel = chart_inputs.releases(synthesized.stack("addons"), config)["karpenter"]
    chart = chart_render.chart_dir("karpenter", rel, tmp_path)
    defaults = yaml.safe_load((chart / "values.yaml").read_text())
    ours = {
        "settings": {"clusterNmae": "x", "featureGates": {"nodeOverlay": True}},
        "podAnnotations": {"a": "b"},
    }
    assert chart_inputs.unknown_values_keys(ours, defaults) == ["settings.clusterNmae"]


def test_every_rendered_object_is_accepted_by_the_api_server(rendered, dry, report):
    for m in rendered.values():
        report.rendered[m.source] = len(m.docs)
        report.rejections += dry.check_all(m.docs, m.source, m.namespace)
    assert report.rejections == [], report.summary()
    assert sum(report.rendered.values()) > 100, report.rendered


# --- adjacent cases: the server refuses, for its reason ----------------------------------------------------
def _refused(dry: dry_run.DryRun, doc: dict[str, Any]) -> dry_run.Rejection:
    rejection = dry.check(doc, "adjacent case", "team-a")
    assert rejection is not None, f"{doc['kind']} {doc['metadata']['name']} was accepted"
    return rejection


def test_an_ec2nodeclass_with_a_misspelled_field_is_refused(dry, config):
    doc = karpenter.ec2nodeclass(config, "role")
    doc["spec"]["amiSelectorTerm"] = doc["spec"].pop("amiSelectorTerms")
    r = _refused(dry, doc)
    assert 'unknown field "spec.amiSelectorTerm"' in r.message, r
    assert r.field == "spec.amiSelectorTerm", r


def test_a_nodepool_requirement_with_an_invalid_operator_is_refused(dry, config):
    doc = karpenter.nodepool(config)
    doc["spec"]["template"]["spec"]["requirements"][0]["operator"] = "Within"
    r = _refused(dry, doc)
    assert 'Unsupported value: "Within"' in r.message, r
    assert "spec.template.spec.requirements[0].operator" in r.field, r


def test_a_clusterqueue_with_a_borrowing_limit_outside_a_cohort_is_refused(dry, config):
    (doc, *_) = kueue.cluster_queues(config)
    doc = copy.deepcopy(doc)
    del doc["spec"]["cohortName"]
    r = _refused(dry, doc)
    assert "borrowingLimit must be nil when cohort is empty" in r.message, r


def test_a_clusterqueue_naming_an_undefined_flavor_is_accepted_by_the_server(dry, config):
    """Not a server check: Kueue accepts it and marks the queue inactive at run time (docs/infra.md)."""
    (doc, *_) = kueue.cluster_queues(config)
    doc = copy.deepcopy(doc)
    doc["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "no-such-flavor"
    assert dry.check(doc, "adjacent case") is None


def test_a_nodeoverlay_capacity_on_cpu_is_refused(dry, config):
    doc = karpenter.shared_capacity_overlay(config)
    doc["spec"]["capacity"] = {"cpu": "8"}
    r = _refused(dry, doc)
    assert "invalid resource restricted" in r.message, r
    assert "spec.capacity" in r.field, r


def test_a_prometheusrule_with_a_bad_duration_is_refused_by_the_operators_crd(dry, rendered):
    """prometheus-operator's CRD (from its Go module, installed on the validation server) judges our rules."""
    (rule,) = [
        d
        for d in rendered[f"gpu-finops chart {chart_render.OPERATOR_VARIANT}"].docs
        if d["kind"] == "PrometheusRule"
    ]
    doc = copy.deepcopy(rule)
    doc["spec"]["groups"][0]["interval"] = "one minute"
    r = _refused(dry, doc)
    assert "spec.groups[0].interval" in r.field + r.message, r
    doc = copy.deepcopy(rule)
    doc["spec"]["groups"][0]["rules"][0]["recrd"] = doc["spec"]["groups"][0]["rules"][0].pop("record")
    r = _refused(dry, doc)
    assert 'unknown field "spec.groups[0].rules[0].recrd"' in r.message, r


def test_an_existing_object_is_still_checked_strictly(dry):
    """Objects the server already holds (namespaces, the Kueue chart's CRDs) go through server-side apply."""
    doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}, "spec": {"finalizer": []}}
    r = _refused(dry, doc)
    assert "spec.finalizer" in r.message, r


def test_make_ups_first_step_runs_the_same_validation(synthesized, capsys):
    from gpu_finops.cli import main

    assert main(["local", "validate-charts", "--outdir", str(synthesized.outdir), "--no-synth"]) == 0
    assert "none rejected" in capsys.readouterr().out


@pytest.fixture(scope="module")
def dra_rendered(config, supported_node, tmp_path_factory) -> tuple[dict[str, chart_render.Manifests], list]:
    """Every release of a stack with the DRA pool on AWS, rendered as `make up` would install it; with the values
    keys no chart (or no recorded key list) has."""
    from dataclasses import replace

    from infra.app import synth

    tenants = tuple(replace(t, dra_gpu_quota=1) for t in config.tenants)
    dra = replace(config, tenants=tenants, dra_on_aws=True, gvt_spot_vcpu_quota=20).validate()
    out = tmp_path_factory.mktemp("cdktf-dra")
    synth(dra, out)
    report = dry_run.Report()
    sets = chart_render.render_all(dra, out, tmp_path_factory.mktemp("render-dra"), report)
    return {m.source: m for m in sets}, report.unknown_values


def test_with_a_dra_pool_karpenter_accounts_for_nvidia_claims_and_kueue_maps_the_class(dra_rendered, config):
    """The pinned Karpenter chart turns awsFeatureGates.draNVIDIAGPU into its NVIDIA DRA gate (the EFA one left off)
    and stops ignoring claims; Kueue's
    chart installs the Configuration with the device class mapping."""
    rendered, unknown = dra_rendered
    assert unknown == []
    env = _env(rendered[f"karpenter chart {config.versions.karpenter_chart}"].docs, "Deployment")
    assert env["IGNORE_DRA_REQUESTS"] == "false", env
    assert "DRANVIDIAGPU=true" in env["AWS_FEATURE_GATES"] and "DRAEFA=false" in env["AWS_FEATURE_GATES"], env
    kueue_docs = rendered[f"kueue chart {config.versions.kueue_chart}"].docs
    (manager_config,) = [
        d for d in kueue_docs if d["kind"] == "ConfigMap" and "manager-config" in d["metadata"]["name"]
    ]
    configuration = yaml.safe_load(next(iter(manager_config["data"].values())))
    assert configuration["resources"]["deviceClassMappings"] == kueue.KUEUE_DEVICE_CLASS_MAPPINGS


def test_with_a_dra_pool_every_rendered_object_is_accepted_by_the_api_server(dra_rendered, dry):
    rendered, _ = dra_rendered
    rejections = [r for m in rendered.values() for r in dry.check_all(m.docs, m.source, m.namespace)]
    assert rejections == []
    pools = [d for m in rendered.values() for d in m.docs if d["kind"] == "NodePool"]
    assert "gpu-dra" in [p["metadata"]["name"] for p in pools]
