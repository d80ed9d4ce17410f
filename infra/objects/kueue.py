"""Kueue's objects: ResourceFlavors, one ClusterQueue and LocalQueue per tenant in one cohort, the
tenants' namespaces and the WorkloadPriorityClasses (moved from infra/objects.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from gpu_finops.facts.config import Config, Tenant
from gpu_finops.facts.kube_keys import GPU_RESOURCE as GPU
from gpu_finops.facts.kube_keys import (
    KUEUE_API,
    LABEL_NODEPOOL,
    LABEL_TENANT,
    TAINT_DRA_POOL,
    TAINT_MPS_POOL,
    mig_resource,
)
from gpu_finops.facts.kube_keys import SHARED_GPU_RESOURCE as SHARED_GPU

COHORT = "gpu"
FLAVOR = "gpu-spot"  # whole cards
SHARED_FLAVOR = "gpu-shared"  # time-sliced replicas
MIG_FLAVOR = "gpu-mig"  # MIG slices, one resource per profile
MPS_FLAVOR = "gpu-mps"  # MPS clients: nvidia.com/gpu.shared, as time-sliced replicas, on the MPS pool's nodes
DRA_FLAVOR = "gpu-dra"  # whole cards through DRA: nvidia.com/gpu (a mapped claim or the served resource)
PRIORITIES = {"low": 100, "high": 1000}  # WorkloadPriorityClass name -> value
# Kueue's feature gates, the same on AWS (the chart's values below) and on the local target
# (local/cluster/controllers.py): the visibility API, whose pending workloads carry their queue positions
# (Beta, on by default since Kueue v0.9; said here so neither target can drift), and KEP-10852's ranked
# reasons on the QuotaReserved and Admitted conditions with the kueue_unadmitted_workloads metric (Beta, off by
# default in v0.19). `gpu-finops diagnose` quotes both (gpu_finops/diagnose/kueue_visibility.py).
KUEUE_FEATURE_GATES = {"VisibilityOnDemand": True, "UnadmittedWorkloadsObservability": True}
# Dynamic Resource Allocation (Kueue's KueueDRAIntegration, on by default since v0.18): a pod asking GPUs through a
# ResourceClaimTemplate of NVIDIA's `gpu.nvidia.com` class is charged against the same `nvidia.com/gpu` quota a
# device-plugin pod is (an unmapped class makes its workload inadmissible); a pod asking `nvidia.com/gpu` that the
# class serves as an extended resource is charged under that name either way (Kueue v0.19 pkg/dra). Set in the
# local target's Kueue Configuration (local/cluster/controllers.py), and on AWS with the DRA pool (`kueue_values`).
KUEUE_DEVICE_CLASS_MAPPINGS = [{"name": GPU, "deviceClassNames": ["gpu.nvidia.com"]}]
# The Configuration Kueue's chart installs (v0.19.2 charts/kueue/values.yaml, managerConfig.controllerManagerConfigYaml,
# its comments left out): the chart takes the Configuration as one string, so setting one field means passing all
# of it. tests/infra/test_dra_objects.py compares this copy with the chart's at the pinned version.
KUEUE_CHART_CONFIGURATION: dict[str, Any] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 10,
            "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 300, "burst": 500},
    "integrations": {
        "frameworks": [
            "batch/job",
            "kubeflow.org/mpijob",
            "ray.io/rayjob",
            "ray.io/rayservice",
            "ray.io/raycluster",
            "jobset.x-k8s.io/jobset",
            "workload.codeflare.dev/appwrapper",
            "trainer.kubeflow.org/trainjob",
            "pod",
            "deployment",
            "statefulset",
            "leaderworkerset.x-k8s.io/leaderworkerset",
        ]
    },
}


def kueue_values(c: Config) -> dict[str, Any]:
    """The Kueue chart's values: its manager's feature gates (the chart turns the list into --feature-gates,
    and installs the visibility APIServices, Service and auth-reader RoleBinding itself); with the DRA pool, the
    chart's Configuration with the device class mappings added."""
    values: dict[str, Any] = {
        "controllerManager": {
            "featureGates": [{"name": k, "enabled": v} for k, v in sorted(KUEUE_FEATURE_GATES.items())]
        }
    }
    if c.dra_cards:
        configuration = {
            **KUEUE_CHART_CONFIGURATION,
            "resources": {"deviceClassMappings": KUEUE_DEVICE_CLASS_MAPPINGS},
        }
        values["managerConfig"] = {
            "controllerManagerConfigYaml": yaml.safe_dump(configuration, sort_keys=False)
        }
    return values


