"""A GPU node Karpenter's kwok provider launches on the local target reports cpu, memory, pods and ephemeral
storage as its instance type's kubelet would on EKS (gpu_finops/facts/kubelet.py), so the shared NodePool's cpu limit
holds as on AWS.

The shared pool's nodes advertise nvidia.com/gpu.shared, not nvidia.com/gpu, so of its limits only cpu
counts what runs. Karpenter's kwok provider gives a node the capacity its NodeClaim requested (here only the
replicas: no cpu at all), so before the simulated kubelet reported the instance's vCPUs Karpenter counted
the pool at 0 cpu and launched a node for every pod a full node left waiting. Here: one node's replicas
plus one more pod; the node fills, the extra pod stays unschedulable, and no second shared node comes."""

from __future__ import annotations

import uuid

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from gpu_finops.facts import timeouts
from gpu_finops.facts.kube_keys import LABEL_INSTANCE_TYPE, LABEL_NODEPOOL, LABEL_TENANT
from gpu_finops.facts.kube_keys import SHARED_GPU_RESOURCE as SHARED
from gpu_finops.facts.kubelet import node_resources
from harness.waits import consistently, eventually

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(1200)]
HOLD_S = 45  # how long no second shared node may appear while a pod waits (Karpenter batches within 10 s)
KUBELET_KEYS = ("cpu", "memory", "pods", "ephemeral-storage")


def shared_nodes(kube, pool: str) -> list:
    return [n for n in kube.core.list_node().items if (n.metadata.labels or {}).get(LABEL_NODEPOOL) == pool]


def pods_by_state(kube, ns: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"running": [], "unschedulable": [], "other": []}
    for p in kube.core.list_namespaced_pod(ns).items:
        refused = any(c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
                      for c in p.status.conditions or [])  # fmt: skip
        state = "running" if p.status.phase == "Running" else "unschedulable" if refused else "other"
        out[state].append(p.metadata.name)
    return out


def figures(node, kind: str) -> dict[str, int]:
    """A node's status quantities for the kubelet's keys, as numbers (so "4" and "4000m" are one figure)."""
    have = getattr(node.status, kind) or {}
    return {k: parse_quantity(have[k]) if k in have else None for k in KUBELET_KEYS}


def test_a_karpenter_kwok_gpu_node_reports_the_eks_kubelets_figures_and_the_shared_pools_cpu_limit_holds(
    local_cluster,
):
    from acts.jobs import gpu_pod
    from acts.namespaces import cleanup_namespaces
    from acts.targets import local_target

    kube, config, target = local_cluster.kube(), local_cluster.config, local_target()
    pool = config.shared_nodepool_name
    limit_cpu = parse_quantity(config.shared_nodepool_limits["cpu"])
    vcpu = config.gpu_node_vcpu
    nodes_at_limit = int(limit_cpu) // vcpu
    assert nodes_at_limit == 1, (
        f"this test fills one shared node; the config's shared pool holds {nodes_at_limit}"
    )
    eventually(lambda: [n.metadata.name for n in shared_nodes(kube, pool)], lambda names: not names,
               timeout=timeouts.EMPTY_NODE_GONE, interval=5, what="precondition: no shared node (an empty one is consolidated)")  # fmt: skip
    replicas = config.timeslicing_replicas
    run = uuid.uuid4().hex[:6]
    ns = f"kubelet-{run}"
    kube.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns, "labels": {LABEL_TENANT: "team-a"}},
            }
        ]
    )
    try:
        names = [f"replica-{i}" for i in range(replicas)]  # one node's replicas
        for name in names:
            kube.core.create_namespaced_pod(ns, gpu_pod(target, name, ns, run, resource=SHARED))

        def replaced_then_counted() -> dict[str, list[str]]:
            # A bare pod the taint-eviction controller ends before it ran (a new node's karpenter.sh/unregistered
            # taint still in its view when the scheduler binds) has no Job to replace it: make it again.
            have = {p.metadata.name for p in kube.core.list_namespaced_pod(ns).items}
            for name in (n for n in names if n not in have):
                try:
                    kube.core.create_namespaced_pod(ns, gpu_pod(target, name, ns, run, resource=SHARED))
                except ApiException as exc:
                    if exc.status != 409:  # still being deleted: the next look makes it
                        raise
            return pods_by_state(kube, ns)

        eventually(replaced_then_counted, lambda s: len(s["running"]) == replicas,
                   timeout=timeouts.NODE_READY + timeouts.POD_RUNNING, interval=2,
                   what=f"{replicas} replicas Running on one shared node")  # fmt: skip
        # then one pod more than the pool may hold, once the node is there and reports its figures (while a
        # node is being launched, the kwok provider's NodeClaim still reports only what was requested)
        kube.core.create_namespaced_pod(ns, gpu_pod(target, f"replica-{replicas}", ns, run, resource=SHARED))
        state = eventually(lambda: pods_by_state(kube, ns), lambda s: len(s["unschedulable"]) == 1,
                           timeout=timeouts.UNSCHEDULABLE, interval=1, what="the extra pod unschedulable")  # fmt: skip
        (node,) = shared_nodes(kube, pool)
        assert node.spec.provider_id.startswith("kwok://"), node.spec.provider_id  # Karpenter's kwok provider
        want_cap, want_alloc = node_resources(node.metadata.labels[LABEL_INSTANCE_TYPE])
        assert figures(node, "capacity") == {k: parse_quantity(want_cap[k]) for k in KUBELET_KEYS}
        assert figures(node, "allocatable") == {k: parse_quantity(want_alloc[k]) for k in KUBELET_KEYS}
        assert parse_quantity(want_cap["cpu"]) == vcpu and parse_quantity(want_alloc["cpu"]) < vcpu
        # the limit holds: no second shared node while the extra pod waits, and Karpenter counts the pool full
        consistently(lambda: (len(shared_nodes(kube, pool)), pods_by_state(kube, ns)["unschedulable"]),
                     lambda seen: seen[0] == 1 and len(seen[1]) == 1, duration=HOLD_S, interval=3,
                     what=f"one shared node, {state['unschedulable']} still waiting")  # fmt: skip
        status = kube.custom.get_cluster_custom_object("karpenter.sh", "v1", "nodepools", pool).get(
            "status", {}
        )
        assert parse_quantity((status.get("resources") or {}).get("cpu", "0")) == limit_cpu, status
    finally:
        cleanup_namespaces(kube, [ns])
