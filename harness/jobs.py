"""The one builder of the Kueue-managed GPU Jobs the acts, the twin and the tests submit, in the style of
Kueue's `MakeWorkload(...).Queue(...).Obj()` test wrappers: `KueueJob(name, ns).queue(q).gpus(1).obj()`.

Every Job it builds is suspended at creation (Kueue unsuspends it on admission, also where Kueue's mutating
webhook is absent), fails on its first failed pod (`backoffLimit: 0`: a pod the platform kills is a failed
run, never retried out of sight), never restarts a container, and tolerates the GPU nodes' taint.
"""

from __future__ import annotations

import copy
from typing import Any, Self

from gpu_finops.facts.kube_keys import GPU_RESOURCE, LABEL_PRIORITY_CLASS, LABEL_QUEUE_NAME, TAINT_MPS_POOL

GPU_TOLERATION = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
# the MPS pool's taint: a workload tolerates it to be an MPS client (Kueue's MPS flavor lists it as a nodeTaint,
# so only a workload that tolerates it is admitted there)
MPS_TOLERATION = {"key": TAINT_MPS_POOL, "operator": "Equal", "value": "true", "effect": "NoSchedule"}
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


def gpu_container(
    image: str, gpus: int = 1, resource: str = GPU_RESOURCE, name: str = "gpu"
) -> dict[str, Any]:
    """A container asking for (and limited to) `gpus` of `resource`: whole cards or time-sliced replicas."""
    return {
        "name": name,
        "image": image,
        "resources": {"limits": {resource: str(gpus)}, "requests": {resource: str(gpus)}},
    }


class KueueJob:
    """A batch/v1 Job through a tenant's LocalQueue; each method sets one thing and returns the builder."""

    def __init__(self, name: str, namespace: str):
        self._name, self._namespace = name, namespace
        self._labels: dict[str, str] = {}
        self._pod_labels: dict[str, str] = {}
        self._pod_annotations: dict[str, str] = {}
        self._containers: list[dict[str, Any]] = []
        self._grace: int = 5
        self._spec_extra: dict[str, Any] = {}
        self._pod_spec_extra: dict[str, Any] = {}
        self._tolerations: list[dict[str, Any]] = [GPU_TOLERATION]

    def queue(self, local_queue: str) -> Self:
        self._labels[LABEL_QUEUE_NAME] = local_queue
        return self

    def priority(self, priority_class: str | None) -> Self:
        if priority_class:
            self._labels[LABEL_PRIORITY_CLASS] = priority_class
        return self

    def label(self, key: str, value: str) -> Self:
        self._labels[key] = value
        return self

    def pod_label(self, key: str, value: str) -> Self:
        self._pod_labels[key] = value
        return self

    def pod_annotations(self, annotations: dict[str, str]) -> Self:
        self._pod_annotations.update(annotations)
        return self

    def container(self, container: dict[str, Any]) -> Self:
        self._containers.append(container)
        return self

    def gpus(self, n: int = 1, resource: str = GPU_RESOURCE, image: str = PAUSE_IMAGE) -> Self:
        return self.container(gpu_container(image, n, resource))

    def gpus_by_claim(self, template: str, image: str = PAUSE_IMAGE) -> Self:
        """Its pods ask GPUs through a ResourceClaimTemplate (Dynamic Resource Allocation): each pod gets a claim
        made from `template`, which its one container uses."""
        self._pod_spec_extra["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
        return self.container({"name": "main", "image": image, "resources": {"claims": [{"name": "gpu"}]}})

    def node_selector(self, selector: dict[str, str]) -> Self:
        """Its pods' nodeSelector (one no node carries keeps them Pending: a world to diagnose)."""
        self._pod_spec_extra["nodeSelector"] = dict(selector)
        return self

    def tolerate(self, toleration: dict[str, Any]) -> Self:
        """One more toleration of its pods, beside the GPU nodes' taint."""
        self._tolerations.append(dict(toleration))
        return self

    def grace(self, seconds: int) -> Self:
        """terminationGracePeriodSeconds of its pods."""
        self._grace = seconds
        return self

    def survives_eviction(self) -> Self:
        """A pod evicted by a drain (condition DisruptionTarget) is not a failure: the Job makes a new pod, as
        a workload that must live through a spot interruption would be written."""
        self._spec_extra["podFailurePolicy"] = {
            "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
        }
        return self

    def obj(self) -> dict[str, Any]:
        if not self._containers:
            raise ValueError(
                f"Job {self._namespace}/{self._name}: no container (call .gpus() or .container())"
            )
        return copy.deepcopy(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": self._name, "namespace": self._namespace, "labels": self._labels},
                "spec": {
                    "suspend": True,
                    "backoffLimit": 0,
                    **self._spec_extra,
                    "template": {
                        "metadata": {"labels": self._pod_labels, "annotations": self._pod_annotations},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": self._containers,
                            "tolerations": self._tolerations,
                            "terminationGracePeriodSeconds": self._grace,
                            **self._pod_spec_extra,
                        },
                    },
                },
            }
        )
