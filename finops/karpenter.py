"""Karpenter objects through the Kubernetes API: NodeClaims (karpenter.sh/v1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from facts.kube_keys import LABEL_NODEPOOL

GROUP, VERSION, NODECLAIMS = "karpenter.sh", "v1", "nodeclaims"


@dataclass(frozen=True)
class NodeClaimFacts:
    name: str
    nodepool: str | None
    node_name: str | None
    conditions: dict[str, str]  # type -> status
    created: str | None
    deleting: bool


def nodeclaim_facts(obj: dict[str, Any]) -> NodeClaimFacts:
    meta, status = obj.get("metadata", {}), obj.get("status", {}) or {}
    return NodeClaimFacts(
        name=meta["name"],
        nodepool=(meta.get("labels") or {}).get(LABEL_NODEPOOL),
        node_name=status.get("nodeName"),
        conditions={c["type"]: c["status"] for c in status.get("conditions", []) or []},
        created=meta.get("creationTimestamp"),
        deleting=bool(meta.get("deletionTimestamp")),
    )


class KarpenterClient:
    def __init__(self, custom_objects: Any):
        self.api = custom_objects

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None) -> KarpenterClient:
        from kubernetes import client, config

        config.load_kube_config(config_file=kubeconfig) if kubeconfig else config.load_kube_config()
        return cls(client.CustomObjectsApi())

    def nodeclaims(self) -> list[NodeClaimFacts]:
        body = self.api.list_cluster_custom_object(GROUP, VERSION, NODECLAIMS)
        return [nodeclaim_facts(item) for item in body.get("items", [])]

    def delete_nodeclaim(self, name: str) -> None:
        """Deleting the NodeClaim makes Karpenter cordon, drain and terminate its node gracefully."""
        self.api.delete_cluster_custom_object(GROUP, VERSION, NODECLAIMS, name)
