"""Karpenter objects through the Kubernetes API: NodeClaims (karpenter.sh/v1). The one NodeClaim reader: the
reaper, the acts' observers (harness/observe.py) and their evidence all read through `KarpenterClient`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_finops.facts.kube_keys import LABEL_NODEPOOL
from gpu_finops.model import nodeclaim

GROUP, VERSION, NODECLAIMS = "karpenter.sh", "v1", "nodeclaims"


@dataclass(frozen=True)
class NodeClaimFacts:
    name: str
    nodepool: str | None
    node_name: str | None
    conditions: dict[str, str]  # type -> status
    created: str | None
    deleting: bool
    launched_at: str | None = None  # lastTransitionTime of Launched=True: when the instance was launched


def nodeclaim_facts(obj: dict[str, Any]) -> NodeClaimFacts:
    meta, status = obj.get("metadata", {}), obj.get("status", {}) or {}
    return NodeClaimFacts(
        name=meta["name"],
        nodepool=(meta.get("labels") or {}).get(LABEL_NODEPOOL),
        node_name=status.get("nodeName"),
        conditions=nodeclaim.statuses(status.get("conditions")),
        created=meta.get("creationTimestamp"),
        deleting=bool(meta.get("deletionTimestamp")),
        launched_at=nodeclaim.became_true(status.get("conditions"), nodeclaim.LAUNCHED),
    )


class KarpenterClient:
    def __init__(self, custom_objects: Any):
        self.api = custom_objects

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None) -> KarpenterClient:
        from kubernetes import client, config

        from gpu_finops.clients.kube import check_kubeconfig

        check_kubeconfig(kubeconfig)
        config.load_kube_config(config_file=kubeconfig) if kubeconfig else config.load_kube_config()
        return cls(client.CustomObjectsApi())

    def nodeclaim_objects(self) -> list[dict[str, Any]]:
        """Every NodeClaim as the API returns it (what a failing act keeps as evidence)."""
        return self.api.list_cluster_custom_object(GROUP, VERSION, NODECLAIMS).get("items", [])

    def nodeclaims(self) -> list[NodeClaimFacts]:
        return [nodeclaim_facts(item) for item in self.nodeclaim_objects()]

    def delete_nodeclaim(self, name: str) -> None:
        """Deleting the NodeClaim makes Karpenter cordon, drain and terminate its node gracefully."""
        self.api.delete_cluster_custom_object(GROUP, VERSION, NODECLAIMS, name)
