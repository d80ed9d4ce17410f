"""Put the running local target in the fleet's shape under one policy: the fleet's Kueue objects rendered by
the addons stack's code, ClusterQueues of other tenants removed (they would lend their quota to the cohort),
NodePools removed for a static fleet (Karpenter must not add nodes the fleet file does not name), the static
kwok nodes created and waited for until the simulated device plugin advertises their GPUs."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gpu_finops.facts.errors import CheckFailed
from gpu_finops.facts.kube_keys import GPU_RESOURCE, KUEUE_GROUP, KUEUE_VERSION
from gpu_finops.model import workload
from harness.waits import WaitTimeout, eventually
from local.charts import render
from twin.fleet import NODE_PREFIX, Fleet
from twin.submit import WORKERS


class TwinError(CheckFailed):
    """A twin run that cannot go on, naming what it found and what to do: the CLI's exit 1 (the operation
    did not complete, what is left is said), never the "unexpected error" of a bug."""


NODES_READY = 300.0  # seconds for kwok to make the nodes Ready and the device plugin to advertise GPUs
NODE_READY_EACH = 0.4  # seconds more per node: the device plugin simulator patches each in turn
CLEANUP = 300.0
CLEANUP_EACH = 0.1  # seconds more per Job: the garbage collector removes each Job's pod and Workload
LEFTOVERS_GONE = 60.0  # seconds for the garbage collector to remove an earlier run's Workloads


def _delete_quietly(call: Callable[..., Any], *args: Any, **kw: Any) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        call(*args, **kw)
    except ApiException as exc:
        if exc.status != 404:
            raise


def _unfinished_workloads(kube: Any, namespaces: tuple[str, ...]) -> list[str]:
    out = []
    for ns in namespaces:
        for w in kube.custom.list_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, ns, "workloads")[
            "items"
        ]:
            conds = workload.conditions((w.get("status") or {}).get("conditions"), with_times=False)
            if not workload.is_finished(conds):
                reserved = workload.has_quota_reservation(conds)
                out.append(f"{ns}/{w['metadata']['name']} ({'holding quota' if reserved else 'waiting'})")
    return out


def expect_clean_slate(kube: Any, fleet: Fleet) -> None:
    """The run's precondition: no unfinished Workload in the tenants' namespaces (it would hold or wait for
    the quota the policy is measured on). An earlier run's are being garbage-collected after its Jobs were
    deleted, so they are waited for; anything else left fails the run naming it."""
    namespaces = tuple(t.name for t in fleet.tenants)
    try:
        eventually(
            lambda: _unfinished_workloads(kube, namespaces),
            lambda left: not left,
            timeout=LEFTOVERS_GONE,
            interval=2,
            what=f"no unfinished Workload in the tenants' namespaces {list(namespaces)}",
        )
    except WaitTimeout as exc:
        raise TwinError(
            f"the target is not a clean slate for the twin: after {LEFTOVERS_GONE:g} s these Workloads in the "
            f"tenants' namespaces are still unfinished: {exc.last}. They hold or wait for the quota the policy "
            "is measured on; delete their Jobs (or run on a fresh `local up`)"
        ) from None


def apply_policy(kube: Any, fleet: Fleet, policy: str) -> list[str]:
    """The fleet's Kueue objects under `policy`; ClusterQueues of anyone else deleted."""
    return set_queues(kube, fleet.kueue(policy))


def set_queues(kube: Any, objs: list[dict[str, Any]]) -> list[str]:
    """Apply these Kueue objects and delete every ClusterQueue they do not name (also how a test puts the
    shipped queues back: `set_queues(kube, kueue_objects(config))`)."""
    keep = {o["metadata"]["name"] for o in objs if o["kind"] == "ClusterQueue"}
    for cq in kube.custom.list_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "clusterqueues")["items"]:
        if cq["metadata"]["name"] not in keep:
            _delete_quietly(
                kube.custom.delete_cluster_custom_object,
                KUEUE_GROUP,
                KUEUE_VERSION,
                "clusterqueues",
                cq["metadata"]["name"],
            )
    return kube.apply(objs)


