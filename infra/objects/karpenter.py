"""Karpenter's objects: the whole-card, shared, MIG, MPS and DRA NodePools, the shared, MIG and MPS pools'
NodeOverlays, the EC2NodeClass, and the chart's values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import (
    ANNOTATION_CONTROLLER_ROLE,
    GPU_ALLOCATION_DRA,
    LABEL_ARCH,
    LABEL_CAPACITY_TYPE,
    LABEL_DISCOVERY,
    LABEL_GPU_ALLOCATION,
    LABEL_INSTANCE_CPU,
    LABEL_INSTANCE_GPU_COUNT,
    LABEL_INSTANCE_TYPE,
    LABEL_MIG_CONFIG,
    LABEL_NODEPOOL,
    LABEL_POOL,
    mig_resource,
)
from gpu_finops.facts.kube_keys import LABEL_DEVICE_PLUGIN_CONFIG as DEVICE_PLUGIN_CONFIG_LABEL
from gpu_finops.facts.kube_keys import SHARED_GPU_RESOURCE as SHARED_GPU
from gpu_finops.facts.kubelet import ROOT_VOLUME_GIB
from infra.objects.gpu_taints import DRA_TAINT, GPU_TAINT, MPS_TAINT


@dataclass(frozen=True)
class Pool:
    """One GPU NodePool: its name, the labels its nodes carry (the pool, the device plugin config they select,
    the MIG layout), the one instance shape it runs (types, vCPUs, physical GPUs) and its limits."""

    name: str
    labels: dict[str, str]
    types: tuple[str, ...]
    vcpu: int
    gpus: int
    limits: dict[str, str]
    taints: tuple[dict[str, str], ...] = (GPU_TAINT,)


def on_the_gpu_types(
    c: Config,
    name: str,
    labels: dict[str, str],
    limits: dict[str, str],
    taints: tuple[dict[str, str], ...] = (GPU_TAINT,),
) -> Pool:
    """A pool of the configured GPU instance shape (`gpu_instance_types`, `gpu_node_vcpu`, `gpus_per_node`): every
    pool but the MIG one, which has its own type."""
    return Pool(name, labels, tuple(c.gpu_instance_types), c.gpu_node_vcpu, c.gpus_per_node, limits, taints)


def whole_pool(c: Config) -> Pool:
    """Whole cards: the device plugin's default config."""
    return on_the_gpu_types(c, c.nodepool_name, {LABEL_POOL: "gpu"}, c.nodepool_limits)


def shared_pool(c: Config) -> Pool:
    """Time-sliced replicas: the nodes select the time-slicing config by label, so only their cards become
    replicas."""
    labels = {LABEL_POOL: "gpu-shared", DEVICE_PLUGIN_CONFIG_LABEL: c.shared_device_config}
    return on_the_gpu_types(c, c.shared_nodepool_name, labels, c.shared_nodepool_limits)


def mps_pool(c: Config) -> Pool:
    """MPS clients: the nodes select the device plugin's MPS config, whose control daemon limits each client to
    1/replicas of its card's memory and SMs; tainted (MPS_TAINT) so that only pods that tolerate it run there,
    which are the only ones Kueue admits on the MPS flavor (the taint is that flavor's nodeTaint)."""
    from infra.objects.device_plugin import MPS_DEVICE_CONFIG

    labels = {LABEL_POOL: "gpu-mps", DEVICE_PLUGIN_CONFIG_LABEL: MPS_DEVICE_CONFIG}
    return on_the_gpu_types(c, c.mps_nodepool_name, labels, c.mps_nodepool_limits, (GPU_TAINT, MPS_TAINT))