def resource_flavor(
    c: Config, *, shared: bool = False, mig: bool = False, mps: bool = False, dra: bool = False
) -> dict[str, Any]:
    """A flavor per pool, by the pool's NodePool label: a workload whose pods select a pool (the MPS pool's
    nodeSelector) is admitted only on that pool's flavor, as Kueue matches a pod's node selection against each
    flavor's nodeLabels."""
    name, pool = (
        (DRA_FLAVOR, c.dra_nodepool_name)
        if dra
        else (MIG_FLAVOR, c.mig_nodepool_name)
        if mig
        else (MPS_FLAVOR, c.mps_nodepool_name)
        if mps
        else (SHARED_FLAVOR, c.shared_nodepool_name)
        if shared
        else (FLAVOR, c.nodepool_name)
    )
    spec: dict[str, Any] = {
        "nodeLabels": {LABEL_NODEPOOL: pool},
        "tolerations": [{"key": GPU, "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
    }
    if dra:
        # the DRA pool's own taint (infra/objects/karpenter.py DRA_TAINT), as the MPS flavor's: Kueue assigns this
        # flavor only to a workload that tolerates it, so a tenant's nvidia.com/gpu ask never overflows onto it
        spec["nodeTaints"] = [{"key": TAINT_DRA_POOL, "value": "true", "effect": "NoSchedule"}]
    if mps:
        # the MPS pool's own taint (infra/objects/karpenter.py MPS_TAINT) as a nodeTaint, not a toleration the
        # flavor adds: Kueue assigns this flavor only to a workload that tolerates it, so a tenant's time-sliced
        # ask never overflows onto the MPS flavor (nor becomes an MPS client) when its gpu-shared quota is full
        spec["nodeTaints"] = [{"key": TAINT_MPS_POOL, "value": "true", "effect": "NoSchedule"}]
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


@dataclass(frozen=True)
class QueuePolicy:
    """How one tenant's ClusterQueue shares the cohort. The default is what the addons stack ships: no
    borrowing, lower priorities preempted in the queue, lent quota reclaimed from anyone. The fleet twin
    renders the policies it compares through the same functions. `borrowing_limit` / `lending_limit`:
    cards, None for no limit (Kueue's field left out). `fair_sharing_weight`: the ClusterQueue's
    spec.fairSharing.weight, None to leave it out (it matters only where Kueue runs with fair sharing)."""

    borrowing_limit: int | None = 0
    lending_limit: int | None = None
    within_cluster_queue: str = "LowerPriority"
    reclaim_within_cohort: str = "Any"
    borrow_within_cohort: str = "Never"
    queueing_strategy: str = "BestEffortFIFO"
    fair_sharing_weight: str | None = None


SHIPPED = QueuePolicy()


def _quota(name: str, nominal: int, policy: QueuePolicy) -> dict[str, Any]:
    quota: dict[str, Any] = {"name": name, "nominalQuota": nominal}
    if policy.borrowing_limit is not None:
        quota["borrowingLimit"] = policy.borrowing_limit
    if policy.lending_limit is not None:
        quota["lendingLimit"] = policy.lending_limit
    return quota


def resource_groups(
    c: Config,
    whole: int,
    shared: int,
    policy: QueuePolicy = SHIPPED,
    mig: dict[str, int] | None = None,
    mps: int = 0,
    dra: int = 0,
) -> list[dict[str, Any]]:
    """Whole cards on the whole-card flavor; time-sliced replicas on the shared flavor and MPS clients on the
    MPS flavor, both nvidia.com/gpu.shared counted in replicas (one resource group, a flavor per pool, in that
    order); MIG slices on the MIG flavor, one resource per profile any tenant has quota for (`mig`: this
    tenant's, 0 for the rest: Kueue wants every ClusterQueue of a cohort to name the resources it may be
    lent). Whole cards through DRA (`dra`) on the DRA flavor, after the whole-card one in the same group: Kueue
    charges a claim of the mapped class, or nvidia.com/gpu served from it, as nvidia.com/gpu."""
    whole_flavors = [(FLAVOR, whole)] + ([(DRA_FLAVOR, dra)] if c.dra_cards else [])
    groups = [
        {
            "coveredResources": [GPU],
            "flavors": [{"name": name, "resources": [_quota(GPU, n, policy)]} for name, n in whole_flavors],
        }
    ]
    replica_flavors = [(SHARED_FLAVOR, shared)] if c.shared_replicas else []
    replica_flavors += [(MPS_FLAVOR, mps)] if c.mps_clients else []
    if replica_flavors:
        groups.append(
            {
                "coveredResources": [SHARED_GPU],
                "flavors": [
                    {"name": name, "resources": [_quota(SHARED_GPU, n, policy)]}
                    for name, n in replica_flavors
                ],
            }
        )
    if c.mig_slices:
        names = [mig_resource(p) for p in c.mig_slices]
        quota = {mig_resource(p): n for p, n in (mig or {}).items()}
        groups.append(
            {
                "coveredResources": names,
                "flavors": [
                    {"name": MIG_FLAVOR, "resources": [_quota(r, quota.get(r, 0), policy) for r in names]}
                ],
            }
        )
    return groups


def cluster_queue(c: Config, tenant: Tenant, policy: QueuePolicy = SHIPPED) -> dict[str, Any]:
    """The tenant's ClusterQueue in the one cohort, sharing it as `policy` says."""
    spec: dict[str, Any] = {
        "cohortName": COHORT,
        "namespaceSelector": {},
        "queueingStrategy": policy.queueing_strategy,
        "resourceGroups": resource_groups(
            c,
            tenant.gpu_quota,
            tenant.shared_gpu_quota,
            policy,
            tenant.mig_quota,
            tenant.mps_quota,
            tenant.dra_gpu_quota,
        ),
        "preemption": {
            "withinClusterQueue": policy.within_cluster_queue,
            "reclaimWithinCohort": policy.reclaim_within_cohort,
            "borrowWithinCohort": {"policy": policy.borrow_within_cohort},
        },
    }
    if policy.fair_sharing_weight is not None:
        spec["fairSharing"] = {"weight": policy.fair_sharing_weight}
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": tenant.name}, "spec": spec}


def cluster_queues(c: Config, policies: dict[str, QueuePolicy] | None = None) -> list[dict[str, Any]]:
    """One ClusterQueue per tenant in one cohort; shipped: no borrowing, so each tenant gets exactly its
    quota. `policies`: tenant -> QueuePolicy (the fleet twin's), the shipped one for any tenant left out."""
    return [cluster_queue(c, t, (policies or {}).get(t.name, SHIPPED)) for t in c.tenants]


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


def kueue_objects(c: Config, policies: dict[str, QueuePolicy] | None = None) -> list[dict[str, Any]]:
    return [
        *tenant_namespaces(c),
        resource_flavor(c),
        *([resource_flavor(c, shared=True)] if c.shared_replicas else []),
        *([resource_flavor(c, mig=True)] if c.mig_slices else []),
        *([resource_flavor(c, mps=True)] if c.mps_clients else []),
        *([resource_flavor(c, dra=True)] if c.dra_cards else []),
        *cluster_queues(c, policies),
        *local_queues(c),
        *priority_classes(),
    ]
