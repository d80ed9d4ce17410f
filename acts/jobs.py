"""GPU Jobs as the acts submit them: through Kueue, suspended at creation, one GPU each."""

from __future__ import annotations

from typing import Any

from acts.targets import Target

RUN_LABEL = "gpu-finops.io/act-run"


def gpu_job(
    t: Target,
    name: str,
    namespace: str,
    queue: str,
    run_id: str,
    *,
    seconds: int = 30,
    priority: str | None = None,
    sm_active: float | None = None,
    resource: str = "nvidia.com/gpu",
    survives_eviction: bool = False,
) -> dict[str, Any]:
    """A one-GPU Job through the tenant's LocalQueue. `resource`: a whole card (nvidia.com/gpu) or a
    time-sliced replica (nvidia.com/gpu.shared). `survives_eviction`: a pod evicted by a drain (condition
    DisruptionTarget) is not counted as a failure and the Job makes a new pod, as a workload that must live
    through a spot interruption would be written."""
    labels = {"kueue.x-k8s.io/queue-name": queue, RUN_LABEL: run_id}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = priority
    pod_annotations = {}
    if t.simulated:
        # kwok's pod-complete stage: the pod stays Running this long, then Succeeds.
        pod_annotations = {
            "pod-complete.stage.kwok.x-k8s.io/delay": f"{seconds}s",
            # kwok uses the jitter when it is <= the delay, so equal values give exactly the delay
            "pod-complete.stage.kwok.x-k8s.io/jitter-delay": f"{seconds}s",
        }
    if sm_active is not None:
        pod_annotations["gpu-finops.io/sm-active"] = str(sm_active)  # what the GPU simulator reports
    container: dict[str, Any] = {
        "name": "gpu",
        "image": t.gpu_image,
        "resources": {"limits": {resource: "1"}, "requests": {resource: "1"}},
    }
    if not t.simulated and seconds:
        # the device plugin puts the card's UUID in NVIDIA_VISIBLE_DEVICES; printed, the act can read it
        container["command"] = [
            "/bin/sh",
            "-c",
            f'echo "visible devices: $NVIDIA_VISIBLE_DEVICES" && /cuda-samples/vectorAdd && sleep {seconds}',
        ]
    spec_extra: dict[str, Any] = {}
    if survives_eviction:
        spec_extra["podFailurePolicy"] = {
            "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
        }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "suspend": True,  # Kueue unsuspends on admission (also where its mutating webhook is absent)
            "backoffLimit": 0,
            **spec_extra,
            "template": {
                "metadata": {"labels": {RUN_LABEL: run_id}, "annotations": pod_annotations},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "terminationGracePeriodSeconds": 5,
                },
            },
        },
    }
