"""Kubernetes objects the addons stack ships, built from the config: one source of truth, rendered for
AWS (a local Helm chart) and, later, for the local rehearsal target."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

from facts.config import Config
from facts.kube_keys import (
    ANNOTATION_CONTROLLER_ROLE,
    GPU_RESOURCE,
    KUEUE_GROUP,
    LABEL_ARCH,
    LABEL_CAPACITY_TYPE,
    LABEL_DEVICE_PLUGIN_CONFIG,
    LABEL_DISCOVERY,
    LABEL_INSTANCE_CPU,
    LABEL_INSTANCE_GPU_COUNT,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_POOL,
    LABEL_TENANT,
    SHARED_GPU_RESOURCE,
)
from facts.names import COLLECTOR, MONITORING_NS
from finops.ledger.conventions import Conventions
from infra.metrics_csv import PROJECT_METRICS, MetricRow
from infra.metrics_csv import render as render_metrics_csv

KUEUE_API = f"{KUEUE_GROUP}/v1beta2"
COHORT = "gpu"
FLAVOR = "gpu-spot"  # whole cards
SHARED_FLAVOR = "gpu-shared"  # time-sliced replicas
GPU = GPU_RESOURCE
SHARED_GPU = SHARED_GPU_RESOURCE  # what the device plugin advertises replicas as (renameByDefault)
DEVICE_PLUGIN_CONFIG_LABEL = LABEL_DEVICE_PLUGIN_CONFIG
WHOLE_DEVICE_CONFIG = "default"
PRIORITIES = {"low": 100, "high": 1000}  # WorkloadPriorityClass name -> value
GPU_TAINT = {"key": GPU, "value": "true", "effect": "NoSchedule"}


def nodepool(c: Config, *, shared: bool = False) -> dict[str, Any]:
    """Spot only; instance types, vCPU size and GPU count pinned so quota and hardware agree. The whole-card
    pool runs the device plugin's default config; the shared pool's nodes select the time-slicing config by
    label, so only its cards become replicas."""
    labels = {LABEL_POOL: "gpu-shared" if shared else "gpu"}
    if shared:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = c.shared_device_config
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": c.shared_nodepool_name if shared else c.nodepool_name},
        "spec": {
            "template": {
                "metadata": {"labels": labels},
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
            "limits": c.shared_nodepool_limits if shared else c.nodepool_limits,
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "120s"},
        },
    }


def nodepools(c: Config) -> list[dict[str, Any]]:
    """The whole-card pool, and the shared pool when any tenant has replica quota."""
    return [nodepool(c)] + ([nodepool(c, shared=True)] if c.shared_replicas else [])


def shared_capacity_overlay(c: Config) -> dict[str, Any]:
    """Karpenter's scheduling simulation knows only the instance type's physical nvidia.com/gpu; this
    NodeOverlay (feature gate NodeOverlay) adds the replicas the device plugin will advertise on the shared
    pool's nodes, so Karpenter places four one-replica pods on one new node instead of four nodes."""
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": f"{c.shared_nodepool_name}-replicas"},
        "spec": {
            "requirements": [{"key": LABEL_NODEPOOL, "operator": "In", "values": [c.shared_nodepool_name]}],
            "capacity": {SHARED_GPU: str(c.gpus_per_node * c.timeslicing_replicas)},
        },
    }


def karpenter_objects(c: Config) -> list[dict[str, Any]]:
    """NodePools and, for the shared pool, its capacity overlay (provider-neutral)."""
    return nodepools(c) + ([shared_capacity_overlay(c)] if c.shared_replicas else [])


def ec2nodeclass(c: Config, node_role: str) -> dict[str, Any]:
    discovery = {LABEL_DISCOVERY: c.cluster_name}
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "gpu"},
        "spec": {
            "role": node_role,
            # The EKS-optimized AL2023 NVIDIA AMI: Karpenter picks the accelerated variant for GPU types.
            "amiSelectorTerms": [{"alias": c.versions.node_ami_alias}],
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


def resource_flavor(c: Config, *, shared: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": SHARED_FLAVOR if shared else FLAVOR},
        "spec": {
            "nodeLabels": {LABEL_NODEPOOL: c.shared_nodepool_name if shared else c.nodepool_name},
            "tolerations": [{"key": GPU, "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
        },
    }


def resource_groups(c: Config, whole: int, shared: int) -> list[dict[str, Any]]:
    """Whole cards on the whole-card flavor; replicas on the shared flavor, counted in replicas."""
    groups = [
        {
            "coveredResources": [GPU],
            "flavors": [
                {"name": FLAVOR, "resources": [{"name": GPU, "nominalQuota": whole, "borrowingLimit": 0}]}
            ],
        }
    ]
    if c.shared_replicas:
        groups.append(
            {
                "coveredResources": [SHARED_GPU],
                "flavors": [
                    {
                        "name": SHARED_FLAVOR,
                        "resources": [{"name": SHARED_GPU, "nominalQuota": shared, "borrowingLimit": 0}],
                    }
                ],
            }
        )
    return groups


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
                "resourceGroups": resource_groups(c, t.gpu_quota, t.shared_gpu_quota),
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
        *([resource_flavor(c, shared=True)] if c.shared_replicas else []),
        *cluster_queues(c),
        *local_queues(c),
        *priority_classes(),
    ]


def timeslicing_config(c: Config) -> str:
    """Replicas advertised as nvidia.com/gpu.shared (renameByDefault), so a replica is never mistaken for
    a card by Kueue, Karpenter or a workload that asks for nvidia.com/gpu."""
    return yaml.safe_dump(
        {
            "version": "v1",
            "sharing": {
                "timeSlicing": {
                    "renameByDefault": True,
                    "failRequestsGreaterThanOne": True,
                    "resources": [{"name": GPU, "replicas": c.timeslicing_replicas}],
                }
            },
        },
        sort_keys=False,
    )


def device_plugin_configs(c: Config) -> dict[str, str]:
    """Named device plugin configs: whole cards by default; time-slicing where a node's label asks."""
    return {
        WHOLE_DEVICE_CONFIG: yaml.safe_dump({"version": "v1"}, sort_keys=False),
        c.shared_device_config: timeslicing_config(c),
    }


def device_plugin_values(c: Config) -> dict[str, Any]:
    return {
        "config": {"map": device_plugin_configs(c), "default": WHOLE_DEVICE_CONFIG},
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
    }


def ledger_rules() -> dict[str, Any]:
    """The committed ledger rules file, parsed (data shipped with the finops package, not code)."""
    return yaml.safe_load(resources.files("finops.ledger").joinpath("rules.yaml").read_text())


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
        "settings": {
            "clusterName": c.cluster_name,
            "interruptionQueue": queue_name,
            "featureGates": {"nodeOverlay": bool(c.shared_replicas)},  # the shared pool's replica overlay
        },
        "serviceAccount": {"name": "karpenter"},
        "controller": {"resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}},
        "podAnnotations": {ANNOTATION_CONTROLLER_ROLE: controller_role_arn},
    }
