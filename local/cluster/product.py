"""The product on the local target, as a user runs it in a cluster it did not build (docs/install.md):

- the gpu-finops chart installed with `helm install` (its ServiceAccount, least-privilege ClusterRole, rules
  ConfigMap, dashboards, the exporter's CSV), rules as a ConfigMap since no prometheus-operator runs here;
- a Prometheus scraping the simulated exporter (local/sim/serve.py) and kube-state-metrics, loading the rule
  files that installed ConfigMap holds (read back from the API server, not from the checkout);
- the collector and the diagnosis exporter with the chart's own args, as the chart's ServiceAccount (a
  TokenRequest token, so the ClusterRole is all they may do). kwok runs no containers, so the chart's
  Deployments are installed with replicas 0 and both run as supervised processes instead.

Each is a supervised process like the rest of the target; `local down` stops them, and the release goes
with etcd's data."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from gpu_finops.facts.catalog import GPU_TYPES, ON_DEMAND, SPOT
from gpu_finops.facts.names import COLLECTOR, MONITORING_NS
from local.charts import product_chart
from local.cluster import kube_state_metrics
from local.cluster.processes import PORTS, LocalError

PROMETHEUS_PORT, GPU_SIM_PORT, COLLECTOR_PORT = PORTS["prometheus"], PORTS["gpu-sim"], PORTS["collector"]
DIAGNOSIS_PORT = PORTS["diagnosis"]
DIAGNOSIS = f"{product_chart.RELEASE}-diagnosis"  # the chart's diagnosis Deployment
RULES_CONFIGMAP = f"{product_chart.RELEASE}-rules"
SCRAPE_INTERVAL = "5s"
COLLECTOR_INTERVAL = 60  # seconds per record, the chart's default
# seconds between diagnoses: a pending pod shows on the dashboard within a scrape or two
DIAGNOSIS_INTERVAL = 15
TOKEN_SECONDS = 24 * 3600  # the collector's ServiceAccount token: longer than any local session


def prometheus_url() -> str:
    return f"http://127.0.0.1:{PROMETHEUS_PORT}"


def rates_catalog() -> dict[str, dict[str, float]]:
    """The local instance types' prices (gpu_finops/facts/catalog.py, what Karpenter's kwok provider offers)."""
    return {name: {ON_DEMAND: od, SPOT: spot} for name, (_c, _m, _g, od, spot) in GPU_TYPES.items()}


def chart_values(region: str) -> dict[str, Any]:
    return {
        "collector": {
            "replicas": 0,  # kwok runs no containers: the collector runs as a process (start_collector)
            "image": {"repository": "local.invalid/gpu-finops/collector"},
            "prometheusUrl": prometheus_url(),
            "rates": "catalog",
            "ratesCatalog": rates_catalog(),
            "region": region,
            "interval": COLLECTOR_INTERVAL,
            "holdings": "kube",
            "port": COLLECTOR_PORT,
        },
        "diagnosis": {"replicas": 0, "port": DIAGNOSIS_PORT, "interval": DIAGNOSIS_INTERVAL},
        "rules": {"mode": "configMap"},
        "dcgmMetricsCsv": {"enabled": True},
    }


def install_chart(cluster: Any, values: dict[str, Any] | None = None, *, wait: bool = True) -> None:
    """`helm upgrade --install` of the chart on the local API server (idempotent across `local up`s).
    `wait`: until its objects are ready (needs the controller-manager: a bare API server never marks the
    Deployment observed)."""
    work = cluster.run_dir / "helm"
    args = ["upgrade", "--install", product_chart.RELEASE, str(product_chart.CHART)]
    args += ["--namespace", MONITORING_NS, "--create-namespace", "--timeout", "2m"]
    args += ["--wait"] if wait else []
    args += product_chart.values_args([values or chart_values(cluster.config.region)], work)
    out = product_chart.helm(args, work, kubeconfig=cluster.kubeconfig)
    if out.returncode != 0:
        raise LocalError(f"helm install of the gpu-finops chart failed: {out.stderr.strip()[-2000:]}")


def write_rule_files(cluster: Any) -> list[Path]:
    """The installed rules ConfigMap's files, written where Prometheus reads them."""
    cm = cluster.kube().core.read_namespaced_config_map(RULES_CONFIGMAP, MONITORING_NS)
    folder = cluster.run_dir / "prometheus" / "rules"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    paths = []
    for name, text in sorted((cm.data or {}).items()):
        path = folder / name
        path.write_text(text)
        paths.append(path)
    if not paths:
        raise LocalError(f"ConfigMap {MONITORING_NS}/{RULES_CONFIGMAP} holds no rule file")
    return paths


