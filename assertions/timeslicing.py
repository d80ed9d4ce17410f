"""Act 4: one physical GPU becomes four schedulable replicas; four pods, each admitted by Kueue, ran on it at
once, on one GPU UUID, and each ran to success."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from assertions.decide import decide
from assertions.observed import NodeObs, PodObs, WorkloadObs
from assertions.verdict import Verdict
from facts.kube_keys import LABEL_GPU_COUNT, LABEL_GPU_REPLICAS, LABEL_GPU_SHARING

CLAIM = (
    "one physical GPU advertised as four time-sliced replicas; four pods admitted by Kueue ran on it at "
    "once, all on one GPU UUID, each to success"
)


@dataclass(frozen=True)
class TimeSlicingObs:
    node: NodeObs
    pods: tuple[PodObs, ...]  # with .devices: the device ids each was given
    workloads: tuple[WorkloadObs, ...] = ()  # the Kueue Workloads of the four Jobs
    replicas: int = 4
    observed_at: datetime | None = None
    flavor: str = "gpu-shared"  # the ResourceFlavor replicas are admitted on
    replaced: dict[str, str] = field(default_factory=dict)  # pods disrupted before running -> reason


def physical(device: str) -> str:
    """GPU-uuid::replica -> GPU-uuid (the device plugin's time-sliced device id)."""
    return device.split("::", 1)[0]


def check_timeslicing(o: TimeSlicingObs) -> Verdict:
    f: list[str] = []
    n = o.node
    count = n.labels.get(LABEL_GPU_COUNT)
    per_gpu = n.labels.get(LABEL_GPU_REPLICAS)
    strategy = n.labels.get(LABEL_GPU_SHARING)
    if count != "1":
        f.append(f"node {n.name} has {count} physical GPUs (GFD nvidia.com/gpu.count), expected 1")
    if per_gpu != str(o.replicas) or strategy != "time-slicing":
        f.append(
            f"GFD labels say replicas={per_gpu}, sharing-strategy={strategy}; expected {o.replicas}, time-slicing"
        )
    cards = int(count) if count and count.isdigit() else 0
    if n.capacity_shared != cards * o.replicas or n.capacity_shared != o.replicas:
        f.append(
            f"nvidia.com/gpu.shared capacity is {n.capacity_shared}, expected {o.replicas} = {cards} physical x "
            f"{o.replicas} replicas"
        )
    if n.allocatable_shared != n.capacity_shared:
        f.append(
            f"nvidia.com/gpu.shared allocatable {n.allocatable_shared} != capacity {n.capacity_shared}: the "
            "scheduler can place fewer replicas than the node advertises"
        )
    if n.capacity_gpu:
        f.append(
            f"node {n.name} still advertises {n.capacity_gpu} whole nvidia.com/gpu beside its replicas: a "
            "card would be handed out twice"
        )
    pods = list(o.pods)
    if len(pods) != o.replicas:
        f.append(f"{len(pods)} pods observed, expected {o.replicas}")
    elsewhere = [f"{p.name} on {p.node}" for p in pods if p.node != n.name]
    if elsewhere:
        f.append(f"pods not on {n.name}: {elsewhere}")
    never = [p.name for p in pods if p.running is None]
    if never:
        f.append(f"pods never Running: {never}")
    failed = [
        f"{p.name} ({p.phase}, exit {p.exit_code})" for p in pods if p.phase != "Succeeded" or p.exit_code
    ]
    if failed:
        f.append(f"pods that did not run to success: {failed}")
    ran = [p.running for p in pods if p.running is not None]
    if pods and len(ran) == len(pods):
        now = o.observed_at or max(r.start for r in ran)
        latest_start = max(r.start for r in ran)
        earliest_end = min((r.end or now) for r in ran)
        if not latest_start < earliest_end:
            f.append(
                f"the pods never ran all at once: the last started {latest_start.isoformat()}, the first "
                f"ended {earliest_end.isoformat()}"
            )
    no_device = [p.name for p in pods if len(p.devices) != 1]
    if no_device:
        f.append(
            f"pods without exactly one GPU device: {[(p.name, p.devices) for p in pods if p.name in no_device]}"
        )
    cards_seen = sorted({physical(d) for p in pods for d in p.devices})
    if len(cards_seen) > 1:
        f.append(f"pods ran on {len(cards_seen)} GPU UUIDs {cards_seen}: not one GPU shared")
    replicas_seen = [d for p in pods for d in p.devices if "::" in d]
    if len(replicas_seen) != len(set(replicas_seen)):
        f.append(f"one replica was handed to two pods: {sorted(replicas_seen)}")
    not_admitted = [w.name for w in o.workloads if not any(s.is_("Admitted") for s in w.snapshots)]
    if len(o.workloads) != o.replicas:
        f.append(f"{len(o.workloads)} Kueue Workloads observed for the pods, expected {o.replicas}")
    if not_admitted:
        f.append(f"workloads never admitted by Kueue: {not_admitted}")
    wrong_flavor = sorted(
        {
            f"{w.name}: {s.flavors}"
            for w in o.workloads
            for s in w.snapshots
            if s.flavors and o.flavor not in s.flavors
        }
    )
    if wrong_flavor:
        f.append(f"workloads admitted on another ResourceFlavor than {o.flavor}: {wrong_flavor}")
    return decide(
        CLAIM,
        f"GFD count 1, replicas {o.replicas}, time-slicing; nvidia.com/gpu.shared capacity = allocatable = "
        f"{o.replicas}; {o.replicas} Kueue-admitted pods Running together on {n.name}, one device each, one "
        "UUID, each Succeeded",
        f,
        f"{n.name}: {n.capacity_shared} replicas of 1 GPU; {len(pods)} pods ran at once on {cards_seen}",
        node=n.name,
        pods={p.name: list(p.devices) for p in pods},
        uuids=cards_seen,
        replaced_pods=o.replaced,
    )
