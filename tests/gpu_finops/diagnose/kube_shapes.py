"""Kubernetes objects in the client's own model classes (V1Pod, V1Node, ...), and a fake `Kube` serving
them through the same list/read calls the observers make."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from kubernetes import client as k
from kubernetes.client.exceptions import ApiException

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def gpu_node(
    name: str, gpus: int = 1, *, labels=None, taints=(), ready=True, unschedulable=None, shared=False
):
    resource = "nvidia.com/gpu.shared" if shared else "nvidia.com/gpu"
    return k.V1Node(
        metadata=k.V1ObjectMeta(name=name, labels={"nvidia.com/gpu.count": str(gpus), **(labels or {})}),
        spec=k.V1NodeSpec(
            taints=[k.V1Taint(key=t[0], value=t[1], effect=t[2]) for t in taints] or None,
            unschedulable=unschedulable,
        ),
        status=k.V1NodeStatus(
            allocatable={resource: str(gpus), "cpu": "8"},
            capacity={resource: str(gpus), "cpu": "8"},
            conditions=[k.V1NodeCondition(type="Ready", status="True" if ready else "False")],
        ),
    )


def pod(
    name: str,
    ns: str = "team-a",
    *,
    gpus: int | None = 1,
    phase: str = "Pending",
    node: str | None = None,
    job: str | None = None,
    node_selector=None,
    affinity=None,
    tolerations=None,
    unschedulable_message: str | None = None,
    resource: str = "nvidia.com/gpu",
    init_gpus: int | None = None,
):
    limits = {resource: str(gpus)} if gpus else None
    conditions = None
    if unschedulable_message:
        conditions = [
            k.V1PodCondition(
                type="PodScheduled", status="False", reason="Unschedulable", message=unschedulable_message
            )
        ]
    init = None
    if init_gpus:
        init = [
            k.V1Container(
                name="warm", image="x", resources=k.V1ResourceRequirements(limits={resource: str(init_gpus)})
            )
        ]
    return k.V1Pod(
        metadata=k.V1ObjectMeta(
            name=name,
            namespace=ns,
            owner_references=[k.V1OwnerReference(api_version="batch/v1", kind="Job", name=job, uid="u")]
            if job
            else None,
        ),
        spec=k.V1PodSpec(
            node_name=node,
            node_selector=node_selector,
            affinity=affinity,
            tolerations=tolerations,
            init_containers=init,
            containers=[
                k.V1Container(
                    name="main", image="x", resources=k.V1ResourceRequirements(limits=limits, requests=None)
                )
            ],
        ),
        status=k.V1PodStatus(phase=phase, conditions=conditions),
    )


def failed_scheduling(pod_name: str, ns: str, note: str, at: datetime = T0):
    return k.EventsV1Event(
        metadata=k.V1ObjectMeta(name=f"{pod_name}.1", namespace=ns),
        event_time=at,
        reason="FailedScheduling",
        note=note,
        regarding=k.V1ObjectReference(kind="Pod", name=pod_name, namespace=ns),
        type="Warning",
    )


def job(name: str, ns: str = "team-a", suspend: bool = False):
    return k.V1Job(
        metadata=k.V1ObjectMeta(name=name, namespace=ns),
        spec=k.V1JobSpec(
            suspend=suspend,
            template=k.V1PodTemplateSpec(
                spec=k.V1PodSpec(containers=[k.V1Container(name="main", image="x")])
            ),
        ),
    )


def workload(
    name: str, job_name: str, ns: str = "team-a", *, admitted: bool, gpus: int = 1, tolerations=None
) -> dict:
    """A Kueue v1beta2 Workload as the custom objects API returns it."""
    if admitted:
        conditions = [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "Quota reserved in ClusterQueue team-a",
            },
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "message": "The workload is admitted",
            },
        ]
    else:
        conditions = [
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Pending",
                "message": "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
                "in flavor gpu, 1 more needed",
                "lastTransitionTime": "2026-11-30T12:00:00Z",
            }
        ]
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]
    }
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": ns,
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "uid": "u"}],
        },
        "spec": {
            "queueName": "team-a",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": spec}}],
        },
        "status": {"conditions": conditions},
    }


def _list(model, items, preload: bool):
    """A list as the client gives it: its model, or with _preload_content=False the JSON body as the API
    serves it (camelCase, no nulls)."""
    if preload:
        return model(items=list(items))
    body = [k.ApiClient().sanitize_for_serialization(i) for i in items]
    return SimpleNamespace(data=json.dumps({"items": body}).encode())


class _Core:
    def __init__(self, state: FakeKube):
        self.s = state

    def _check(self):
        if self.s.down:
            import urllib3

            raise urllib3.exceptions.MaxRetryError(None, "/api/v1/pods", "connection refused")

    def list_node(self, _preload_content=True):
        self._check()
        return _list(k.V1NodeList, self.s.nodes, _preload_content)

    def list_pod_for_all_namespaces(self, _preload_content=True):
        self._check()
        return _list(k.V1PodList, self.s.pods, _preload_content)

    def list_namespaced_pod(self, namespace, _preload_content=True):
        self._check()
        return _list(
            k.V1PodList, [p for p in self.s.pods if p.metadata.namespace == namespace], _preload_content
        )

    def read_namespaced_pod(self, name, namespace):
        self._check()
        for p in self.s.pods:
            if p.metadata.name == name and p.metadata.namespace == namespace:
                return p
        raise ApiException(status=404, reason="Not Found")


class _Events:
    """events.k8s.io/v1 lists. With _preload_content=False (what the observer asks) the raw JSON body, as
    the API serves it: events written through core/v1 come back without eventTime (`raw_events`)."""

    def __init__(self, state: FakeKube):
        self.s = state

    def _answer(self, items, preload: bool):
        if preload:
            return k.EventsV1EventList(items=items)
        body = [k.ApiClient().sanitize_for_serialization(e) for e in items] + list(self.s.raw_events)
        return SimpleNamespace(data=json.dumps({"items": body}).encode())

    def list_namespaced_event(self, namespace, _preload_content=True):
        items = [e for e in self.s.event_items if e.metadata.namespace == namespace]
        return self._answer(items, _preload_content)

    def list_event_for_all_namespaces(self, _preload_content=True):
        return self._answer(self.s.event_items, _preload_content)


class _Custom:
    def __init__(self, state: FakeKube):
        self.s = state

    def list_namespaced_custom_object(self, group, version, namespace, plural):
        assert (group, version, plural) == ("kueue.x-k8s.io", "v1beta2", "workloads")
        return {"items": [w for w in self.s.workloads if w["metadata"]["namespace"] == namespace]}

    def list_cluster_custom_object(self, group, version, plural):
        if group == "resource.k8s.io":  # Dynamic Resource Allocation: a 404 where the fleet serves none
            assert version == "v1" and plural in ("resourceslices", "resourceclaims", "deviceclasses"), plural
            if self.s.dra is None:
                from kubernetes.client.exceptions import ApiException

                raise ApiException(status=404, reason="Not Found")
            return {"items": list(self.s.dra.get(plural, ()))}
        assert (group, version, plural) == ("kueue.x-k8s.io", "v1beta2", "workloads")
        return {"items": list(self.s.workloads)}


class _Batch:
    def __init__(self, state: FakeKube):
        self.s = state

    def list_namespaced_job(self, namespace, _preload_content=True):
        return _list(
            k.V1JobList, [j for j in self.s.jobs if j.metadata.namespace == namespace], _preload_content
        )

    def list_job_for_all_namespaces(self, _preload_content=True):
        return _list(k.V1JobList, self.s.jobs, _preload_content)


class FakeKube:
    """Stands in for gpu_finops.clients.kube.Kube: the same .core/.events/.custom/.batch surfaces."""

    def __init__(
        self,
        *,
        nodes=(),
        pods=(),
        events=(),
        workloads=(),
        jobs=(),
        down=False,
        raw_events=(),
        paths=None,
        dra=None,
    ):
        # resource.k8s.io/v1 plural -> items (resourceslices, resourceclaims, deviceclasses); None: not served
        self.dra = dra
        # GET path -> (status, body) for get_raw (Kueue's visibility API, LocalQueues); any other path is a
        # 404 as kube-apiserver answers for an API it does not serve
        self.paths = dict(paths or {})
        self.nodes, self.pods, self.event_items = list(nodes), list(pods), list(events)
        self.raw_events = list(raw_events)  # JSON events the client's model would reject (no eventTime)
        self.workloads, self.jobs, self.down = list(workloads), list(jobs), down
        self.core, self.events = _Core(self), _Events(self)
        self.custom, self.batch = _Custom(self), _Batch(self)

    def get_raw(self, path: str, query=None) -> tuple[int, str]:
        if self.down:
            import urllib3

            raise urllib3.exceptions.MaxRetryError(None, path, "connection refused")
        return self.paths.get(path, (404, "404 page not found\n"))
