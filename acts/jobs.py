"""GPU Jobs as the acts submit them: through Kueue, suspended at creation, one GPU each."""

from __future__ import annotations

from typing import Any

from acts.gpu_workloads import vram_wait_init, workload_container
from acts.targets import Target
from gpu_finops.facts.kube_keys import (
    ANNOTATION_GPU_PROFILE,
    ANNOTATION_SM_ACTIVE,
    GPU_RESOURCE,
    LABEL_ACT_RUN,
    LABEL_NODEPOOL,
)
from harness.jobs import GPU_TOLERATION, MPS_TOLERATION, KueueJob, gpu_container

RUN_LABEL = LABEL_ACT_RUN
# kwok's pod-ready stage waits this long (read from the pod's annotation) before it starts the containers
NEVER_STARTS = "24h"


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
    resource: str = GPU_RESOURCE,
    survives_eviction: bool = False,
    profile: str | None = None,
    pool: str | None = None,
    mps: bool = False,
) -> dict[str, Any]:
    """A one-GPU Job through the tenant's LocalQueue. `resource`: a whole card (nvidia.com/gpu) or a
    time-sliced replica (nvidia.com/gpu.shared). `survives_eviction`: a pod evicted by a drain (condition
    DisruptionTarget) is not counted as a failure and the Job makes a new pod, as a workload that must live
    through a spot interruption would be written. `profile`: the workload kind the GPU simulator reports
    for the pod's card (local.sim.profiles); on AWS the workload that makes it (acts.gpu_workloads). `pool`: the
    NodePool its pods select (`karpenter.sh/nodepool`), so Kueue admits it only on that pool's flavor (the MPS
    pool's, whose resource the time-sliced flavor also covers). `mps`: its pods tolerate the MPS pool's taint,
    the one way Kueue admits a workload on the MPS flavor (infra/objects/kueue.py)."""
    pod_annotations = {}
    if t.simulated:
        # kwok's pod-complete stage: the pod stays Running this long, then Succeeds.
        pod_annotations = {
            "pod-complete.stage.kwok.x-k8s.io/delay": f"{seconds}s",
            # kwok uses the jitter when it is <= the delay, so equal values give exactly the delay
            "pod-complete.stage.kwok.x-k8s.io/jitter-delay": f"{seconds}s",
        }
    if sm_active is not None:
        pod_annotations[ANNOTATION_SM_ACTIVE] = str(sm_active)  # what the GPU simulator reports
    if profile is not None:
        pod_annotations[ANNOTATION_GPU_PROFILE] = profile
    container = one_gpu_container(t, resource)
    if not t.simulated and profile is not None:
        container = workload_container(profile, resource, seconds)  # real silicon makes the profile
    elif not t.simulated and seconds:
        # the device plugin puts the card's UUID in NVIDIA_VISIBLE_DEVICES; printed, the act can read it
        container["command"] = [
            "/bin/sh",
            "-c",
            f'echo "visible devices: $NVIDIA_VISIBLE_DEVICES" && /cuda-samples/vectorAdd && sleep {seconds}',
        ]
    job = (
        KueueJob(name, namespace)
        .queue(queue)
        .label(RUN_LABEL, run_id)
        .priority(priority)
        .pod_label(RUN_LABEL, run_id)
        .pod_annotations(pod_annotations)
        .container(container)
    )
    if survives_eviction:
        job.survives_eviction()
    if pool is not None:
        job.node_selector({LABEL_NODEPOOL: pool})
    if mps:
        job.tolerate(MPS_TOLERATION)
    return job.obj()


def one_gpu_container(t: Target, resource: str) -> dict[str, Any]:
    """The container of a one-GPU Job or pod: the target's GPU image, one `resource` requested and limited."""
    return gpu_container(t.gpu_image, 1, resource)


def gpu_pod(
    t: Target,
    name: str,
    namespace: str,
    run_id: str,
    *,
    resource: str = GPU_RESOURCE,
    profile: str | None = None,
    tolerate_gpu_taint: bool = True,
    node_affinity: list[dict[str, Any]] | None = None,
    never_starts: bool = False,
) -> dict[str, Any]:
    """A bare one-GPU pod, outside Kueue (no queue label; Kueue manages Jobs only): the scheduler alone
    decides where it runs, and it runs until deleted. `node_affinity`: required nodeSelectorTerms.
    `never_starts`: bound by the scheduler, its containers never start (see act 7): on kwok by the pod-ready
    stage's delay, on AWS by an init container waiting for VRAM room (acts.gpu_workloads). `profile`: on kwok
    the simulator's annotation; on AWS also the workload that makes that pattern on the card."""
    annotations: dict[str, str] = {}
    if profile is not None:
        annotations[ANNOTATION_GPU_PROFILE] = profile
    if never_starts and t.simulated:
        annotations["pod-ready.stage.kwok.x-k8s.io/delay"] = NEVER_STARTS
        annotations["pod-ready.stage.kwok.x-k8s.io/jitter-delay"] = NEVER_STARTS
    container = one_gpu_container(t, resource)
    if not t.simulated and profile is not None:
        container = workload_container(profile, resource, None)  # real silicon makes the profile
    elif not t.simulated:
        container["command"] = ["/bin/sh", "-c", "/cuda-samples/vectorAdd && sleep infinity"]
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [container],
        "tolerations": [GPU_TOLERATION] if tolerate_gpu_taint else [],
        "terminationGracePeriodSeconds": 5,
    }
    if never_starts and not t.simulated:
        spec["initContainers"] = [vram_wait_init(resource)]  # waits for VRAM room the card never has
    if node_affinity is not None:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": node_affinity}
            }
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {RUN_LABEL: run_id},
            "annotations": annotations,
        },
        "spec": spec,
    }