def prometheus_config(rule_files: list[Path]) -> dict[str, Any]:
    def job(name: str, target: str, **extra: Any) -> dict[str, Any]:
        return {"job_name": name, "static_configs": [{"targets": [target]}], **extra}

    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [
            # the exporter's labels kept as exposed: a holder's pod/namespace are the sim's, as on AWS
            job("dcgm-exporter", f"127.0.0.1:{GPU_SIM_PORT}", honor_labels=True),
            job("kube-state-metrics", kube_state_metrics.url().removeprefix("http://"), honor_labels=True),
            job(COLLECTOR, f"127.0.0.1:{COLLECTOR_PORT}"),
            job(DIAGNOSIS, f"127.0.0.1:{DIAGNOSIS_PORT}"),
        ],
    }


def start_gpu_sim(cluster: Any, pod_resources_url: str) -> None:
    argv = [sys.executable, "-m", "local.sim.serve", f"--kubeconfig={cluster.kubeconfig}"]
    argv += [f"--port={GPU_SIM_PORT}", f"--pod-resources-url={pod_resources_url}"]
    cluster.sup.start("gpu-sim", argv, cwd=product_chart.CHART.parents[1])
    cluster._wait("gpu-sim", f"http://127.0.0.1:{GPU_SIM_PORT}/metrics", ok="", tls=False)


def start_prometheus(cluster: Any) -> None:
    binary = shutil.which("prometheus")
    if binary is None:
        raise LocalError("prometheus not found: `make setup` installs Debian's prometheus package")
    folder = cluster.run_dir / "prometheus"
    if cluster.sup.exited("prometheus") is not None:  # not running: a fresh cluster gets a fresh TSDB
        shutil.rmtree(folder / "data", ignore_errors=True)
    config = folder / "prometheus.yml"
    config.write_text(yaml.safe_dump(prometheus_config(write_rule_files(cluster)), sort_keys=False))
    argv = [binary, f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}"]
    argv += [f"--web.listen-address=127.0.0.1:{PROMETHEUS_PORT}", "--storage.tsdb.retention.time=1d"]
    cluster.sup.start("prometheus", argv)
    cluster._wait("prometheus", f"{prometheus_url()}/-/ready", ok="Prometheus Server is Ready", tls=False)


def service_account_kubeconfig(cluster: Any) -> Path:
    """A kubeconfig that authenticates as the chart's ServiceAccount: the collector gets its ClusterRole."""
    from kubernetes import client

    kube = cluster.kube()
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(
        audiences=[], expiration_seconds=TOKEN_SECONDS))  # fmt: skip
    token = kube.core.create_namespaced_service_account_token(COLLECTOR, MONITORING_NS, request).status.token
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    admin["users"] = [{"name": COLLECTOR, "user": {"token": token}}]
    admin["contexts"] = [{"name": "collector", "context": {"cluster": "local", "user": COLLECTOR}}]
    admin["current-context"] = "collector"
    path = cluster.run_dir / "collector.kubeconfig"
    path.write_text(yaml.safe_dump(admin))
    path.chmod(0o600)
    return path


