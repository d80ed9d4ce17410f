"""The monitoring namespace's objects: dcgm-exporter (our metrics CSV in a ConfigMap), Prometheus (with
the ledger's recording rules) and the collector, which records the GPU holdings too (moved from
infra/objects.py)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

from facts.config import Config
from facts.kube_keys import GPU_RESOURCE as GPU
from facts.kube_keys import KUEUE_GROUP, LABEL_NODEPOOL
from facts.names import COLLECTOR, MONITORING_NS
from infra.metrics_csv import PROJECT_METRICS, MetricRow
from infra.metrics_csv import render as render_metrics_csv
from ledger.conventions import Conventions


def dcgm_metrics_configmap(
    namespace: str = MONITORING_NS, metrics: tuple[MetricRow, ...] = PROJECT_METRICS
) -> dict[str, Any]:
    """The exporter's CSV, generated and validated: a bad row fails synthesis naming the row."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "dcgm-metrics", "namespace": namespace},
        "data": {"gpu-finops.csv": render_metrics_csv(metrics)},
    }


def dcgm_exporter_values(c: Config) -> dict[str, Any]:
    return {
        "image": {"tag": c.versions.dcgm_exporter_image},
        "arguments": ["-f", "/etc/dcgm-exporter/gpu-finops/gpu-finops.csv"],
        "extraConfigMapVolumes": [{"name": "dcgm-metrics", "configMap": {"name": "dcgm-metrics"}}],
        "extraVolumeMounts": [
            {"name": "dcgm-metrics", "mountPath": "/etc/dcgm-exporter/gpu-finops", "readOnly": True}
        ],
        "serviceMonitor": {"enabled": False},
        # no prometheus.io/scrape annotation: Prometheus scrapes the exporter with its own job
        # (`dcgm_scrape_job`), not the chart's annotated-pods job
        "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
        # every GPU node, whole-card or shared
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": LABEL_NODEPOOL,
                                    "operator": "In",
                                    "values": [c.nodepool_name, c.shared_nodepool_name],
                                }
                            ]
                        }
                    ]
                }
            }
        },
    }


# The Prometheus chart's job name for dcgm-exporter, and the exporter chart's pod label and port name.
DCGM_SCRAPE_JOB = "dcgm-exporter"
DCGM_APP_LABEL = "dcgm-exporter"  # app.kubernetes.io/name on the exporter's pods (the chart's name)
DCGM_PORT_NAME = "metrics"  # the exporter container's port (9400)


def dcgm_scrape_job(namespace: str = MONITORING_NS) -> dict[str, Any]:
    """Prometheus' job for dcgm-exporter. Not the chart's annotated-pods job (`kubernetes-pods`): that one
    has `honor_labels: true` and sets the target's own `pod` and `namespace`, and the exporter puts pod
    labels only on the series of a GPU a pod holds, so an unheld GPU's series would take the exporter
    pod's name and read as held by it. Here the exporter's labels are kept as exposed (`honor_labels`:
    a holder's `pod`/`namespace`/`container` stay those names) and the target's identity goes to labels
    of its own, `exporter_namespace`/`exporter_pod`/`exporter_node`, which nothing reads as a holder."""
    return {
        "honor_labels": True,
        "kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": [namespace]}}],
        "relabel_configs": [
            {
                "source_labels": ["__meta_kubernetes_pod_label_app_kubernetes_io_name"],
                "action": "keep",
                "regex": DCGM_APP_LABEL,
            },
            {
                "source_labels": ["__meta_kubernetes_pod_container_port_name"],
                "action": "keep",
                "regex": DCGM_PORT_NAME,
            },
            {
                "source_labels": ["__meta_kubernetes_pod_phase"],
                "action": "drop",
                "regex": "Pending|Succeeded|Failed|Unknown",
            },
            {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "exporter_namespace"},
            {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "exporter_pod"},
            {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "exporter_node"},
        ],
    }


def prometheus_values() -> dict[str, Any]:
    return {
        "alertmanager": {"enabled": False},
        "prometheus-pushgateway": {"enabled": False},
        "prometheus-node-exporter": {"enabled": False},
        # the ledger's node and pod input: the node and pod labels its rules read, allowlisted
        "kube-state-metrics": {
            "enabled": True,
            "metricLabelsAllowlist": list(Conventions().ksm_labels_allowlist),
        },
        "server": {
            "global": {"scrape_interval": "15s"},
            "retention": "7d",
            "persistentVolume": {"enabled": False},
        },
        # the fleet ledger's recording rules (docs/ledger.md); they read kube-state-metrics series
        "serverFiles": {"recording_rules.yml": ledger_rules()},
        # a job added to the chart's default ones (the chart's scrapeConfigs map takes new keys)
        "scrapeConfigs": {DCGM_SCRAPE_JOB: dcgm_scrape_job()},
    }


def ledger_rules() -> dict[str, Any]:
    """The committed ledger rules file, parsed (data shipped with the finops package, not code)."""
    return yaml.safe_load(resources.files("ledger").joinpath("rules.yaml").read_text())


READ = ["get", "list", "watch"]
# What the collector reads, cluster-wide and read-only: GPU nodes (to charge them), and for the holdings it
# records every cycle (--holdings kube, finops/gpu_holdings.py) the pods holding GPUs, their namespaces'
# tenant label, the Jobs that carry their queue label, and the Kueue LocalQueues that name a ClusterQueue.
COLLECTOR_RULES = [
    {"apiGroups": [""], "resources": ["nodes", "pods", "namespaces"], "verbs": READ},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": READ},
    {"apiGroups": [KUEUE_GROUP], "resources": ["localqueues"], "verbs": READ},
]


def collector_objects(
    c: Config, image: str, role_table: str, namespace: str = MONITORING_NS
) -> list[dict[str, Any]]:
    labels = {"app.kubernetes.io/name": COLLECTOR}
    port = c.collector_port
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": COLLECTOR, "namespace": namespace},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": COLLECTOR},
            "rules": COLLECTOR_RULES,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": COLLECTOR},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": COLLECTOR,
            },
            "subjects": [{"kind": "ServiceAccount", "name": COLLECTOR, "namespace": namespace}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": COLLECTOR, "namespace": namespace, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {
                        "labels": labels,
                        "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": str(port)},
                    },
                    "spec": {
                        "serviceAccountName": COLLECTOR,
                        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001},
                        "containers": [
                            {
                                "name": "collector",
                                "image": image,
                                "args": [
                                    "collect",
                                    "--prometheus-url",
                                    f"http://prometheus-server.{c.monitoring_namespace}.svc",
                                    "--store",
                                    f"dynamodb:{role_table}",
                                    "--rates",
                                    "aws",
                                    "--region",
                                    c.region,
                                    "--interval",
                                    str(c.collector_interval_seconds),
                                    # who held each node's GPUs, recorded every cycle (pods from the API;
                                    # a real kubelet's pod-resources is a node-local socket: no device ids)
                                    "--holdings",
                                    "kube",
                                    "--port",
                                    str(port),
                                ],
                                "ports": [{"containerPort": port, "name": "metrics"}],
                                "livenessProbe": {"httpGet": {"path": "/metrics", "port": port}},
                                "readinessProbe": {"httpGet": {"path": "/healthz", "port": port}},
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "256Mi"},
                                    "limits": {"memory": "512Mi"},
                                },
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]},
                                },
                            }
                        ],
                    },
                },
            },
        },
    ]