def mig_pool(c: Config) -> Pool:
    """MIG slices: `mig_instance_type` only, its nodes labelled for the MIG manager's layout
    (`nvidia.com/mig.config`) and the device plugin's mixed strategy, so each GPU instance is advertised as
    nvidia.com/mig-<profile>. Limits: the cards the MIG quotas fill."""
    from infra.objects.device_plugin import MIG_MIXED_DEVICE_CONFIG

    vcpu, gpus = c.mig_node_shape
    labels = {
        LABEL_POOL: "gpu-mig",
        DEVICE_PLUGIN_CONFIG_LABEL: MIG_MIXED_DEVICE_CONFIG,
        LABEL_MIG_CONFIG: c.mig_layout,
    }
    return Pool(c.mig_nodepool_name, labels, (c.mig_instance_type,), vcpu, gpus, c.mig_nodepool_limits)


def dra_pool(c: Config) -> Pool:
    """Whole cards through Dynamic Resource Allocation: the nodes are labelled for it (LABEL_GPU_ALLOCATION), which
    keeps the device plugin's DaemonSets off them and puts NVIDIA's DRA driver's kubelet plugin on them
    (infra/objects/device_plugin.py), so their cards are published as devices of the driver's ResourceSlices and
    never advertised as nvidia.com/gpu; tainted (DRA_TAINT), as the MPS pool is, so that only pods that tolerate
    it run there, which are the only ones Kueue admits on the DRA flavor: a pod asking nvidia.com/gpu never lands
    on a node whose cards Karpenter would wait to see advertised under that name."""
    labels = {LABEL_POOL: "gpu-dra", LABEL_GPU_ALLOCATION: GPU_ALLOCATION_DRA}
    return on_the_gpu_types(c, c.dra_nodepool_name, labels, c.dra_nodepool_limits, (GPU_TAINT, DRA_TAINT))


def dra_nodepool(c: Config) -> dict[str, Any]:
    """The DRA pool's NodePool (`dra_pool`)."""
    return nodepool(c, pool=dra_pool(c))


def nodepool(c: Config, *, shared: bool = False, pool: Pool | None = None) -> dict[str, Any]:
    """Spot only; instance types, vCPU size and GPU count pinned so quota and hardware agree. `pool`: which
    (default: the whole-card pool, or the shared one with `shared`)."""
    p = pool or (shared_pool(c) if shared else whole_pool(c))
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": p.name},
        "spec": {
            "template": {
                "metadata": {"labels": dict(p.labels)},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                    "requirements": [
                        {"key": LABEL_CAPACITY_TYPE, "operator": "In", "values": ["spot"]},
                        {"key": LABEL_INSTANCE_TYPE, "operator": "In", "values": list(p.types)},
                        {"key": LABEL_INSTANCE_CPU, "operator": "In", "values": [str(p.vcpu)]},
                        {"key": LABEL_INSTANCE_GPU_COUNT, "operator": "In", "values": [str(p.gpus)]},
                        {"key": LABEL_ARCH, "operator": "In", "values": ["amd64"]},
                    ],
                    "taints": [dict(t) for t in p.taints],
                    "expireAfter": "24h",
                },
            },
            "limits": dict(p.limits),
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "120s"},
        },
    }


def mig_nodepool(c: Config) -> dict[str, Any]:
    """The MIG pool's NodePool (`mig_pool`)."""
    return nodepool(c, pool=mig_pool(c))


def mps_nodepool(c: Config) -> dict[str, Any]:
    """The MPS pool's NodePool (`mps_pool`)."""
    return nodepool(c, pool=mps_pool(c))


def nodepools(c: Config) -> list[dict[str, Any]]:
    """The whole-card pool, the shared pool when any tenant has replica quota, the MIG pool when any has MIG
    quota, the MPS pool when any has MPS quota, the DRA pool when any has DRA quota."""
    return (
        [nodepool(c)]
        + ([nodepool(c, shared=True)] if c.shared_replicas else [])
        + ([mig_nodepool(c)] if c.mig_slices else [])
        + ([mps_nodepool(c)] if c.mps_clients else [])
        + ([dra_nodepool(c)] if c.dra_cards else [])
    )


