"""Read GPU nodes from Kubernetes into plain `GpuNode` (the collector's and the reaper's view)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gpu_finops.facts import file_schema, input_files, timestamps
from gpu_finops.facts.errors import FILE, ConfigError
from gpu_finops.facts.file_schema import AwareTime, ForeignModel, Text
from gpu_finops.facts.kube_keys import (
    ANNOTATION_DO_NOT_DISRUPT,
    GPU_RESOURCE,
    LABEL_CAPACITY_TYPE,
    LABEL_EKS_CAPACITY_TYPE,
    LABEL_GPU_COUNT,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_ZONE,
)
from gpu_finops.model import holding
from gpu_finops.model.dra import NodeCards


@dataclass(frozen=True)
class GpuNode:
    """A GPU node as the cost side sees it: what the collector, pricing and the reaper need (its type,
    capacity type, zone, NodePool, instance, cards and life). Not the diagnosis's `gpu_finops.diagnose.model.NodeFacts`,
    which is the node as the scheduler sees it (taints, allocatable, readiness)."""

    name: str
    instance_type: str | None
    capacity_type: str | None
    zone: str | None
    nodepool: str | None
    instance_id: str | None
    gpu_count: int
    created: datetime
    deleted: datetime | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    # where capacity_type came from: a label key, EC2's InstanceLifecycle, or None (unknown)
    capacity_source: str | None = None
    capacity: dict[str, Any] = field(default_factory=dict)  # status.capacity: its GPU resources' devices
    # its GPUs as the DRA driver publishes them (gpu_finops.model.dra), where it advertises none as a resource
    dra: NodeCards | None = None

    @property
    def region(self) -> str | None:
        """us-east-1a -> us-east-1 (AWS zone names are the region plus one letter)."""
        return self.zone[:-1] if self.zone and self.zone[-1].isalpha() else self.zone

    @property
    def do_not_disrupt(self) -> bool:
        return self.annotations.get(ANNOTATION_DO_NOT_DISRUPT) == "true"


# EKS managed node groups' values, in Karpenter's words (a capacity block is Karpenter's `reserved`)
EKS_CAPACITY_TYPES = {"ON_DEMAND": "on-demand", "SPOT": "spot", "CAPACITY_BLOCK": "reserved"}


def capacity_type_of(labels: dict[str, str]) -> tuple[str | None, str | None]:
    """(capacity type, the label it came from): Karpenter's label, else EKS managed node groups'; (None,
    None) when neither says (then EC2's instance lifecycle can, gpu_finops/cost/lifecycle.py). An EKS value we do
    not know is kept as it is, lower-cased, so it prices as nothing known rather than as on-demand."""
    if labels.get(LABEL_CAPACITY_TYPE):
        return labels[LABEL_CAPACITY_TYPE], LABEL_CAPACITY_TYPE
    eks = labels.get(LABEL_EKS_CAPACITY_TYPE)
    if eks:
        return EKS_CAPACITY_TYPES.get(eks, eks.lower()), LABEL_EKS_CAPACITY_TYPE
    return None, None


def instance_id_from_provider_id(provider_id: str | None) -> str | None:
    """aws:///us-east-1a/i-0abc -> i-0abc; other providers: the last path element, or None."""
    if not provider_id:
        return None
    tail = provider_id.rstrip("/").rsplit("/", 1)[-1]
    return tail or None


def physical_cards(name: str, labels: dict[str, str], capacity: dict[str, Any]) -> int:
    """The node's physical cards, as the held-GPU model reads them (gpu_finops.model.holding.node_gpus): a MIG
    node's slices and a time-sliced node's replicas are not cards. Raises ValueError naming the node where they
    cannot be read (a MIG node of a type nobody labelled with its GPU count and the catalog does not know)."""
    try:
        return holding.read_node_cards(name, labels, capacity)
    except holding.NodeGpusError as exc:
        raise ValueError(str(exc)) from None


def node_facts(node: Any, dra: NodeCards | None = None) -> GpuNode:
    """Convert a kubernetes-client V1Node (or anything shaped like it) into GpuNode. `dra`: the cards the GPU
    DRA driver publishes for it (gpu_finops.model.dra), its GPUs where it advertises none as a resource (a node
    that advertises GPU resources is read by them, and its DRA devices, if any, are not counted again)."""
    meta, status, spec = node.metadata, node.status, node.spec
    labels = dict(meta.labels or {})
    capacity = dict((status.capacity or {}) if status else {})
    advertises = any(holding.is_gpu_resource(r) and str(v) not in ("0", "") for r, v in capacity.items())
    if advertises or dra is None or not dra.installed:
        dra = None  # read by its GPU resources, or by its labels and the catalog where it has none yet
    gpu_count = int(dra.installed) if dra else physical_cards(meta.name, labels, capacity)
    capacity_type, capacity_source = capacity_type_of(labels)
    return GpuNode(
        name=meta.name,
        instance_type=labels.get(LABEL_INSTANCE_TYPE),
        capacity_type=capacity_type,
        capacity_source=capacity_source,
        zone=labels.get(LABEL_ZONE),
        nodepool=labels.get(LABEL_NODEPOOL),
        instance_id=instance_id_from_provider_id(getattr(spec, "provider_id", None)),
        gpu_count=gpu_count,
        created=meta.creation_timestamp,
        deleted=meta.deletion_timestamp,
        labels=labels,
        capacity=dict(capacity),
        annotations=dict(meta.annotations or {}),
        dra=dra,
    )


class KubeNodeSource:
    """Lists GPU nodes through the Kubernetes API."""

    def __init__(self, core_v1: Any, resource_slices: Callable[[], list[dict[str, Any]]] | None = None):
        self.core_v1 = core_v1
        # the cluster's ResourceSlices (resource.k8s.io/v1), where DRA GPUs are read: None reads none
        self.resource_slices = resource_slices

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None) -> KubeNodeSource:
        from kubernetes import client, config

        from gpu_finops.clients.kube import check_kubeconfig

        check_kubeconfig(kubeconfig)
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig)
        else:
            try:
                config.load_incluster_config()
            except config.ConfigException:
                config.load_kube_config()
        custom = client.CustomObjectsApi()

        def slices() -> list[dict[str, Any]]:
            from kubernetes.client.exceptions import ApiException

            try:
                got = custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")
            except ApiException as exc:
                if exc.status != 404:
                    raise
                return []  # no resource.k8s.io/v1 (Kubernetes before 1.34): no DRA devices
            return got.get("items", [])

        return cls(client.CoreV1Api(), slices)

    def dra_cards(self) -> dict[str, NodeCards]:
        """Node -> the physical cards the GPU DRA driver publishes there (whole cards and MIG slices' cards)."""
        if self.resource_slices is None:
            return {}
        from gpu_finops.model import dra

        return dra.node_cards(dra.installed(self.resource_slices()))

    def gpu_nodes(self) -> list[GpuNode]:
        dra_cards = self.dra_cards()
        facts = [node_facts(n, dra_cards.get(n.metadata.name)) for n in self.core_v1.list_node().items]
        return [f for f in facts if f.gpu_count > 0]