def apply_pools(kube: Any, fleet: Fleet) -> None:
    """A Karpenter pool only where the fleet names one (its NodePool as `local up` renders it)."""
    pools = kube.custom.list_cluster_custom_object("karpenter.sh", "v1", "nodepools")["items"]
    wanted = (
        [o for o in render.all_objects(fleet.config()) if o["kind"] == "NodePool"][:1]
        if fleet.karpenter_nodes
        else []
    )
    names = {o["metadata"]["name"] for o in wanted}
    for pool in pools:
        if pool["metadata"]["name"] not in names:
            _delete_quietly(
                kube.custom.delete_cluster_custom_object,
                "karpenter.sh",
                "v1",
                "nodepools",
                pool["metadata"]["name"],
            )
    if wanted:
        kube.apply([render.kwok_nodeclass(), *wanted])


def create_nodes(kube: Any, fleet: Fleet, echo: Callable[[str], None]) -> None:
    existing = {
        n.metadata.name for n in kube.core.list_node().items if n.metadata.name.startswith(NODE_PREFIX)
    }
    wanted = {n["metadata"]["name"]: n for n in fleet.nodes()}
    for name in sorted(existing - set(wanted)):
        _delete_quietly(kube.core.delete_node, name)

    def make(name: str, body: dict[str, Any]) -> None:
        if name in existing:
            _delete_quietly(kube.core.delete_node, name)  # a leftover of another fleet: made again, as named
        kube.core.create_node(body, _preload_content=False)
        # the kubelet's figures, also where the API server or kwok's node-initialize left its own defaults
        kube.core.patch_node_status(name, {"status": body["status"]}, _preload_content=False)

    with ThreadPoolExecutor(WORKERS, thread_name_prefix="twin-nodes") as pool:  # side by side, as the Jobs
        for done in [pool.submit(make, name, body) for name, body in wanted.items()]:
            done.result()  # the first refusal raises, naming the node in the API's answer
    echo(f"{len(wanted)} static nodes created; waiting for kwok and the device plugin")

    def advertised() -> list[str]:
        nodes = {n.metadata.name: n for n in kube.core.list_node().items if n.metadata.name in wanted}
        missing = []
        for name in wanted:
            n = nodes.get(name)
            cap = (n.status.capacity or {}) if n is not None and n.status else {}
            ready = (
                any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
                if n
                else False
            )
            if not ready or str(cap.get(GPU_RESOURCE)) != str(fleet.gpus_per_node):
                missing.append(name)
        return missing

    eventually(
        advertised,
        lambda m: not m,
        timeout=NODES_READY + NODE_READY_EACH * len(wanted),
        interval=2,
        what="static nodes Ready with GPUs advertised",
    )


def delete_run(kube: Any, fleet: Fleet, run_label: str, run_id: str) -> None:
    """The run's Jobs (their pods and Workloads with them) and the static nodes."""
    sel = f"{run_label}={run_id}"
    count = 0
    for t in fleet.tenants:  # one call per tenant: a day at fleet size is thousands of Jobs
        count += len(kube.batch.list_namespaced_job(t.name, label_selector=sel).items)
        kube.batch.delete_collection_namespaced_job(
            t.name, label_selector=sel, propagation_policy="Background"
        )

    def left() -> int:
        jobs = sum(
            len(kube.batch.list_namespaced_job(t.name, label_selector=sel).items) for t in fleet.tenants
        )
        return jobs + len(kube.core.list_pod_for_all_namespaces(label_selector=sel).items)

    # the pods too: a node made again under the same name would otherwise still count their GPUs as held
    eventually(
        left,
        lambda n: n == 0,
        timeout=CLEANUP + CLEANUP_EACH * count,
        interval=2,
        what=f"the Jobs and pods of twin run {run_id} deleted",
    )
    for n in fleet.node_names():
        _delete_quietly(kube.core.delete_node, n)
