"""The gpu-finops chart installed with `helm install` on a real kube-apiserver (the validation server: etcd and
kube-apiserver from the local target's binaries, on free ports), then run as the local target runs it
(local/cluster/product.py): the collector with the installed Deployment's args, authenticated as the chart's
ServiceAccount, writes a priced record for a GPU node; a real Prometheus loads the rule files of the
installed ConfigMap and evaluates every rule without an error. The full local target does the same
(tests/local/test_product_on_local.py); this one needs no fixed port."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from gpu_finops.clients.kube import Kube
from gpu_finops.facts.kube_keys import GPU_RESOURCE
from harness.waits import eventually

pytestmark = [pytest.mark.slow, pytest.mark.binaries, pytest.mark.timeout(600)]

NODE, ITYPE = "chart-gpu-0", "g6e.xlarge"
INTERVAL = 5  # seconds per record, so `collect --once` has a complete interval after the node appeared
RULES_EVALUATED = 150.0  # the ledger's group runs every 1m


def free_port() -> int:
    from local.cluster.prometheus_server import free_port as free

    return free()


def admin_kubeconfig(server, path: Path) -> Path:
    b64 = lambda p: base64.b64encode(p.read_bytes()).decode()  # noqa: E731
    crt, key = server.pki.pair("admin")
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "admin",
                "clusters": [
                    {
                        "name": "local",
                        "cluster": {
                            "server": server.url,
                            "certificate-authority-data": b64(server.pki.ca_crt),
                        },
                    }
                ],
                "users": [
                    {
                        "name": "admin",
                        "user": {"client-certificate-data": b64(crt), "client-key-data": b64(key)},
                    }
                ],
                "contexts": [{"name": "admin", "context": {"cluster": "local", "user": "admin"}}],
            }
        )
    )
    return path


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    from local.charts.validation_server import ValidationServer

    work = tmp_path_factory.mktemp("installed")
    with ValidationServer(work / "server") as server:
        kc = admin_kubeconfig(server, work / "kubeconfig")
        yield SimpleNamespace(
            run_dir=work / "run",
            kubeconfig=kc,
            kube=lambda: Kube(server.api_client()),
            config=SimpleNamespace(region="us-east-1"),
        )


def add_gpu_node(kube: Kube) -> None:
    labels = {"kubernetes.io/hostname": NODE, "node.kubernetes.io/instance-type": ITYPE}
    kube.core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": labels}})
    resources = {GPU_RESOURCE: "1", "cpu": "4", "memory": "32Gi", "pods": "110"}
    kube.core.patch_node_status(NODE, {"status": {"capacity": resources, "allocatable": resources}})


def prom_get(url: str, path: str) -> dict:
    with urllib.request.urlopen(f"{url}{path}", timeout=10) as r:
        return json.loads(r.read())["data"]


def test_installed_chart_collects_as_its_serviceaccount_and_its_rules_evaluate(target, tmp_path):
    from kubernetes.client.exceptions import ApiException

    from gpu_finops.cost.store import open_store
    from gpu_finops.dcgm.metrics_csv import exported_fields, render
    from local.cluster import product
    from local.cluster.prometheus_server import PrometheusServer
    from local.sim.gpu_sim import ClusterGpuSimulator
    from tools.chart_files import CHART

    prom_port, collector_port = free_port(), free_port()
    values = product.chart_values("us-east-1")
    values["collector"].update(
        prometheusUrl=f"http://127.0.0.1:{prom_port}", port=collector_port, interval=INTERVAL
    )
    product.install_chart(target, values, wait=False)  # no controller-manager here to mark it ready
    kube = target.kube()
    add_gpu_node(kube)
    sim = ClusterGpuSimulator(kube, exported_fields(render()), period=1.0)
    sim_port = sim.start()
    try:
        rule_files = product.write_rule_files(target)
        with PrometheusServer(
            tmp_path / "prom",
            [f"127.0.0.1:{sim_port}"],
            scrape_interval="1s",
            port=prom_port,
            rule_files=rule_files,
        ) as prom:
            eventually(
                lambda: prom_get(prom.url, "/api/v1/query?query=DCGM_FI_PROF_SM_ACTIVE")["result"],
                lambda r: bool(r),
                timeout=60,
                what="the simulated exporter's SM_ACTIVE in Prometheus",
            )
            time.sleep(2 * INTERVAL)  # a whole interval of series after the node appeared
            argv = product.installed_collector_argv(target, pod_resources_url="http://127.0.0.1:9")
            argv = [a for a in argv if not a.startswith("--pod-resources-url")] + ["--once"]
            run = subprocess.run(
                [sys.executable, "-m", "gpu_finops.cli", *argv], capture_output=True, text=True, timeout=120
            )
            assert run.returncode == 0, run.stdout + run.stderr
            records = [
                r for r in open_store(f"sqlite:{product.store_path(target)}", read_only=True).records()
            ]
            assert [r.ResourceName for r in records] == [NODE]
            assert records[0].EffectiveCost > 0 and records[0].x_Status == "ok", records[0]

            groups = eventually(
                lambda: prom_get(prom.url, "/api/v1/rules")["groups"],
                lambda gs: (
                    gs and all(r.get("lastEvaluation", "").startswith("20") for g in gs for r in g["rules"])
                ),
                timeout=RULES_EVALUATED,
                interval=5,
                what="every rule of the installed ConfigMap evaluated once",
            )
            wanted = [g["name"] for f in ("recording-rules.yaml", "alerts.yaml")
                      for g in yaml.safe_load((CHART / "files" / f).read_text())["groups"]]  # fmt: skip
            assert sorted(g["name"] for g in groups) == sorted(wanted)
            failing = {
                r["name"]: r.get("lastError") for g in groups for r in g["rules"] if r["health"] != "ok"
            }
            assert failing == {}, failing
    finally:
        sim.stop()
    as_collector = Kube.from_kubeconfig(str(target.run_dir / "collector.kubeconfig"))
    with pytest.raises(ApiException) as denied:
        as_collector.core.list_secret_for_all_namespaces()
    assert denied.value.status == 403
