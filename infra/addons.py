"""Stack 3, addons: Helm releases on the cluster, with providers configured from the cluster stack's
outputs. Nothing here needs the Kubernetes API at plan time: custom resources (NodePool, EC2NodeClass,
Kueue queues, priority classes) ship in a local Helm chart that synthesis writes next to the stacks."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from cdktn import Fn, TerraformStack
from cdktn_provider_helm.provider import HelmProvider
from cdktn_provider_helm.release import Release
from cdktn_provider_kubernetes.namespace_v1 import NamespaceV1, NamespaceV1Metadata
from cdktn_provider_kubernetes.provider import KubernetesProvider
from constructs import Construct

from gpu_finops.dcgm.metrics_csv import PROJECT_METRICS, MetricRow
from gpu_finops.dcgm.metrics_csv import render as render_metrics_csv
from gpu_finops.facts.config import Config
from infra.cluster import ClusterStack
from infra.jsii_structs import camel
from infra.objects.device_plugin import DRA_DRIVER_NAMESPACE, device_plugin_values, dra_driver_values
from infra.objects.karpenter import ec2nodeclass, karpenter_objects, karpenter_values
from infra.objects.kueue import kueue_objects, kueue_values
from infra.objects.monitoring import (
    CHART_RELEASE,
    dcgm_exporter_values,
    gpu_finops_chart_sets,
    gpu_finops_chart_values,
    prometheus_values,
)
from tools.chart_files import CHART

CHART_NAME = "gpu-finops-crs"
# The product's own chart (the collector, the rules, the dashboards, the exporter's CSV): what a user
# installs with `helm install`, copied next to the stacks at synthesis and installed by this stack too.
PRODUCT_CHART = CHART
CHART_REPOS = {
    "karpenter": "oci://public.ecr.aws/karpenter",
    "karpenter-crd": "oci://public.ecr.aws/karpenter",
    "kueue": "oci://registry.k8s.io/kueue/charts",  # released charts only, never a staging registry
    "nvidia-device-plugin": "https://nvidia.github.io/k8s-device-plugin",
    # kubernetes-sigs/dra-driver-nvidia-gpu docs/install.md (0.4.0+: the chart's --version is required)
    "dra-driver-nvidia-gpu": "oci://registry.k8s.io/dra-driver-nvidia/charts",
    "dcgm-exporter": "https://nvidia.github.io/dcgm-exporter/helm-charts",
    "prometheus": "https://prometheus-community.github.io/helm-charts",
}


def copy_product_chart(outdir: Path, metrics: tuple[MetricRow, ...] = PROJECT_METRICS) -> Path:
    """The gpu-finops chart, copied next to the stacks (Terraform's helm provider reads it from there);
    the exporter's CSV it carries is validated first, so a bad metrics row fails synthesis naming it."""
    render_metrics_csv(metrics)
    chart = outdir / "charts" / PRODUCT_CHART.name
    shutil.rmtree(chart, ignore_errors=True)
    shutil.copytree(PRODUCT_CHART, chart, ignore=shutil.ignore_patterns(".gitkeep"))
    if metrics != PROJECT_METRICS:
        (chart / "files" / "dcgm-metrics.csv").write_text(render_metrics_csv(metrics))
    return chart


def write_chart(c: Config, outdir: Path) -> Path:
    """Write the local chart with our custom resources (NodePools, node class, Kueue); returns its folder."""
    groups: dict[str, list[dict[str, Any]]] = {
        "karpenter.yaml": [ec2nodeclass(c, c.karpenter_node_role), *karpenter_objects(c)],
        "kueue.yaml": kueue_objects(c),
    }
    chart = outdir / "charts" / CHART_NAME
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    (chart / "Chart.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v2",
                "name": CHART_NAME,
                "version": "0.1.0",
                "type": "application",
                "description": "gpu-finops custom resources: NodePool, EC2NodeClass, Kueue queues",
            }
        )
    )
    for filename, docs in groups.items():
        (chart / "templates" / filename).write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return chart


