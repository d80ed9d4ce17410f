"""Act 4: one physical GPU becomes four schedulable replicas; four pods run at once on one GPU UUID."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from assertions.decide import decide
from assertions.observed import NodeObs, PodObs
from assertions.verdict import Verdict
from facts.kube_keys import LABEL_GPU_COUNT, LABEL_GPU_REPLICAS, LABEL_GPU_SHARING

CLAIM = "one physical GPU advertised as four replicas, and four pods ran on it at once, all on one GPU UUID"


@dataclass(frozen=True)
class TimeSlicingObs:
    node: NodeObs
    pods: tuple[PodObs, ...]
    replicas: int = 4
    observed_at: datetime | None = None


def check_timeslicing(o: TimeSlicingObs) -> Verdict:
    f: list[str] = []
    n = o.node
    physical = n.labels.get(LABEL_GPU_COUNT)
    per_gpu = n.labels.get(LABEL_GPU_REPLICAS)
    strategy = n.labels.get(LABEL_GPU_SHARING)
    if physical != "1":
        f.append(f"node {n.name} has {physical} physical GPUs (GFD nvidia.com/gpu.count), expected 1")
    if per_gpu != str(o.replicas) or strategy != "time-slicing":
        f.append(
            f"GFD labels say replicas={per_gpu}, sharing-strategy={strategy}; expected {o.replicas}, time-slicing"
        )
    expected_capacity = (int(physical) if physical and physical.isdigit() else 0) * (
        int(per_gpu) if per_gpu and per_gpu.isdigit() else 0
    )
    if n.capacity_gpu != o.replicas or n.capacity_gpu != expected_capacity:
        f.append(
            f"nvidia.com/gpu capacity is {n.capacity_gpu}, expected {o.replicas} = physical x replicas "
            f"({expected_capacity})"
        )
    pods = list(o.pods)
    if len(pods) != o.replicas:
        f.append(f"{len(pods)} pods observed, expected {o.replicas}")
    elsewhere = [p.name for p in pods if p.node != n.name]
    if elsewhere:
        f.append(f"pods not on {n.name}: {elsewhere}")
    not_running = [p.name for p in pods if p.running is None]
    if not_running:
        f.append(f"pods never Running: {not_running}")
    else:
        now = o.observed_at or max(p.running.start for p in pods)  # type: ignore[union-attr]
        latest_start = max(p.running.start for p in pods)  # type: ignore[union-attr]
        if not all((p.running.end or now) > latest_start for p in pods):  # type: ignore[union-attr]
            f.append("the pods were never all Running at the same time")
    uuids = {p.gpu_uuid for p in pods}
    if None in uuids or "" in uuids:
        f.append(f"pods without a reported GPU UUID: {[p.name for p in pods if not p.gpu_uuid]}")
    if len(uuids - {None, ""}) > 1:
        f.append(
            f"pods report {len(uuids - {None, ''})} different GPU UUIDs {sorted(uuids - {None, ''})}: "
            "not one GPU shared"
        )
    return decide(
        CLAIM,
        f"capacity {o.replicas} from 1 GPU x replicas {o.replicas}; {o.replicas} pods Running "
        "together on that node, one UUID",
        f,
        f"{n.name}: capacity {n.capacity_gpu}, {len(pods)} pods concurrently on {sorted(u for u in uuids if u)}",
        node=n.name,
        pods=[p.name for p in pods],
        uuids=sorted(u for u in uuids if u),
    )
