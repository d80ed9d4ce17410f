"""Who holds a GPU, as Prometheus stores dcgm-exporter's series: the exporter puts `pod`/`namespace` only
on a held GPU's series, so the scrape job must not fill them in with the exporter pod's own. A real
Prometheus scrapes the simulated exporter twice: once as the Prometheus chart's annotated-pods job does
(`honor_labels: true`, the target's pod and namespace as `pod`/`namespace`: the near miss, where the
unheld GPU reads as held by the exporter), once with our job (infra/objects/monitoring.py:
`dcgm_scrape_job`), whose Kubernetes service-discovery labels are given as static target labels."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_finops.clients.promql import PrometheusClient
from gpu_finops.dcgm.metrics_csv import PROJECT_METRICS
from gpu_finops.diagnose.prom_observer import read_gpu_stats
from gpu_finops.facts.config import Config
from gpu_finops.facts.names import MONITORING_NS
from harness.waits import eventually
from infra.objects.monitoring import DCGM_APP_LABEL, DCGM_PORT_NAME, dcgm_exporter_values, dcgm_scrape_job
from local.cluster.prometheus_server import PrometheusServer
from local.sim.dcgm_sim import DcgmSimulator, SimGpu
from local.sim.profiles import profile_values

pytestmark = pytest.mark.skipif(
    not shutil.which("prometheus"), reason="prometheus binary not installed (make setup)"
)

EXPORTER_POD = "dcgm-exporter-x7k2p"


def discovered(target: str, **overrides: str) -> dict[str, Any]:
    """A static target carrying the labels Kubernetes pod discovery gives the exporter's pod."""
    labels = {
        "__meta_kubernetes_namespace": MONITORING_NS,
        "__meta_kubernetes_pod_name": EXPORTER_POD,
        "__meta_kubernetes_pod_node_name": "n-scrape",
        "__meta_kubernetes_pod_phase": "Running",
        "__meta_kubernetes_pod_label_app_kubernetes_io_name": DCGM_APP_LABEL,
        "__meta_kubernetes_pod_container_port_name": DCGM_PORT_NAME,
        **overrides,
    }
    return {"targets": [target], "labels": labels}


def our_job(target: str) -> dict[str, Any]:
    job = dcgm_scrape_job()
    static = [
        discovered(target),
        # near misses the job must drop: another app's pod, the exporter's other port, a pod not Running
        discovered(
            target,
            __meta_kubernetes_pod_label_app_kubernetes_io_name="not-dcgm",
            __meta_kubernetes_pod_name="other",
        ),
        discovered(
            target, __meta_kubernetes_pod_container_port_name="debug", __meta_kubernetes_pod_name="p2"
        ),
        discovered(target, __meta_kubernetes_pod_phase="Pending", __meta_kubernetes_pod_name="p3"),
    ]
    return {
        "job_name": "dcgm-exporter",
        "honor_labels": job["honor_labels"],
        "static_configs": static,
        "relabel_configs": job["relabel_configs"],
    }


def chart_like_job(target: str) -> dict[str, Any]:
    """What the Prometheus chart's `kubernetes-pods` job does that matters here (written from its
    values.yaml at 29.27.0, not copied): honor_labels, and the target's pod and namespace as labels."""
    return {
        "job_name": "kubernetes-pods",
        "honor_labels": True,
        "static_configs": [discovered(target)],
        "relabel_configs": [
            {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
            {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        ],
    }


@pytest.fixture(scope="module")
def exporter() -> Iterator[str]:
    sim = DcgmSimulator(r.field for r in PROJECT_METRICS)
    sim.set_gpus(
        [
            SimGpu(
                "n-scrape",
                0,
                "GPU-held",
                values=profile_values("resident-model"),
                pod=("team-a", "llm", "main"),
            ),
            SimGpu("n-scrape", 1, "GPU-unheld", values=profile_values("unheld")),
        ]
    )
    server = sim.serve()
    yield f"127.0.0.1:{server.server_port}"
    server.shutdown()


def holders_seen(workdir: Path, job: dict[str, Any]) -> dict[str, str | None]:
    with PrometheusServer(workdir, [], scrape_interval="1s", scrape_configs=[job]) as server:
        prom = PrometheusClient(server.url)
        rows = eventually(
            lambda: read_gpu_stats(prom, 30),
            lambda rs: {r.uuid for r in rs} == {"GPU-held", "GPU-unheld"},
            timeout=60,
            interval=1,
            what=f"both GPUs through job {job['job_name']}",
        )
        series = prom.query('DCGM_FI_DEV_POWER_USAGE{UUID="GPU-unheld"}')
    assert len(series) == 1, f"one target should be scraped, got {[s.labels for s in series]}"
    return {r.uuid: r.holder for r in rows} | {"labels": str(sorted(series[0].labels.items()))}


def test_our_job_keeps_the_exporters_holder_and_leaves_an_unheld_gpu_unheld(exporter, tmp_path):
    seen = holders_seen(tmp_path, our_job(exporter))
    assert seen["GPU-held"] == "team-a/llm"
    assert seen["GPU-unheld"] is None, seen
    # the scrape target's identity is kept, under names nothing reads as a holder
    assert f"('exporter_pod', '{EXPORTER_POD}')" in seen["labels"]
    assert f"('exporter_namespace', '{MONITORING_NS}')" in seen["labels"]
    assert "('exporter_node', 'n-scrape')" in seen["labels"]


def test_the_charts_annotated_pods_job_would_name_the_exporter_as_the_holder(exporter, tmp_path):
    """The near miss our job exists for: the held GPU still reads right, the unheld one does not."""
    seen = holders_seen(tmp_path, chart_like_job(exporter))
    assert seen["GPU-held"] == "team-a/llm"
    assert seen["GPU-unheld"] == f"{MONITORING_NS}/{EXPORTER_POD}"


def test_the_exporter_is_not_annotated_for_the_charts_job_and_prometheus_has_ours():
    from infra.objects.monitoring import prometheus_values

    assert "podAnnotations" not in dcgm_exporter_values(Config())
    jobs = prometheus_values()["scrapeConfigs"]
    assert jobs == {"dcgm-exporter": dcgm_scrape_job()}
    job = jobs["dcgm-exporter"]
    assert job["kubernetes_sd_configs"] == [{"role": "pod", "namespaces": {"names": [MONITORING_NS]}}]
    written = {r.get("target_label") for r in job["relabel_configs"]}
    assert not written & {"pod", "namespace", "container", "exported_pod", "exported_namespace"}