def node_facts_from_dict(obj: dict[str, Any]) -> GpuNode:
    """GpuNode from a node as `kubectl get nodes -o json` prints it (camelCase keys)."""
    meta, status, spec = obj.get("metadata", {}), obj.get("status", {}) or {}, obj.get("spec", {}) or {}
    labels = dict(meta.get("labels") or {})
    capacity = status.get("capacity") or {}
    physical = labels.get(LABEL_GPU_COUNT)
    raw = str(capacity.get(GPU_RESOURCE, "0"))
    if not (physical and physical.isdigit()) and not raw.isdigit():
        raise ValueError(
            f"node {meta.get('name')!r}: {GPU_RESOURCE} capacity {raw[:40]!r} is not a whole number"
        )
    gpu_count = physical_cards(meta.get("name"), labels, capacity)
    created = timestamps.parse(meta.get("creationTimestamp") or None)
    if created is None:
        raise ValueError(f"node {meta.get('name')!r} has no metadata.creationTimestamp")
    capacity_type, capacity_source = capacity_type_of(labels)
    return GpuNode(
        name=meta["name"],
        instance_type=labels.get(LABEL_INSTANCE_TYPE),
        capacity_type=capacity_type,
        capacity_source=capacity_source,
        zone=labels.get(LABEL_ZONE),
        nodepool=labels.get(LABEL_NODEPOOL),
        instance_id=instance_id_from_provider_id(spec.get("providerID")),
        gpu_count=gpu_count,
        created=created,
        deleted=timestamps.parse(meta.get("deletionTimestamp") or None),
        labels=labels,
        capacity=dict(capacity),
        annotations=dict(meta.get("annotations") or {}),
    )


class FileNodeSource:
    """GPU nodes from a `kubectl get nodes -o json` file, re-read every cycle."""

    def __init__(self, path: str):
        self.path = path

    def gpu_nodes(self) -> list[GpuNode]:
        body = input_files.read_json(Path(self.path), "nodes file")
        file_schema.validate(NodesFile, body, self.path, "nodes file")
        facts = []
        for n, item in enumerate(body["items"], 1):
            try:
                facts.append(node_facts_from_dict(item))
            except ValueError as exc:  # a GPU count that is no number
                raise ConfigError(FILE, f"items[{n}]: {exc}", self.path, "nodes file") from None
        return [f for f in facts if f.gpu_count > 0]


class NodeMetadata(ForeignModel):
    name: Text
    creationTimestamp: AwareTime
    deletionTimestamp: AwareTime | None = None
    labels: dict[str, Text] | None = None
    annotations: dict[str, Text] | None = None


class NodeStatus(ForeignModel):
    capacity: dict[str, Text] | None = None


class NodeEntry(ForeignModel):
    metadata: NodeMetadata
    status: NodeStatus | None = None
    spec: dict[str, Any] | None = None


class NodesFile(ForeignModel):
    """The keys of `kubectl get nodes -o json` the collector reads (the others are kubectl's)."""

    items: list[NodeEntry]
