"""The gpu-finops chart (charts/gpu-finops) through the pinned Helm: it lints, renders each way a cluster
can have it (plain Prometheus, prometheus-operator), holds the ledger's recording rules exactly as the ledger
renders them, grants the collector `list` on what it reads and nothing else (the diagnosis also `get` on its
two Kueue reads by name), runs it non-root on a read-only root filesystem, and its schema refuses a misspelled
or mistyped value with helm's own message. The diagnosis exporter's Deployment (templates/diagnosis.yaml) is
held to the same."""

from __future__ import annotations

import argparse
import json

import pytest
import yaml

from gpu_finops.dcgm.metrics_csv import exported_fields
from gpu_finops.facts import dcgm
from gpu_finops.facts.names import COLLECTOR
from gpu_finops.ledger import rules
from local.charts import product_chart
from local.charts.chart_inputs import ValidationError
from local.charts.chart_render import OPERATOR_API_VERSIONS
from tools import chart_files

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("chart")


def kinds(docs: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for d in docs:
        out.setdefault(d["kind"], []).append(d)
    return out


DIAGNOSIS = COLLECTOR.replace("collector", "diagnosis")  # <release>-diagnosis, beside <release>-collector


def named(docs: list[dict], name: str) -> dict:
    """The one object of `docs` with this name."""
    (found,) = [d for d in docs if d["metadata"]["name"] == name]
    return found


@pytest.fixture(scope="module")
def plain(work) -> dict[str, list[dict]]:
    """Defaults (ci values) on a cluster without prometheus-operator."""
    return kinds(product_chart.template(work=work / "plain"))


@pytest.fixture(scope="module")
def operator(work) -> dict[str, list[dict]]:
    values = [{"serviceMonitor": {"enabled": True}, "dcgmMetricsCsv": {"enabled": True}}]
    return kinds(product_chart.template(values, work=work / "operator", api_versions=OPERATOR_API_VERSIONS))


def test_helm_lint_strict_passes(work):
    out = product_chart.lint(work / "lint")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 chart(s) failed" in out.stdout


def test_the_generated_files_match_their_sources():
    assert chart_files.stale() == [], "stale: run `python -m tools.chart_files --write`"


def test_without_the_operator_the_rules_are_a_configmap_holding_the_ledgers_rules(plain):
    assert "PrometheusRule" not in plain and "ServiceMonitor" not in plain
    (cm,) = [c for c in plain["ConfigMap"] if c["metadata"]["name"].endswith("-rules")]
    assert set(cm["data"]) == {"recording-rules.yaml", "alerts.yaml"}
    assert yaml.safe_load(cm["data"]["recording-rules.yaml"]) == rules.build()
    assert cm["data"]["recording-rules.yaml"] == rules.RULES_PATH.read_text()  # one text, two places
    alerts = yaml.safe_load((chart_files.CHART / "files" / "alerts.yaml").read_text())
    assert yaml.safe_load(cm["data"]["alerts.yaml"]) == alerts


def test_with_the_operator_the_rules_are_one_prometheusrule_of_every_group(operator):
    (rule,) = operator["PrometheusRule"]
    alerts = yaml.safe_load((chart_files.CHART / "files" / "alerts.yaml").read_text())
    assert rule["spec"]["groups"] == rules.build()["groups"] + alerts["groups"]
    assert not [c for c in operator.get("ConfigMap", []) if c["metadata"]["name"].endswith("-rules")]
    assert len(operator["ServiceMonitor"]) == len(operator["Service"]) == 2
    for name in (COLLECTOR, DIAGNOSIS):  # each Deployment's Service, and a ServiceMonitor of each
        monitor, service = named(operator["ServiceMonitor"], name), named(operator["Service"], name)
        dep = named(operator["Deployment"], name)
        assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
        assert service["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
        assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]


def test_mode_configmap_wins_over_the_operator_and_mode_prometheusrule_needs_no_discovery(work):
    forced_cm = kinds(
        product_chart.template(
            [{"rules": {"mode": "configMap"}}], work=work / "cm", api_versions=OPERATOR_API_VERSIONS
        )
    )
    assert "PrometheusRule" not in forced_cm
    forced_pr = kinds(product_chart.template([{"rules": {"mode": "prometheusRule"}}], work=work / "pr"))
    assert len(forced_pr["PrometheusRule"]) == 1


def test_the_collector_lists_only_what_it_reads(plain, work):
    (role,) = plain["ClusterRole"]
    granted = {
        (g, r, v)
        for rule in role["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    assert granted == {
        ("", "nodes", "list"),
        ("resource.k8s.io", "resourceslices", "list"),  # a DRA node's GPUs
        ("resource.k8s.io", "resourceclaims", "list"),  # the devices a pod holds under DRA
        ("resource.k8s.io", "deviceclasses", "list"),  # the diagnosis: which class serves nvidia.com/gpu
        ("", "pods", "list"),
        ("", "namespaces", "list"),
        ("batch", "jobs", "list"),
        ("kueue.x-k8s.io", "localqueues", "list"),
        ("events.k8s.io", "events", "list"),  # the diagnosis: each pending pod's FailedScheduling message
        ("kueue.x-k8s.io", "workloads", "list"),  # the diagnosis: admission
        # the diagnosis: Kueue's queue positions (the visibility API) and the LocalQueue's ClusterQueue
        ("kueue.x-k8s.io", "localqueues", "get"),
        ("visibility.kueue.x-k8s.io", "localqueues/pendingworkloads", "get"),
    }, sorted(granted)
    (binding,) = plain["ClusterRoleBinding"]
    (sa,) = plain["ServiceAccount"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": sa["metadata"]["namespace"]}
    ]
    for name in (COLLECTOR, DIAGNOSIS):
        dep = named(plain["Deployment"], name)
        assert dep["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]
    # without holdings and without the diagnosis, nodes and the DRA driver's devices alone
    values = [{"collector": {"holdings": "none"}, "diagnosis": {"enabled": False}}]
    alone = kinds(product_chart.template(values, work=work / "nh"))
    (role,) = alone["ClusterRole"]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list"]},
    ]
    assert [d["metadata"]["name"] for d in alone["Deployment"]] == [COLLECTOR]


def test_the_collector_runs_non_root_read_only_with_args_its_own_parser_accepts(plain):
    from gpu_finops.cost.cli_collect import add_arguments

    dep = named(plain["Deployment"], COLLECTOR)
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert c["args"][0] == "collect"
    args = parser.parse_args(c["args"][1:])
    assert (args.holdings, args.port, args.store) == ("kube", 9464, "sqlite:/var/lib/gpu-finops/costs.sqlite")
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert {"/var/lib/gpu-finops", "/tmp"} <= mounts  # where a read-only root lets it write
    assert c["image"] == "registry.example.com/gpu-finops/collector:0.1.0"


def test_the_diagnosis_runs_the_collectors_image_non_root_with_args_its_own_parser_accepts(plain):
    from gpu_finops.diagnose.cli_diagnose import add_arguments

    collector, dep = named(plain["Deployment"], COLLECTOR), named(plain["Deployment"], DIAGNOSIS)
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    (collector_c,) = collector["spec"]["template"]["spec"]["containers"]
    assert c["image"] == collector_c["image"] and c["securityContext"] == collector_c["securityContext"]
    assert pod["securityContext"] == collector["spec"]["template"]["spec"]["securityContext"]
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert c["args"][0] == "diagnose"
    args = parser.parse_args(c["args"][1:])
    assert (args.all, args.port, args.interval) == (True, 9465, 60)
    assert args.prometheus_url == next(a for a in collector_c["args"] if a.startswith("--prometheus-url=")
                                       ).removeprefix("--prometheus-url=")  # fmt: skip
    annotations = dep["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(args.port)  # a plain Prometheus' annotated-pods job


def test_a_rates_catalog_is_mounted_and_passed(work):
    catalog = {"g6e.xlarge": {"on-demand": 1.861, "spot": 0.93}}
    docs = kinds(
        product_chart.template(
            [{"collector": {"rates": "catalog", "ratesCatalog": catalog}}], work=work / "r"
        )
    )
    (c,) = named(docs["Deployment"], COLLECTOR)["spec"]["template"]["spec"]["containers"]
    assert "--rates=catalog:/etc/gpu-finops/rates/rates.json" in c["args"]
    (cm,) = [m for m in docs["ConfigMap"] if m["metadata"]["name"].endswith("-rates")]
    assert json.loads(cm["data"]["rates.json"]) == catalog


def test_the_dcgm_csv_exports_sm_active(operator):
    (cm,) = [c for c in operator["ConfigMap"] if c["metadata"]["name"] == "dcgm-metrics"]
    fields = exported_fields(cm["data"]["gpu-finops.csv"])
    assert dcgm.SM_ACTIVE in fields and set(dcgm.COLLECTED) <= fields


def test_each_dashboard_file_becomes_a_configmap_for_the_sidecar(tmp_path, work):
    import shutil

    chart = tmp_path / "gpu-finops"
    shutil.copytree(chart_files.CHART, chart)
    board = {"title": "t", "panels": [{"type": "timeseries", "targets": [{"expr": "up"}]}]}
    (chart / "files" / "dashboards" / "Idle_Dollars.json").write_text(json.dumps(board))
    docs = kinds(product_chart.template(work=work / "d", chart=chart))
    boards = {c["metadata"]["name"]: c for c in docs["ConfigMap"] if "dashboard" in c["metadata"]["name"]}
    shipped = sorted(p.name for p in (chart_files.CHART / "files" / "dashboards").glob("*.json"))
    assert len(boards) == len(shipped) + 1, (sorted(boards), shipped)  # one ConfigMap per file, ours too
    assert all(c["metadata"]["labels"]["grafana_dashboard"] == "1" for c in boards.values())
    cm = boards["gpu-finops-dashboard-idle-dollars"]
    assert json.loads(cm["data"]["Idle_Dollars.json"]) == board
    (chart / "files" / "dashboards" / "broken.json").write_text("{not json")
    with pytest.raises(ValidationError, match="broken.json|invalid character|json"):
        product_chart.template(work=work / "d2", chart=chart)


def test_a_broken_alerts_file_fails_the_render_naming_it(tmp_path, work):
    import shutil

    chart = tmp_path / "gpu-finops"
    shutil.copytree(chart_files.CHART, chart)
    (chart / "files" / "alerts.yaml").write_text("rules: []\n")
    with pytest.raises(ValidationError, match="files/alerts.yaml: expected a top-level `groups:` list"):
        product_chart.template(work=work / "a", chart=chart)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"collector": {"imag": {}}}, "additional properties 'imag' not allowed"),
        ({"colector": {}}, "additional properties 'colector' not allowed"),
        ({"collector": {"interval": "60"}}, "interval"),
        ({"collector": {"holdings": "all"}}, "holdings"),
        ({"collector": {"store": "costs.sqlite"}}, "store"),
        ({"collector": {"rates": "catalog"}}, "ratesCatalog"),
        ({"collector": {"ratesCatalog": {"g6e.xlarge": {"on-demand": -1}}}}, "on-demand"),
        ({"rules": {"mode": "operator"}}, "mode"),
        ({"serviceMonitor": {"interval": "1 minute"}}, "interval"),
        ({"dashboards": {"labels": {"grafana_dashboard": 1}}}, "grafana_dashboard"),
    ],
)
def test_the_schema_refuses_a_bad_value_naming_it(values, message, work):
    with pytest.raises(ValidationError) as err:
        product_chart.template([values], work=work / "bad")
    assert "values don't meet the specifications of the schema" in str(err.value)
    assert message in str(err.value)


def test_the_two_required_values_are_named_when_missing(work):
    with pytest.raises(ValidationError, match="collector.image.repository"):
        product_chart.template(work=work / "req", lint_values=False)
    with pytest.raises(ValidationError, match="collector.prometheusUrl"):
        product_chart.template(
            [{"collector": {"image": {"repository": "r"}}}], work=work / "req2", lint_values=False
        )
    off = product_chart.template([{"collector": {"enabled": False}}], work=work / "off", lint_values=False)
    assert COLLECTOR not in json.dumps(off) and "Deployment" not in {d["kind"] for d in off}