def _replicas_overlay(c: Config, pool: str, suffix: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": f"{pool}-{suffix}"},
        "spec": {
            "requirements": [{"key": LABEL_NODEPOOL, "operator": "In", "values": [pool]}],
            "capacity": {SHARED_GPU: str(c.gpus_per_node * c.timeslicing_replicas)},
        },
    }


def shared_capacity_overlay(c: Config) -> dict[str, Any]:
    """Karpenter's scheduling simulation knows only the instance type's physical nvidia.com/gpu; this
    NodeOverlay (feature gate NodeOverlay) adds the replicas the device plugin will advertise on the shared
    pool's nodes, so Karpenter places four one-replica pods on one new node instead of four nodes."""
    return _replicas_overlay(c, c.shared_nodepool_name, "replicas")


def mps_capacity_overlay(c: Config) -> dict[str, Any]:
    """The MPS pool's clients, as the shared pool's replicas (same resource, nvidia.com/gpu.shared)."""
    return _replicas_overlay(c, c.mps_nodepool_name, "clients")


def mig_capacity_overlay(c: Config) -> dict[str, Any]:
    """Karpenter knows the MIG pool's type by its whole nvidia.com/gpu; this NodeOverlay adds the slices the
    layout cuts on each card, per profile, so Karpenter launches a node for a pod asking nvidia.com/mig-3g.40gb
    and places the slices of one card on one node."""
    _, gpus = c.mig_node_shape
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": f"{c.mig_nodepool_name}-slices"},
        "spec": {
            "requirements": [{"key": LABEL_NODEPOOL, "operator": "In", "values": [c.mig_nodepool_name]}],
            "capacity": {mig_resource(p): str(n * gpus) for p, n in sorted(c.mig_layout_devices.items())},
        },
    }


def karpenter_objects(c: Config) -> list[dict[str, Any]]:
    """NodePools and, for the shared, MIG and MPS pools, their capacity overlays (provider-neutral)."""
    return (
        nodepools(c)
        + ([shared_capacity_overlay(c)] if c.shared_replicas else [])
        + ([mig_capacity_overlay(c)] if c.mig_slices else [])
        + ([mps_capacity_overlay(c)] if c.mps_clients else [])
    )


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
                # Upstream's default: 1 would keep every pod off the host network from IMDSv2 (its
                # token response needs a second hop), Karpenter's own controller included.
                "httpPutResponseHopLimit": 2,
                "httpProtocolIPv6": "disabled",
            },
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "ebs": {
                        "volumeSize": f"{ROOT_VOLUME_GIB}Gi",  # the kubelet's ephemeral storage (gpu_finops/facts/kubelet.py)
                        "volumeType": "gp3",
                        "encrypted": True,
                        "deleteOnTermination": True,
                    },
                }
            ],
            "tags": c.tags,
        },
    }


def karpenter_values(c: Config, queue_name: str, controller_role_arn: str) -> dict[str, Any]:
    return {
        "settings": {
            "clusterName": c.cluster_name,
            "interruptionQueue": queue_name,
            # the shared pool's replica overlay, the MIG pool's slices overlay, the MPS pool's clients overlay
            "featureGates": {"nodeOverlay": bool(c.shared_replicas or c.mig_slices or c.mps_clients)},
            # the DRA pool (alpha): the devices NVIDIA's driver publishes on each GPU type (the provider's
            # draNVIDIAGPU gate, which also stops Karpenter ignoring claims: IGNORE_DRA_REQUESTS=false), so it
            # launches a node for a pod that asks by claim and waits for the driver's ResourceSlices before it
            # calls the node initialized; only this gate, not settings.enableDRA, which turns on draEFA as well
            **({"awsFeatureGates": {"draNVIDIAGPU": True}} if c.dra_cards else {}),
        },
        "serviceAccount": {"name": "karpenter"},
        "controller": {
            "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}},
            # The region explicitly, never discovered from IMDS (the chart's documented way).
            "env": [{"name": "AWS_REGION", "value": c.region}],
        },
        "podAnnotations": {ANNOTATION_CONTROLLER_ROLE: controller_role_arn},
    }
