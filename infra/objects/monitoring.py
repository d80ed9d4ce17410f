"""The monitoring namespace's releases: dcgm-exporter, Prometheus and the gpu-finops chart
(charts/gpu-finops: the collector, its ServiceAccount and ClusterRole, the ledger's recording rules and the
alert rules as a ConfigMap this Prometheus mounts, the dashboards, and the exporter's metrics CSV). The
stack installs that same chart (infra/addons.py), so what a user installs and what we run are one source."""

from __future__ import annotations

from typing import Any

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import LABEL_NODEPOOL
from gpu_finops.facts.names import COLLECTOR, MONITORING_NS, PROJECT
from gpu_finops.ledger.conventions import Conventions
from infra.objects.gpu_taints import GPU_POOL_TOLERATIONS
from infra.objects.karpenter import nodepools

# The chart's release: its fullname is the release name, so its objects are <release>-rules, ...-collector.
CHART_RELEASE = PROJECT
RULES_CONFIGMAP = f"{CHART_RELEASE}-rules"  # the chart's rules ConfigMap (rules.mode configMap)
RULES_MOUNT = "/etc/gpu-finops-rules"  # where Prometheus mounts it: not under /etc/config (read-only)
# The Prometheus chart's own default rule_files (serverFiles."prometheus.yml"), kept before ours.
PROMETHEUS_CHART_RULE_FILES = ("/etc/config/recording_rules.yml", "/etc/config/alerting_rules.yml")
DCGM_METRICS_CONFIGMAP = "dcgm-metrics"  # the chart's dcgmMetricsCsv.name; mounted by dcgm-exporter


def dcgm_exporter_values(c: Config) -> dict[str, Any]:
    # on the DRA pool's nodes the kubelet reports a card as a claim's device: `--kubernetes-enable-dra` maps it
    # to its pod and adds the dra_* labels (dcgm-exporter 4.3.0+)
    dra = ["--kubernetes-enable-dra"] if c.dra_cards else []
    return {
        "image": {"tag": c.versions.dcgm_exporter_image},
        "arguments": ["-f", "/etc/dcgm-exporter/gpu-finops/gpu-finops.csv", *dra],
        "extraConfigMapVolumes": [{"name": "dcgm-metrics", "configMap": {"name": DCGM_METRICS_CONFIGMAP}}],
        "extraVolumeMounts": [
            {"name": "dcgm-metrics", "mountPath": "/etc/dcgm-exporter/gpu-finops", "readOnly": True}
        ],
        "serviceMonitor": {"enabled": False},
        # Time-sliced cards (the shared pool): without KUBERNETES_VIRTUAL_GPUS, dcgm-exporter 4.8.3 maps each
        # device ID `GPU-<uuid>::<replica>` to one pod in a map, so a card's series name whichever sharer it
        # met last (`toDeviceToPod`, internal/pkg/transformation/kubernetes.go). With it, every sharer gets
        # its own series with a `vgpu` label (`toDeviceToSharingPods`), and GPU_UTIL and FB_USED gain a
        # device-level series beside per-pod ones holding each pod's own processes' use; those per-pod
        # values need the pod's UID (the pod informer: enablePodUID) and the host's /proc (hostPID) to
        # join NVML's process IDs to pods, or every pod reads 0. docs/infra.md, "Time-sliced attribution".
        "extraEnv": [{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}],
        "kubernetes": {"enablePodUID": True},
        "hostPID": True,
        # no prometheus.io/scrape annotation: Prometheus scrapes the exporter with its own job
        # (`dcgm_scrape_job`), not the chart's annotated-pods job
        "tolerations": [dict(t) for t in GPU_POOL_TOLERATIONS],  # on every GPU pool's nodes
        # every node of every GPU pool the configuration has (whole-card, shared, MIG, MPS, DRA)
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": LABEL_NODEPOOL,
                                    "operator": "In",
                                    "values": [p["metadata"]["name"] for p in nodepools(c)],
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
        # the fleet ledger's recording rules and the alert rules: the gpu-finops chart's rules ConfigMap,
        # mounted beside the chart's config and listed after the chart's own rule files
        "server": {
            "global": {"scrape_interval": "15s"},
            "retention": "7d",
            "persistentVolume": {"enabled": False},
            "extraConfigmapMounts": [
                {
                    "name": RULES_CONFIGMAP,
                    "mountPath": RULES_MOUNT,
                    "subPath": "",
                    "configMap": RULES_CONFIGMAP,
                    "readOnly": True,
                }
            ],
        },
        "serverFiles": {
            "prometheus.yml": {"rule_files": [*PROMETHEUS_CHART_RULE_FILES, f"{RULES_MOUNT}/*.yaml"]}
        },
        # a job added to the chart's default ones (the chart's scrapeConfigs map takes new keys)
        "scrapeConfigs": {DCGM_SCRAPE_JOB: dcgm_scrape_job()},
    }


def gpu_finops_chart_values(c: Config) -> dict[str, Any]:
    """The gpu-finops chart's values as the stack installs it (the image and the cost table are `set`
    entries: known only at apply). Every key is checked by the chart's values.schema.json at render."""
    return {
        "fullnameOverride": CHART_RELEASE,
        "collector": {
            "prometheusUrl": f"http://prometheus-server.{c.monitoring_namespace}.svc",
            "rates": "aws",
            "region": c.region,
            "interval": c.collector_interval_seconds,
            # who held each node's GPUs, recorded every cycle (pods from the API; a real kubelet's
            # pod-resources is a node-local socket: no device ids)
            "holdings": "kube",
            "port": c.collector_port,
        },
        # EKS Pod Identity binds the collector's role to this name (infra/cluster_data.py)
        "serviceAccount": {"create": True, "name": COLLECTOR},
        # the stack's Prometheus is the plain chart: the rules as a ConfigMap it mounts (prometheus_values)
        "rules": {"enabled": True, "mode": "configMap"},
        "dashboards": {"enabled": True},
        "dcgmMetricsCsv": {"enabled": True, "name": DCGM_METRICS_CONFIGMAP},
    }


def gpu_finops_chart_sets(repository: str, tag: str, table: str) -> list[dict[str, str]]:
    """What only apply knows: the collector's image repository (ours, in ECR) and its DynamoDB table."""
    return [
        {"name": "collector.image.repository", "value": repository},
        {"name": "collector.image.tag", "value": tag},
        {"name": "collector.store", "value": f"dynamodb:{table}"},
    ]
