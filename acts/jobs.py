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
) -> dict[str, Any]:
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
        "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}},
    }
    if not t.simulated and t.gpu_command is None and seconds:
        container["command"] = ["/bin/sh", "-c", f"/cuda-samples/vectorAdd && sleep {seconds}"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "suspend": True,  # Kueue unsuspends on admission (also where its mutating webhook is absent)
            "backoffLimit": 0,
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