def collector_argv(chart_args: list[str], store: Path, kubeconfig: Path, pod_resources_url: str) -> list[str]:
    """The chart's Deployment args with what differs for a process: the store's path, the kubeconfig and
    the kubelet's pod-resources endpoint (device ids)."""
    args = [a for a in chart_args if not a.startswith("--store=")]
    args += [
        f"--store=sqlite:{store}",
        f"--kubeconfig={kubeconfig}",
        f"--pod-resources-url={pod_resources_url}",
    ]
    return args


def installed_collector_argv(cluster: Any, pod_resources_url: str) -> list[str]:
    """`gpu-finops collect`'s arguments as the installed chart's Deployment gives them, for a process."""
    from kubernetes import client

    apps = client.AppsV1Api(cluster.kube().api_client)
    dep = apps.read_namespaced_deployment(COLLECTOR, MONITORING_NS)
    (container,) = dep.spec.template.spec.containers
    folder = cluster.run_dir / "collector"
    folder.mkdir(parents=True, exist_ok=True)
    rates = folder / "rates.json"
    rates.write_text(json.dumps(rates_catalog()))  # what the chart's rates ConfigMap mounts
    args = [a.replace("/etc/gpu-finops/rates/rates.json", str(rates)) for a in container.args]
    return collector_argv(args, store_path(cluster), service_account_kubeconfig(cluster), pod_resources_url)


def start_collector(cluster: Any, pod_resources_url: str) -> None:
    if cluster.sup.exited("collector") is not None:  # not running: no records of an earlier cluster
        shutil.rmtree(cluster.run_dir / "collector", ignore_errors=True)
    argv = installed_collector_argv(cluster, pod_resources_url)
    cluster.sup.start("collector", [sys.executable, "-m", "gpu_finops.cli", *argv])
    cluster._wait("collector", f"http://127.0.0.1:{COLLECTOR_PORT}/metrics", ok="", tls=False)


def installed_diagnosis_argv(cluster: Any) -> list[str]:
    """`gpu-finops diagnose`'s arguments as the installed chart's diagnosis Deployment gives them, with the
    ServiceAccount's kubeconfig (the chart's ClusterRole is all it may read)."""
    from kubernetes import client

    apps = client.AppsV1Api(cluster.kube().api_client)
    dep = apps.read_namespaced_deployment(DIAGNOSIS, MONITORING_NS)
    (container,) = dep.spec.template.spec.containers
    return [*container.args, f"--kubeconfig={service_account_kubeconfig(cluster)}"]


def start_diagnosis(cluster: Any) -> None:
    argv = installed_diagnosis_argv(cluster)
    cluster.sup.start("diagnosis", [sys.executable, "-m", "gpu_finops.cli", *argv])
    cluster._wait("diagnosis", f"http://127.0.0.1:{DIAGNOSIS_PORT}/metrics", ok="", tls=False)


def exports(cluster: Any) -> str:
    """Shell exports that point the product's commands (gpus, ledger, diagnose, cost, collect) at this
    target: `eval "$(gpu-finops local env)"`."""
    url = prometheus_url()
    env = {
        "KUBECONFIG": cluster.kubeconfig,
        "PROMETHEUS_URL": url,  # what collect, ledger, diagnose and gpus default to
        "GPU_FINOPS_PROMETHEUS_URL": url,  # what the acts read
        "GPU_FINOPS_STORE": f"sqlite:{store_path(cluster)}",  # what cost and reap default to
    }
    return "\n".join(f"export {k}={v}" for k, v in env.items())


def store_path(cluster: Any) -> Path:
    return cluster.run_dir / "collector" / "costs.sqlite"


def start(cluster: Any, pod_resources_url: str) -> None:
    """Install the chart, then the exporter's stand-in, Prometheus, the collector and the diagnosis (in that
    order: each reads what the one before it serves)."""
    install_chart(cluster)
    start_gpu_sim(cluster, pod_resources_url)
    start_prometheus(cluster)
    start_collector(cluster, pod_resources_url)
    start_diagnosis(cluster)
