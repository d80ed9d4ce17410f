"""Kueue's objects: ResourceFlavors, one ClusterQueue and LocalQueue per tenant in one cohort, the
tenants' namespaces and the WorkloadPriorityClasses (moved from infra/objects.py)."""

from __future__ import annotations

from typing import Any

from facts.config import Config
from facts.kube_keys import GPU_RESOURCE as GPU
from facts.kube_keys import KUEUE_API, LABEL_NODEPOOL, LABEL_TENANT
from facts.kube_keys import SHARED_GPU_RESOURCE as SHARED_GPU

COHORT = "gpu"
FLAVOR = "gpu-spot"  # whole cards
SHARED_FLAVOR = "gpu-shared"  # time-sliced replicas
PRIORITIES = {"low": 100, "high": 1000}  # WorkloadPriorityClass name -> value


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
