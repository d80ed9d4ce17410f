"""The product on the local target as a newcomer meets it after `make local-up`:
the gpu-finops chart installed with `helm install`, the collector running with the chart's args as the chart's
ServiceAccount and writing records, the local Prometheus loading the rule files of the chart's ConfigMap and
evaluating them, and `gpus`, `ledger ladder`, `diagnose --all` and `cost report` each answering with exit 0.

The fleet: one kwok node of a catalog GPU type (the simulated device plugin advertises its card), one pod
holding its card with the resident-model profile (held, SM_ACTIVE low)."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from gpu_finops.facts.kube_keys import GPU_RESOURCE
from gpu_finops.facts.names import COLLECTOR, MONITORING_NS
from harness.waits import eventually
from tests.local.kwok_nodes import kwok_node
from tests.local.product_cli import cli

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(900)]

NODE, NS, POD = "chart-gpu-0", "chart-live", "resident-0"
ITYPE = "g6e.xlarge"
RULES_EVALUATED = 240.0  # the ledger's group runs every 1m; two evaluations after the node is seen
FIRST_RECORD = 240.0  # the collector's 60 s grid: the interval the node was listed in, once complete


def prom_query(url: str, expr: str) -> list[dict]:
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10) as r:
        return json.loads(r.read())["data"]["result"]


def prom_rules(url: str) -> list[dict]:
    with urllib.request.urlopen(f"{url}/api/v1/rules", timeout=10) as r:
        return json.loads(r.read())["data"]["groups"]


@pytest.fixture(scope="module")
def fleet(local_cluster):
    kube = local_cluster.kube()
    node = kwok_node(NODE, ITYPE)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": POD,
            "namespace": NS,
            "annotations": {"gpu-finops.io/gpu-profile": "resident-model"},
        },
        "spec": {
            "nodeName": NODE,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": "fake", "resources": {"limits": {GPU_RESOURCE: "1"}}}],
        },
    }
    kube.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, node])
    eventually(
        lambda: (kube.core.read_node(NODE).status.allocatable or {}).get(GPU_RESOURCE),
        lambda n: n == "1",
        timeout=120,
        what=f"{NODE} advertising one {GPU_RESOURCE}",
    )
    kube.apply([pod])
    yield local_cluster
    kube.core.delete_namespace(NS)
    kube.core.delete_node(NODE)


def test_the_chart_is_installed_by_helm_with_its_rules_configmap(local_cluster):
    from local.charts import product_chart

    out = product_chart.helm(
        ["status", product_chart.RELEASE, "-n", MONITORING_NS, "-o", "json"],
        local_cluster.run_dir / "helm",
        kubeconfig=local_cluster.kubeconfig,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["info"]["status"] == "deployed"
    cm = local_cluster.kube().core.read_namespaced_config_map(f"{product_chart.RELEASE}-rules", MONITORING_NS)
    assert set(cm.data) == {"recording-rules.yaml", "alerts.yaml"}


def test_prometheus_loads_every_group_of_the_charts_rules(local_cluster):
    from local.cluster import product
    from tools.chart_files import CHART

    groups = {g["name"]: g for g in prom_rules(product.prometheus_url())}
    wanted = [g["name"] for f in ("recording-rules.yaml", "alerts.yaml")
              for g in yaml.safe_load((CHART / "files" / f).read_text())["groups"]]  # fmt: skip
    assert sorted(groups) == sorted(wanted)
    assert all(str(local_cluster.run_dir) in g["file"] for g in groups.values())


def test_the_rules_evaluate_over_the_simulated_fleet(fleet):
    from gpu_finops.ledger.rules import INSTALLED
    from local.cluster import product

    url = product.prometheus_url()
    seen = eventually(
        lambda: prom_query(url, INSTALLED),
        lambda r: bool(r) and float(r[0]["value"][1]) >= 1,
        timeout=RULES_EVALUATED,
        interval=5,
        what=f"{INSTALLED} >= 1 in the local Prometheus",
    )
    assert float(seen[0]["value"][1]) >= 1
    bad = [r["name"] for g in prom_rules(url) for r in g["rules"] if r.get("health") == "err"]
    assert bad == [], f"rules failing to evaluate: {bad}"


def test_the_collector_runs_as_the_charts_serviceaccount_and_writes_records(fleet):
    from kubernetes.client.exceptions import ApiException

    from gpu_finops.clients.kube import Kube
    from gpu_finops.cost.store import open_store
    from local.cluster import product

    store = product.store_path(fleet)
    records = eventually(
        lambda: [r for r in open_store(f"sqlite:{store}", read_only=True).records() if r.ResourceName == NODE]
        if store.exists() else [],
        lambda rs: bool(rs),
        timeout=FIRST_RECORD,
        interval=5,
        what=f"a cost record for {NODE} in {store}",
    )  # fmt: skip
    assert records[0].EffectiveCost > 0
    as_collector = Kube.from_kubeconfig(str(fleet.run_dir / "collector.kubeconfig"))
    assert as_collector.core.list_node().items  # its ClusterRole: list nodes
    with pytest.raises(ApiException) as denied:
        as_collector.core.list_secret_for_all_namespaces()
    assert denied.value.status == 403, f"{COLLECTOR} may list secrets: its ClusterRole is not least privilege"


@pytest.mark.parametrize(
    "argv",
    [
        ("gpus",),
        ("ledger", "ladder"),
        ("diagnose", "--all"),
        ("cost", "report", "--png", "{tmp}/cost.png"),
    ],
    ids=["gpus", "ledger-ladder", "diagnose-all", "cost-report"],
)
def test_each_product_command_answers_against_local_up(fleet, argv, tmp_path):
    if argv[0] == "cost":  # the store holds a record once the collector's first interval closed
        test_the_collector_runs_as_the_charts_serviceaccount_and_writes_records(fleet)
    result = cli(fleet, *(a.replace("{tmp}", str(tmp_path)) for a in argv))
    assert result.returncode == 0, (
        f"{' '.join(argv)}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    )
    assert result.stdout.strip(), f"{' '.join(argv)} printed nothing"


def test_local_env_prints_the_exports_the_commands_read(local_cluster):
    from local.cluster import product

    result = cli(local_cluster, "local", "env")
    assert result.returncode == 0, result.stderr
    assert f"export PROMETHEUS_URL={product.prometheus_url()}" in result.stdout
    assert f"export KUBECONFIG={local_cluster.kubeconfig}" in result.stdout


def test_the_charts_diagnosis_counts_a_pending_gpu_pod_under_its_cause(fleet):
    """The diagnosis exporter with the chart's args, as the chart's ServiceAccount (so its ClusterRole must
    let it read what the diagnosis reads): a pod asking for more GPUs than any node has waits for allocation."""
    from gpu_finops.facts.collector_metrics import DIAGNOSIS_HEALTHY, PENDING_GPU_PODS
    from local.cluster import product

    url = product.prometheus_url()
    idle = eventually(lambda: prom_query(url, f'{PENDING_GPU_PODS}{{namespace=""}}'), lambda r: bool(r),
                      timeout=60, interval=3, what=f"{PENDING_GPU_PODS}'s zeros in the local Prometheus")  # fmt: skip
    assert {r["metric"]["cause"] for r in idle} >= {"admission", "allocation", "placement"}
    waiting = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "waits-16", "namespace": NS},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": NODE},  # nothing Karpenter can launch
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": "fake", "resources": {"limits": {GPU_RESOURCE: "16"}}}],
        },
    }
    kube = fleet.kube()
    kube.apply([waiting])
    mine = f'{PENDING_GPU_PODS}{{namespace="{NS}"}}'
    try:
        ours = eventually(
            lambda: {r["metric"]["cause"]: float(r["value"][1]) for r in prom_query(url, mine)},
            lambda c: bool(c),
            timeout=90,
            interval=3,
            what=f"{NS}/waits-16 counted by the chart's diagnosis exporter",
        )
        assert ours == {"allocation": 1.0}, ours
        health = prom_query(url, DIAGNOSIS_HEALTHY)
        assert [float(r["value"][1]) for r in health] == [1.0], f"the diagnosis ran unhealthy: {health}"
    finally:
        kube.core.delete_namespaced_pod("waits-16", NS, grace_period_seconds=0)
