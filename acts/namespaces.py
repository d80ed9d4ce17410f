"""The acts' per-run namespaces: one per tenant with a LocalQueue into the tenant's ClusterQueue, and their
cleanup through Kueue's normal path (moved from acts/conftest.py, which keeps the fixture)."""

from __future__ import annotations

import uuid
from typing import Any

from gpu_finops.clients.kube import Kube
from gpu_finops.facts import timeouts
from gpu_finops.facts.kube_keys import KUEUE_API, KUEUE_GROUP, KUEUE_VERSION, LABEL_ACT_RUN


def create_tenant_namespaces(kube: Kube, config: Any) -> dict[str, str]:
    """One namespace per tenant for this run, each with a LocalQueue into the tenant's ClusterQueue."""
    run = uuid.uuid4().hex[:6]
    names = {t.name: f"act-{run}-{t.name}" for t in config.tenants}
    objs = []
    for tenant, ns in names.items():
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns, "labels": {LABEL_ACT_RUN: run}},
            }
        )
        objs.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": {"name": tenant, "namespace": ns},
                "spec": {"clusterQueue": tenant},
            }
        )
    kube.apply(objs)
    local_queues_active(kube, {ns: tenant for tenant, ns in names.items()})
    return names


def local_queues_active(kube: Kube, queues: dict[str, str]) -> None:
    """Wait until Kueue reports each LocalQueue (namespace -> name) Active (its ClusterQueue known and active),
    so a Job submitted next is queued by a Kueue that has seen its queue; the last observation names each
    queue's conditions."""
    from harness.observe import said_conditions
    from harness.waits import eventually

    def conditions() -> dict[str, list[str]]:
        out = {}
        for ns, name in queues.items():
            lq = kube.custom.get_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, ns, "localqueues", name)
            out[f"{ns}/{name}"] = said_conditions(lq)
        return out

    eventually(
        conditions,
        lambda seen: all(any(c.startswith("Active=True:") for c in cs) for cs in seen.values()),
        timeout=timeouts.ADMISSION,
        interval=0.5,
        what=f"Kueue to report the LocalQueues {sorted(queues.items())} Active",
    )


def cleanup_namespaces(kube: Kube, namespaces: list[str]) -> None:
    """Delete the act's Jobs first and wait for Kueue to let go of their Workloads (so quota is released
    through Kueue's normal path), then the namespaces."""
    from harness.observe import workloads
    from harness.waits import eventually

    for ns in namespaces:
        kube.batch.delete_collection_namespaced_job(ns, propagation_policy="Background")
    eventually(
        lambda: [w["metadata"]["name"] for ns in namespaces for w in workloads(kube, ns)],
        lambda left: not left,
        timeout=timeouts.ADMISSION,
        interval=1,
        what=f"the act's Workloads gone from {namespaces}",
    )
    for ns in namespaces:
        kube.core.delete_namespace(ns, propagation_policy="Background", _request_timeout=30)