class AddonsStack(TerraformStack):
    def __init__(
        self, scope: Construct, c: Config, cluster: ClusterStack, chart_path: str, product_chart_path: str
    ):
        super().__init__(scope, "addons")
        eks = cluster.cluster
        ca = Fn.base64decode(eks.certificate_authority.get(0).data)
        token_args = ["eks", "get-token", "--cluster-name", eks.name, "--region", c.region]
        exec_cfg = {
            "api_version": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": token_args,
        }
        HelmProvider(
            self, "helm", kubernetes={"host": eks.endpoint, "cluster_ca_certificate": ca, "exec": exec_cfg}
        )
        KubernetesProvider(
            self, "kubernetes", host=eks.endpoint, cluster_ca_certificate=ca, exec=camel([exec_cfg])
        )
        v = c.versions
        monitoring = NamespaceV1(
            self, "monitoring-ns", metadata=[NamespaceV1Metadata(name=c.monitoring_namespace)]
        )

        def release(
            rid: str, chart: str, version: str, namespace: str, values: dict[str, Any], **kw: Any
        ) -> Release:
            return Release(
                self,
                rid,
                name=rid,
                chart=chart,
                repository=CHART_REPOS.get(rid),
                version=version,
                namespace=namespace,
                values=[yaml.safe_dump(values)],
                wait=True,
                atomic=True,
                timeout=900,
                **kw,
            )

        # Karpenter's upgrade guide: the CRDs from the karpenter-crd chart (which upgrades them; Helm never
        # upgrades a chart's crds/ folder), and the main chart with its crds/ folder skipped.
        self.karpenter_crd = release("karpenter-crd", "karpenter-crd", v.karpenter_chart, "kube-system", {})
        self.karpenter = release(
            "karpenter",
            "karpenter",
            v.karpenter_chart,
            "kube-system",
            karpenter_values(c, c.interruption_queue, c.karpenter_controller_role),
            skip_crds=True,
            depends_on=[self.karpenter_crd],
            set=camel(
                [
                    {"name": "settings.interruptionQueue", "value": cluster.queue.name},
                    {"name": "settings.clusterEndpoint", "value": eks.endpoint},
                ]
            ),
        )
        self.kueue = release(
            "kueue", "kueue", v.kueue_chart, "kueue-system", kueue_values(c), create_namespace=True
        )
        self.device_plugin = release(
            "nvidia-device-plugin",
            "nvidia-device-plugin",
            v.device_plugin_chart,
            "nvidia-device-plugin",
            device_plugin_values(c),
            create_namespace=True,
        )
        # the DRA pool's cards: NVIDIA's DRA driver on its nodes only (the device plugin kept off them)
        self.dra_driver = (
            release(
                "dra-driver-nvidia-gpu",
                "dra-driver-nvidia-gpu",
                v.dra_driver_chart,
                DRA_DRIVER_NAMESPACE,
                dra_driver_values(c),
                create_namespace=True,
            )
            if c.dra_cards
            else None
        )
        # the product chart first: Prometheus mounts its rules ConfigMap, dcgm-exporter its metrics CSV
        self.gpu_finops = Release(
            self,
            CHART_RELEASE,
            name=CHART_RELEASE,
            chart=product_chart_path,
            namespace=c.monitoring_namespace,
            values=[yaml.safe_dump(gpu_finops_chart_values(c))],
            wait=True,
            atomic=True,
            timeout=600,
            set=camel(
                gpu_finops_chart_sets(cluster.ecr.repository_url, v.collector_image_tag, cluster.table.name)
            ),
            depends_on=[monitoring],
        )
        self.prometheus = release(
            "prometheus",
            "prometheus",
            v.prometheus_chart,
            c.monitoring_namespace,
            prometheus_values(),
            depends_on=[monitoring, self.gpu_finops],
        )
        self.crs = Release(
            self,
            "gpu-finops-crs",
            name=CHART_NAME,
            chart=chart_path,
            namespace=c.monitoring_namespace,
            wait=True,
            atomic=True,
            timeout=600,
            depends_on=[self.karpenter, self.kueue, monitoring],
        )
        # dcgm-exporter mounts the metrics CSV the product chart ships, so it comes after it.
        self.dcgm = release(
            "dcgm-exporter",
            "dcgm-exporter",
            v.dcgm_exporter_chart,
            c.monitoring_namespace,
            dcgm_exporter_values(c),
            depends_on=[self.gpu_finops, self.device_plugin, *([self.dra_driver] if self.dra_driver else [])],
        )
