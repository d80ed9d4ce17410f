"""The local target's controller-manager runs without the taint-eviction controller
(local/cluster/control_plane.CONTROLLERS): a pod bound to a kwok node that still carries Karpenter's
karpenter.sh/unregistered:NoExecute taint stays, where that controller would delete it at once
(TaintManagerEviction), as it did to pods bound to a node Karpenter had just registered while its cache still
held the taint."""

from __future__ import annotations

import uuid

import pytest

from gpu_finops.facts.kube_keys import LABEL_TENANT
from harness.waits import consistently, eventually
from tests.local.kwok_nodes import kwok_node

pytestmark = [pytest.mark.local, pytest.mark.timeout(300)]
HOLD_S = 15  # the taint-eviction controller deletes an untolerating pod within a second or two


def test_a_pod_on_a_node_with_the_registration_taint_is_not_evicted(local_cluster):
    from acts.namespaces import cleanup_namespaces

    kube = local_cluster.kube()
    run = uuid.uuid4().hex[:6]
    ns, node_name = f"taint-{run}", f"kwok-taint-{run}"
    node = kwok_node(node_name, "m5.large")
    node["spec"]["taints"] = [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bound", "namespace": ns},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
    }
    kube.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {LABEL_TENANT: "team-a"}}},
                node])  # fmt: skip
    try:
        kube.core.create_namespaced_pod(ns, pod)

        def look() -> tuple[str | None, list[str]]:
            pods = {p.metadata.name: p for p in kube.core.list_namespaced_pod(ns).items}
            events = [f"{e.reason}: {e.message}" for e in kube.core.list_namespaced_event(ns).items
                      if e.reason == "TaintManagerEviction"]  # fmt: skip
            p = pods.get("bound")
            return (p.status.phase if p and not p.metadata.deletion_timestamp else None), events

        eventually(look, lambda s: s[0] == "Running" or bool(s[1]), timeout=60, interval=1,
                   what=f"pod bound to {node_name} Running")  # fmt: skip
        consistently(look, lambda s: s == ("Running", []), duration=HOLD_S, interval=1,
                     what=f"pod bound to {node_name} (tainted karpenter.sh/unregistered:NoExecute) kept Running")  # fmt: skip
    finally:
        cleanup_namespaces(kube, [ns])
        kube.core.delete_node(node_name)
