"""Karpenter's objects: the whole-card, shared and MIG NodePools, the shared and MIG pools' NodeOverlays,
the EC2NodeClass, and the chart's values."""

from __future__ import annotations

from typing import Any

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import (
    ANNOTATION_CONTROLLER_ROLE,
    LABEL_ARCH,
    LABEL_CAPACITY_TYPE,
    LABEL_DISCOVERY,
    LABEL_INSTANCE_CPU,
    LABEL_INSTANCE_GPU_COUNT,
    LABEL_INSTANCE_TYPE,
    LABEL_MIG_CONFIG,
    LABEL_NODEPOOL,
    LABEL_POOL,
    mig_resource,
)
from gpu_finops.facts.kube_keys import GPU_RESOURCE as GPU
from gpu_finops.facts.kube_keys import LABEL_DEVICE_PLUGIN_CONFIG as DEVICE_PLUGIN_CONFIG_LABEL
from gpu_finops.facts.kube_keys import SHARED_GPU_RESOURCE as SHARED_GPU
from gpu_finops.facts.kubelet import ROOT_VOLUME_GIB

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


def mig_nodepool(c: Config) -> dict[str, Any]:
    """The MIG pool: `mig_instance_type` only, its nodes labelled for the MIG manager's layout
    (`nvidia.com/mig.config`) and the device plugin's mixed strategy, so each GPU instance is advertised as
    nvidia.com/mig-<profile>. Limits: the cards the MIG quotas fill."""
    from infra.objects.device_plugin import MIG_MIXED_DEVICE_CONFIG

    pool = nodepool(c)
    vcpu, gpus = c.mig_node_shape
    pool["metadata"]["name"] = c.mig_nodepool_name
    pool["spec"]["template"]["metadata"]["labels"] = {
        LABEL_POOL: "gpu-mig",
        DEVICE_PLUGIN_CONFIG_LABEL: MIG_MIXED_DEVICE_CONFIG,
        LABEL_MIG_CONFIG: c.mig_layout,
    }
    pins = {LABEL_INSTANCE_TYPE: [c.mig_instance_type], LABEL_INSTANCE_CPU: [str(vcpu)],
            LABEL_INSTANCE_GPU_COUNT: [str(gpus)]}  # fmt: skip
    for r in pool["spec"]["template"]["spec"]["requirements"]:
        r["values"] = pins.get(r["key"], r["values"])
    pool["spec"]["limits"] = c.mig_nodepool_limits
    return pool


def nodepools(c: Config) -> list[dict[str, Any]]:
    """The whole-card pool, the shared pool when any tenant has replica quota, the MIG pool when any has MIG
    quota."""
    return (
        [nodepool(c)]
        + ([nodepool(c, shared=True)] if c.shared_replicas else [])
        + ([mig_nodepool(c)] if c.mig_slices else [])
    )


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
    """NodePools and, for the shared and MIG pools, their capacity overlays (provider-neutral)."""
    return (
        nodepools(c)
        + ([shared_capacity_overlay(c)] if c.shared_replicas else [])
        + ([mig_capacity_overlay(c)] if c.mig_slices else [])
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
            # the shared pool's replica overlay, the MIG pool's slices overlay
            "featureGates": {"nodeOverlay": bool(c.shared_replicas or c.mig_slices)},
        },
        "serviceAccount": {"name": "karpenter"},
        "controller": {
            "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}},
            # The region explicitly, never discovered from IMDS (the chart's documented way).
            "env": [{"name": "AWS_REGION", "value": c.region}],
        },
        "podAnnotations": {ANNOTATION_CONTROLLER_ROLE: controller_role_arn},
    }
