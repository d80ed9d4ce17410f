"""A trace job as the Job the twin submits: through its tenant's LocalQueue (Kueue manages it, suspended at
creation), one pod asking for the job's whole cards, held Running for the job's wall duration by kwok's
pod-complete stage, playing its SM_ACTIVE profile on the GPU simulator.
"""

from __future__ import annotations

import re
from typing import Any

from gpu_finops.facts.kube_keys import (
    ANNOTATION_GPU_PROFILE,
    LABEL_ACT_RUN,
    LABEL_WORKLOAD_CLASS,
)
from harness.jobs import PAUSE_IMAGE, KueueJob
from twin.trace import Trace, TraceJob

RUN_LABEL = LABEL_ACT_RUN  # the pods of one replay, for the observer's watch
# kwok's pod stages (v0.8.0, kustomize/stage/pod/general) read their delays from pod annotations; kwok
# uses the jitter when it is <= the delay, so equal values give exactly the delay. pod-complete keeps the
# pod Running for the job's wall duration; pod-create and pod-ready start it at once, where their defaults
# (1 s plus up to 4 s of jitter each) would add minutes of trace time to every job at compression 60.
STAGE_DELAYS = ("pod-create", "pod-ready")
CLASS_OF = {  # trace kind + profile -> the ledger's workload class (gpu_finops/ledger/conventions.py)
    ("serving", "serving-busy"): "serving-traffic",
    ("serving", "serving-idle"): "serving-headroom",
    ("training", "training-stepping"): "training-stepping",
    ("training", "training-stalled"): "training-stepping",  # stalled by physics, stepping by declaration
}


def job_name(job: TraceJob) -> str:
    """A DNS label from the trace id (lower case, [a-z0-9-], at most 63 characters)."""
    name = re.sub(r"[^a-z0-9-]+", "-", job.id.lower()).strip("-")[:63].strip("-")
    return name or "job"


def workload_class(job: TraceJob) -> str:
    return CLASS_OF.get((job.kind, job.profile), "unclassified")


def stage_delays(complete_after: str) -> dict[str, str]:
    out = {}
    for stage, delay in [*((s, "0s") for s in STAGE_DELAYS), ("pod-complete", complete_after)]:
        out[f"{stage}.stage.kwok.x-k8s.io/delay"] = delay
        out[f"{stage}.stage.kwok.x-k8s.io/jitter-delay"] = delay
    return out


def job_object(trace: Trace, job: TraceJob, run_id: str, image: str = PAUSE_IMAGE) -> dict[str, Any]:
    wall = f"{max(trace.wall(job.duration_s), 0.001):.3f}s"
    return (
        KueueJob(job_name(job), job.tenant)
        .queue(job.tenant)
        .priority(job.priority)
        .label(RUN_LABEL, run_id)
        .pod_label(RUN_LABEL, run_id)
        .pod_label(LABEL_WORKLOAD_CLASS, workload_class(job))
        .pod_annotations({**stage_delays(wall), ANNOTATION_GPU_PROFILE: job.profile})
        .gpus(job.gpus, image=image)
        .grace(0)
        .obj()
    )
