"""Kubernetes objects the addons stack ships, built from the config: one source of truth, rendered for
AWS (a local Helm chart) and, later, for the local rehearsal target."""

from __future__ import annotations

from typing import Any

import yaml

from facts.config import Config
from facts.kube_keys import (
    ANNOTATION_CONTROLLER_ROLE,
    GPU_RESOURCE,
    KUEUE_GROUP,
    LABEL_ARCH,
    LABEL_CAPACITY_TYPE,
    LABEL_DISCOVERY,
    LABEL_INSTANCE_CPU,
    LABEL_INSTANCE_GPU_COUNT,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_POOL,
    LABEL_TENANT,
)
from facts.names import COLLECTOR, MONITORING_NS
from infra.metrics_csv import PROJECT_METRICS, MetricRow
from infra.metrics_csv import render as render_metrics_csv

KUEUE_API = f"{KUEUE_GROUP}/v1beta2"
COHORT = "gpu"
FLAVOR = "gpu-spot"
GPU = GPU_RESOURCE
PRIORITIES = {"low": 100, "high": 1000}  # WorkloadPriorityClass name -> value
GPU_TAINT = {"key": GPU, "value": "true", "effect": "NoSchedule"}


def nodepool(c: Config) -> dict[str, Any]:
    """Spot only; instance types, vCPU size and GPU count pinned so quota and hardware agree."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": c.nodepool_name},
        "spec": {
            "template": {
                "metadata": {"labels": {LABEL_POOL: "gpu"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                    "requirements": [
                        {"key": LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot"]},
                        {
                            "key": LABEL_INSTANCE_TYPE,
                            "operator": "In",
                            "values": list(c.gpu_instance_types),
                        },
                        {
                            "key": LABEL_INSTANCE_CPU,
                            "operator": "In",
                            "values": [str(c.gpu_node_vcpu)],
                        },
                        {
                            "key": LABEL_INSTANCE_GPU_COUNT,
                            "operator": "In",
                            "values": [str(c.gpus_per_node)],
                        },
                        {"key": LABEL_ARCH, "operator": "In", "values": ["amd64"]},
                    ],
                    "taints": [GPU_TAINT],
                    "expireAfter": "24h",
                },
            },
            "limits": c.nodepool_limits,
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "120s"},
        },
    }


def ec2nodeclass(c: Config, node_role: str) -> dict[str, Any]:
    discovery = {LABEL_DISCOVERY: c.cluster_name}
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "gpu"},
        "spec": {
            "role": node_role,
            # The EKS-optimized AL2023 NVIDIA AMI: Karpenter picks the accelerated variant for GPU types.
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": discovery}],
            "securityGroupSelectorTerms": [{"tags": discovery}],
            "metadataOptions": {
                "httpEndpoint": "enabled",
                "httpTokens": "required",
                "httpPutResponseHopLimit": 1,
                "httpProtocolIPv6": "disabled",
            },
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "ebs": {
                        "volumeSize": "100Gi",
                        "volumeType": "gp3",
                        "encrypted": True,
                        "deleteOnTermination": True,
                    },
                }
            ],
            "tags": c.tags,
        },
    }


def resource_flavor(c: Config) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": FLAVOR},
        "spec": {
            "nodeLabels": {LABEL_NODEPOOL: c.nodepool_name},
            "tolerations": [{"key": GPU, "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
        },
    }


def cluster_queues(c: Config) -> list[dict[str, Any]]:
    """One ClusterQueue per tenant in one cohort; no borrowing, so each tenant gets exactly its quota."""
    return [
        {
            "apiVersion": KUEUE_API,
            "kind": "ClusterQueue",
            "metadata": {"name": t.name},
            "spec": {
                "cohortName": COHORT,
                "namespaceSelector": {},
                "queueingStrategy": "BestEffortFIFO",
                "resourceGroups": [
                    {
                        "coveredResources": [GPU],
                        "flavors": [
                            {
                                "name": FLAVOR,
                                "resources": [
                                    {"name": GPU, "nominalQuota": t.gpu_quota, "borrowingLimit": 0}
                                ],
                            }
                        ],
                    }
                ],
                "preemption": {
                    "withinClusterQueue": "LowerPriority",
                    "reclaimWithinCohort": "Any",
                    "borrowWithinCohort": {"policy": "Never"},
                },
            },
        }
        for t in c.tenants
    ]


def local_queues(c: Config) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": {"name": t.name, "namespace": t.name},
            "spec": {"clusterQueue": t.name},
        }
        for t in c.tenants
    ]


def tenant_namespaces(c: Config) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": t.name, "labels": {LABEL_TENANT: t.name}},
        }
        for t in c.tenants
    ]


def priority_classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": KUEUE_API,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": f"gpu-finops {name} priority",
        }
        for name, value in PRIORITIES.items()
    ]


def kueue_objects(c: Config) -> list[dict[str, Any]]:
    return [
        *tenant_namespaces(c),
        resource_flavor(c),
        *cluster_queues(c),
        *local_queues(c),
        *priority_classes(),
    ]


def timeslicing_config(c: Config) -> str:
    return yaml.safe_dump(
        {
            "version": "v1",
            "sharing": {"timeSlicing": {"resources": [{"name": GPU, "replicas": c.timeslicing_replicas}]}},
        },
        sort_keys=False,
    )


def device_plugin_values(c: Config) -> dict[str, Any]:
    return {
        "config": {"map": {"default": timeslicing_config(c)}, "default": "default"},
        "gfd": {"enabled": True},
        "nfd": {"enabled": True},
        "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
    }


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
        "podAnnotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9400"},
        "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": {LABEL_NODEPOOL: c.nodepool_name},
    }


def prometheus_values() -> dict[str, Any]:
    return {
        "alertmanager": {"enabled": False},
        "prometheus-pushgateway": {"enabled": False},
        "prometheus-node-exporter": {"enabled": False},
        "kube-state-metrics": {"enabled": False},
        "server": {
            "global": {"scrape_interval": "15s"},
            "retention": "7d",
            "persistentVolume": {"enabled": False},
        },
    }


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
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}],
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


def karpenter_values(c: Config, queue_name: str, controller_role_arn: str) -> dict[str, Any]:
    return {
        "settings": {"clusterName": c.cluster_name, "interruptionQueue": queue_name},
        "serviceAccount": {"name": "karpenter"},
        "controller": {"resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}},
        "podAnnotations": {ANNOTATION_CONTROLLER_ROLE: controller_role_arn},
    }
