"""Act 7's set up on the real cluster: its preconditions, the waiting pods' affinities, and the waits for
each situation to be in place (moved from the act, test_07_diagnosis_names_the_cause.py, which keeps its
body and its DCGM)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from acts.jobs import gpu_job
from acts.targets import Target, pod_devices
from gpu_finops.clients.kube import Kube
from gpu_finops.facts import timeouts
from gpu_finops.facts.kube_keys import GPU_RESOURCE, LABEL_NODEPOOL, TAINT_ACT7_MAINTENANCE
from gpu_finops.model import holding, workload
from harness.observe import job_of, job_pods, workloads
from harness.waits import WaitTimeout, eventually

ACT_TAINT = {"key": TAINT_ACT7_MAINTENANCE, "value": "true", "effect": "NoSchedule"}


def tenants_with_one_card(config: Any) -> tuple[str, str]:
    """Two tenants with one whole card of quota each: both cards held, the second tenant's next Job
    waits for quota (the NodePool holds two whole-card nodes, so the quotas and the nodes agree)."""
    one = [t.name for t in config.tenants if t.gpu_quota == 1]
    shared = [t.name for t in config.tenants if t.shared_gpu_quota >= 1]
    if len(one) < 2 or not shared or shared[0] not in one:
        pytest.fail(
            f"precondition: act 7 needs two tenants with gpu_quota 1, the first with shared quota; config "
            f"has {[(t.name, t.gpu_quota, t.shared_gpu_quota) for t in config.tenants]}",
            pytrace=False,
        )
    return shared[0], next(t for t in one if t != shared[0])


def eventually_expect_nothing_holds_a_gpu(kube: Kube) -> None:
    """Precondition: no non-terminal pod anywhere asks for a GPU, so every card the act counts is its own
    (an earlier act's pods may still be stopping: they get a while to go, then the act fails naming them)."""

    def observe() -> list[str]:
        return [
            f"{p.metadata.namespace}/{p.metadata.name} ({p.status.phase} on {p.spec.node_name})"
            for p in kube.core.list_pod_for_all_namespaces().items
            if p.status.phase not in ("Succeeded", "Failed")
            and any(
                r.startswith(GPU_RESOURCE)
                for c in p.spec.containers
                for r in ((c.resources.limits or {}) if c.resources else {})
            )
        ]

    try:
        eventually(observe, lambda found: not found, timeout=timeouts.HOLDER_GONE, interval=2,
                   what="no pod holding or waiting for a GPU")  # fmt: skip
    except WaitTimeout as exc:
        pytest.fail(f"precondition: GPU pods already hold or wait for GPUs: {exc.last}", pytrace=False)


def eventually_expect_gpu_nodes_within_the_pools(kube: Kube, config: Any) -> None:
    """Precondition: no more GPU nodes than the NodePools are meant to hold (an earlier act's empty node
    is consolidated by Karpenter within its consolidateAfter), so every card the act counts is one it fills."""
    want = {config.nodepool_name: config.whole_cards // config.gpus_per_node,
            config.shared_nodepool_name: config.shared_cards}  # fmt: skip

    def observe() -> dict[str, list[str]]:
        pools: dict[str, list[str]] = {}
        for n in kube.core.list_node().items:
            pool = (n.metadata.labels or {}).get(LABEL_NODEPOOL)
            if pool in want:
                pools.setdefault(pool, []).append(n.metadata.name)
        return pools

    try:
        eventually(observe, lambda p: all(len(p.get(k, [])) <= v for k, v in want.items()),
                   timeout=timeouts.EMPTY_NODE_GONE, interval=5, what=f"GPU nodes per NodePool at most {want}")  # fmt: skip
    except WaitTimeout as exc:
        pytest.fail(
            f"precondition: more GPU nodes than the NodePools hold ({want}): {exc.last}", pytrace=False
        )


def in_pool(pool: str) -> list[dict[str, Any]]:
    return [{"matchExpressions": [{"key": LABEL_NODEPOOL, "operator": "In", "values": [pool]}]}]


def create_pod(kube: Kube, namespace: str, body: dict[str, Any]) -> None:
    kube.core.create_namespaced_pod(namespace, body)


def start_job(kube: Kube, t: Target, ns: str, queue: str, name: str, run: str, profile: str) -> str:
    # a pod the platform ends before it ran (the taint-eviction controller can still see a new node's
    # karpenter.sh/unregistered taint when the scheduler binds to it) is replaced by the Job, not a failed Job
    kube.batch.create_namespaced_job(
        ns, gpu_job(t, name, ns, queue, run, seconds=3600, profile=profile, survives_eviction=True)
    )
    return name


def job_pod_name(kube: Kube, ns: str, job: str) -> str:
    (pod,) = [p for p in job_pods(kube, ns, job) if p.phase == "Running"]
    return pod.name


def eventually_running(
    kube: Kube,
    ns_pods: str,
    pods: list[str],
    jobs: dict[str, str],
    remake: Callable[[str], None] | None = None,
) -> dict[tuple[str, str], str]:
    """Every holder Running: (namespace, pod) -> node. `jobs`: namespace -> Job. A Job's pod the platform ended
    before it ran is not counted (the Job makes another); a bare pod of `pods` gone before it ran is made again
    with `remake(name)` (it has no Job to replace it)."""

    def observe() -> dict[tuple[str, str], str | None]:
        out: dict[tuple[str, str], str | None] = {}
        listed = kube.core.list_namespaced_pod(ns_pods).items
        for p in listed:
            if p.metadata.name in pods:
                out[(ns_pods, p.metadata.name)] = p.spec.node_name if p.status.phase == "Running" else None
        if remake is not None:
            for name in sorted(set(pods) - {p.metadata.name for p in listed}):
                remake(name)
        for ns, job in jobs.items():
            for p in job_pods(kube, ns, job):
                if not p.ended_before_it_ran:
                    out[(ns, p.name)] = p.node if p.phase == "Running" else None
        return out

    seen = eventually(
        observe,
        lambda o: len(o) == len(pods) + len(jobs) and all(o.values()),
        timeout=timeouts.NODE_READY + timeouts.POD_RUNNING,
        interval=2,
        what=f"holders Running: {pods} and the pods of {list(jobs.values())}",
    )
    return {k: v for k, v in seen.items() if v}


def shared_card(t: Target, kube: Kube, ns: str, pod: str, node: str) -> str:
    """The physical card's UUID a time-sliced holder was given (a replica id is GPU-<uuid>::<replica>)."""
    devices = eventually(
        lambda: pod_devices(t, kube, ns, pod, node),
        bool,
        timeout=timeouts.UNSCHEDULABLE,
        interval=1,
        what=f"the device {ns}/{pod} was given",
    )
    return holding.card_of(devices[0])


def eventually_bound_not_started(kube: Kube, ns: str, name: str, node: str) -> None:
    def observe() -> tuple[str | None, str]:
        p = kube.core.read_namespaced_pod(name, ns)
        return p.spec.node_name, p.status.phase

    eventually(
        observe,
        lambda o: o == (node, "Pending"),
        timeout=timeouts.UNSCHEDULABLE,
        interval=1,
        what=f"{ns}/{name} bound to {node}, its containers not started",
    )


def eventually_unschedulable(kube: Kube, ns: str, name: str) -> None:
    def observe() -> tuple[str | None, str | None]:
        p = kube.core.read_namespaced_pod(name, ns)
        cond = next((c for c in p.status.conditions or () if c.type == "PodScheduled"), None)
        return p.spec.node_name, (f"{cond.status} {cond.reason}" if cond else None)

    eventually(
        observe,
        lambda o: o == (None, "False Unschedulable"),
        timeout=timeouts.UNSCHEDULABLE,
        interval=1,
        what=f"{ns}/{name} tried by the scheduler and left unscheduled",
    )


def eventually_quota_refused(kube: Kube, ns: str, job: str) -> str:
    """The Job's Workload: QuotaReserved False, the Job suspended. Returns the Workload's name."""

    def observe() -> tuple[str | None, str | None, bool | None]:
        wl = next((w for w in workloads(kube, ns) if job_of(w) == job), None)
        if wl is None:
            return None, None, None
        qr = next(
            (
                c
                for c in (wl.get("status") or {}).get("conditions") or ()
                if c["type"] == workload.QUOTA_RESERVED
            ),
            None,
        )
        return (
            wl["metadata"]["name"],
            qr["status"] if qr else None,
            kube.batch.read_namespaced_job(job, ns).spec.suspend,
        )

    name, _, _ = eventually(
        observe,
        lambda o: o[0] is not None and o[1] == "False" and o[2] is True,
        timeout=timeouts.ADMISSION,
        interval=1,
        what=f"{ns}/{job}'s Workload QuotaReserved False, the Job suspended",
    )
    return name  # type: ignore[return-value]


def stop(kube: Kube, ns: str, *, jobs: tuple[str, ...] = (), pods: tuple[str, ...] = ()) -> None:
    """Delete Jobs (their pods go with them) or pods, and wait until their pods are gone."""
    for job in jobs:
        kube.batch.delete_namespaced_job(job, ns, propagation_policy="Background")
    for pod in pods:
        kube.core.delete_namespaced_pod(pod, ns)

    def observe() -> list[str]:
        left = [p.name for job in jobs for p in job_pods(kube, ns, job)]
        names = {p.metadata.name for p in kube.core.list_namespaced_pod(ns).items}
        return left + [p for p in pods if p in names]

    eventually(observe, lambda left: not left, timeout=timeouts.HOLDER_GONE, interval=1,
               what=f"{[*jobs, *pods]} gone from {ns}")  # fmt: skip


@contextlib.contextmanager
def tainted(kube: Kube, node: str) -> Iterator[None]:
    """The act's own NoSchedule taint on one node, for the placement situation; taken off again however
    the act ends (only it: a taint another controller added meanwhile stays)."""
    from kubernetes.client import ApiClient
    from kubernetes.client.exceptions import ApiException

    def taints() -> list[dict[str, Any]]:
        return [
            ApiClient().sanitize_for_serialization(t) for t in kube.core.read_node(node).spec.taints or ()
        ]

    kube.core.patch_node(node, {"spec": {"taints": [*taints(), ACT_TAINT]}})
    try:
        yield
    finally:
        try:
            kept = [t for t in taints() if t["key"] != ACT_TAINT["key"]]
            kube.core.patch_node(node, {"spec": {"taints": kept}})
        except ApiException as exc:  # a node Karpenter removed meanwhile took the taint with it
            if exc.status != 404:
                raise
