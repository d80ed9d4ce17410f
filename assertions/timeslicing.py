"""Act 4: one physical GPU becomes four schedulable replicas; four pods, each admitted by Kueue, ran on it at
once, on one GPU UUID, and each ran to success.

| clause | identity | ownership | time order | count | provenance | target |
|---|---|---|---|---|---|---|
| node_advertises_one_gpu_as_n_replicas | the node the pods ran on | the act's shared NodePool (the node's label) | as last seen; its history: created <= Ready <= the first pod's start and the last look, its NodeClaim before it (card_shares.node_history, as acts 8 and 9) | GFD count 1, replicas n, shared capacity = allocatable = n, no MIG slice | GFD labels, node status | same |
| no_whole_gpu_beside_the_replicas | the node | - | - | zero nvidia.com/gpu, capacity and allocatable | node status | same |
| each_pod_admitted_by_kueue_on_the_shared_flavor | a Workload per pod, by the pods recorded under its Job; one uid each (a re-creation or none observed fails) | each Workload the act's one tenant's, owning exactly one of the pods and running no other; every admitted snapshot on the shared ResourceFlavor (none observed fails), charging the replicas' resource there and nothing else, by the tenant's ClusterQueue | the pod's start inside a stretch its Workload was admitted (not while evicted between two); its Job unsuspended only once admitted, and seen unsuspended when pods ran | n Workloads, n pods, no pod twice | Workload snapshots | same |
| all_pods_on_that_node | pod spec.nodeName; the pods ran within the node's life (created..deleted), not on a re-created namesake | - | node created <= every start < its deletion; every run over before it | every pod | pod spec, node timestamps | same |
| all_ran_at_once | per pod | - | latest start < earliest end; each run possible and before the last look (observed_at required) | every pod Running | recorded intervals; a finished pod without a finish time fails | same |
| each_pod_got_one_replica_of_one_uuid | device ids, each a replica or a whole card (a MIG slice is no replica) | - | - | one device each, one UUID in all, no replica twice | pod-resources (local) / NVIDIA_VISIBLE_DEVICES (AWS, no replica index) | same clause, different observers |
| each_ran_to_success | per pod | - | - | every pod, none disrupted | phase, exit code 0 exactly (unobserved fails), no eviction or DisruptionTarget | same |

Workload identity is by one metadata.uid over every snapshot: a Workload seen under two uids was deleted and
re-created, and one whose uid was not observed is unproven; both fail, whatever either was admitted as.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from assertions.card_shares import node_history, other_pods_holding
from assertions.clauses import Miss, before, compose, possible, require_aware, require_not_after, stamp
from assertions.observed import NodeObs, PodObs, WorkloadObs
from assertions.verdict import Verdict
from assertions.workload_gate import one_object, ran_only_while_admitted
from gpu_finops.facts.kube_keys import (
    LABEL_GPU_COUNT,
    LABEL_GPU_REPLICAS,
    LABEL_GPU_SHARING,
    SHARED_GPU_RESOURCE,
)
from gpu_finops.model import holding, workload
from gpu_finops.model.workload import ADMITTED

# terminated or status reasons of a pod that did not run to its end (kubelet's and Kubernetes' own words)
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
    # the pods the platform ended before they ran (PodObs.ended_before_it_ran), each replaced by its Job: named
    # in the evidence, not counted; a pod that ran, crashed or was ended while running is one of `pods`
    replaced: tuple[PodObs, ...] = ()
    nodepool: str = field(kw_only=True)  # the act's shared NodePool, whose node the replicas are
    tenant: str = field(kw_only=True)  # the one tenant whose LocalQueue the act submitted every Job through

    def __post_init__(self) -> None:
        require_aware(self)
        require_not_after(self, self.observed_at)
        counted = {p.name for p in self.pods}
        for p in self.replaced:
            if p.name in counted:
                raise ValueError(
                    f"TimeSlicingObs: pod {p.name} is both counted and named replaced: a pod is one or the other"
                )
            if not p.ended_before_it_ran:
                raise ValueError(
                    f"TimeSlicingObs.replaced: pod {p.name} ({p.phase}, exit {p.exit_code}, run {p.running}) was not "
                    "ended before it ran: only such a pod is replaced; one that ran, crashed or was ended while "
                    "running is counted with `pods`"
                )


def physical(device: str) -> str:
    """The physical card behind a device id (a time-sliced replica's card)."""
    return holding.card_of(device)


def node_advertises_one_gpu_as_n_replicas(o: TimeSlicingObs) -> list[Miss]:
    n = o.node
    count = n.labels.get(LABEL_GPU_COUNT)
    per_gpu = n.labels.get(LABEL_GPU_REPLICAS)
    strategy = n.labels.get(LABEL_GPU_SHARING)
    want = f"GFD count 1, replicas {o.replicas}, time-slicing; nvidia.com/gpu.shared = {o.replicas}"
    misses = []
    if count != "1":
        misses.append(
            Miss(want, f"node {n.name} has {count} physical GPUs (GFD nvidia.com/gpu.count), expected 1")
        )
    if per_gpu != str(o.replicas) or strategy != "time-slicing":
        misses.append(
            Miss(
                want,
                f"GFD labels say replicas={per_gpu}, sharing-strategy={strategy}; expected "
                f"{o.replicas}, time-slicing",
            )
        )
    cards = int(count) if count and count.isdigit() else 0
    if n.capacity_shared != cards * o.replicas or n.capacity_shared != o.replicas:
        misses.append(
            Miss(
                want,
                f"nvidia.com/gpu.shared capacity is {n.capacity_shared}, expected {o.replicas} = "
                f"{cards} physical x {o.replicas} replicas",
            )
        )
    if n.allocatable_shared != n.capacity_shared:
        misses.append(
            Miss(
                want,
                f"nvidia.com/gpu.shared allocatable {n.allocatable_shared} != capacity "
                f"{n.capacity_shared}: the scheduler can place fewer replicas than the node "
                "advertises",
            )
        )
    if n.nodepool != o.nodepool:
        misses.append(
            Miss(want, f"node {n.name} is of NodePool {n.nodepool}, not the act's shared pool {o.nodepool}")
        )
    if n.mig_capacity:
        misses.append(
            Miss(
                want,
                f"node {n.name} also advertises MIG slices {dict(n.mig_capacity)}: its card is cut, not time-sliced",
            )
        )
    # its own history, as acts 8 and 9 hold theirs: Ready after its creation, before the pods ran
    return misses + node_history(want, n, o.pods, o.observed_at)


def no_whole_gpu_beside_the_replicas(o: TimeSlicingObs) -> list[Miss]:
    if not o.node.capacity_gpu and not o.node.allocatable_gpu:
        return []
    return [
        Miss(
            "no whole nvidia.com/gpu",
            f"node {o.node.name} still advertises {o.node.capacity_gpu} whole nvidia.com/gpu beside its replicas "
            f"({o.node.allocatable_gpu} allocatable): a card would be handed out twice",
        )
    ]


def admitted_as_the_tenant_on_the_flavor(w: WorkloadObs, flavor: str, want: str) -> list[Miss]:
    """Every admitted snapshot of the Workload: one object (uid), its tenant's ClusterQueue, the flavor seen, and
    what Kueue charged: the replicas' resource on that flavor, nothing else (a whole card charged is not a
    replica)."""
    misses = one_object(want, w)
    charged = [(SHARED_GPU_RESOURCE, flavor)]
    for s in (s for s in w.snapshots if s.is_(ADMITTED)):
        if list(s.admitted) != charged:
            misses.append(
                Miss(
                    want,
                    f"{w.name} admitted at {stamp(s.at)} charging {list(s.admitted)} (resource, flavor), not {charged}",
                )
            )
        if flavor not in s.flavors:
            misses.append(
                Miss(
                    want,
                    f"workloads admitted on another ResourceFlavor than {flavor}: {w.name} at {stamp(s.at)} "
                    f"on {list(s.flavors)}",
                )
            )
        if s.cluster_queue != w.tenant:
            misses.append(
                Miss(
                    want,
                    f"{w.name} of tenant {w.tenant} admitted at {stamp(s.at)} by ClusterQueue "
                    f"{s.cluster_queue}, not its tenant's",
                )
            )
    return misses


def each_pod_admitted_by_kueue_on_the_shared_flavor(o: TimeSlicingObs) -> list[Miss]:
    want = f"{o.replicas} pods, each of its own Workload admitted on {o.flavor} before it ran"
    misses = []
    names = [p.name for p in o.pods]
    if len(o.pods) != o.replicas or len(set(names)) != len(names):
        misses.append(Miss(want, f"{len(o.pods)} pods observed, expected {o.replicas}"))
    if len(o.workloads) != o.replicas:
        misses.append(
            Miss(want, f"{len(o.workloads)} Kueue Workloads observed for the pods, expected {o.replicas}")
        )
    strangers = [f"{w.name} ({w.tenant})" for w in o.workloads if w.tenant != o.tenant]
    if strangers:
        misses.append(
            Miss(want, f"Workloads of another tenant than {o.tenant}, whose queue the act used: {strangers}")
        )
    not_admitted = [w.name for w in o.workloads if not any(s.is_(ADMITTED) for s in w.snapshots)]
    if not_admitted:
        misses.append(Miss(want, f"workloads never admitted by Kueue: {not_admitted}"))
    for w in o.workloads:
        misses += admitted_as_the_tenant_on_the_flavor(w, o.flavor, want)
        if workload.unsuspended_before_its_pods_ran(w.snapshots, any(p.running for p in w.pods)):
            misses.append(
                Miss(
                    want,
                    f"{w.name}'s Job was never seen unsuspended, yet pods ran: they are not this Job's "
                    "admitted pods",
                )
            )
        misses += [
            Miss(want, f"{w.name}'s {v.observed}: Kueue did not gate it")
            for v in workload.suspended_until_admitted(w.snapshots)
        ]
        mine = [p.name for p in w.pods if p.name in set(names)]
        if len(mine) != 1:
            misses.append(
                Miss(want, f"workload {w.name} owns {len(mine)} of the act's pods {mine}, expected one")
            )
        extra = other_pods_holding(w, set(names))
        if extra:
            misses.append(
                Miss(
                    want,
                    f"workload {w.name} also ran pods {extra}, which hold replicas the act did not count",
                )
            )
    for p in o.pods:
        owners = [w for w in o.workloads if p.name in {q.name for q in w.pods}]
        if len(owners) != 1:
            misses.append(
                Miss(want, f"pod {p.name} belongs to {len(owners)} of the act's Workloads, expected one")
            )
            continue
        misses += ran_only_while_admitted(want, owners[0], p)
    return misses


def all_pods_on_that_node(o: TimeSlicingObs) -> list[Miss]:
    n = o.node
    elsewhere = [f"{p.name} on {p.node}" for p in o.pods if p.node != n.name]
    misses = [Miss(f"every pod on {n.name}", f"pods not on {n.name}: {elsewhere}")] if elsewhere else []
    # the node observed must be the object the pods ran on, not one re-created under its name
    alien = [
        p.name
        for p in o.pods
        if p.running is not None
        and (before(p.running.start, n.created) or (n.deleted_at and before(n.deleted_at, p.running.start)))
    ]
    outlived = [
        p.name
        for p in o.pods
        if p.running is not None
        and p.name not in alien
        and p.running.end
        and n.deleted_at
        and before(n.deleted_at, p.running.end)
    ]
    if alien:
        misses.append(
            Miss(
                f"every pod Running while node {n.name} (created {stamp(n.created)}) existed",
                f"pods {alien} ran outside node {n.name}'s life (created {stamp(n.created)}, deleted "
                f"{stamp(n.deleted_at)}): another node of that name",
            )
        )
    if outlived:
        misses.append(
            Miss(
                f"every pod's run over before node {n.name} was deleted",
                f"pods {outlived} ran until after node {n.name} was deleted at {stamp(n.deleted_at)}",
            )
        )
    return misses


def all_ran_at_once(o: TimeSlicingObs) -> list[Miss]:
    never = [p.name for p in o.pods if p.running is None]
    if never:
        return [Miss("every pod Running", f"pods never Running: {never}")]
    runs = [p.running for p in o.pods if p.running is not None]
    if not runs:
        return []
    unended = [
        p.name for p in o.pods if p.phase in ("Succeeded", "Failed") and p.running and not p.running.end
    ]
    bad = [f"{p.name}: {why}" for p in o.pods if p.running and (why := possible(p.running, o.observed_at))]
    if unended or bad:
        return [
            Miss(
                "recorded runs that really happened, each finished pod with its finish time",
                f"finished pods with no finish time {unended}; impossible runs {bad}",
            )
        ]
    now = o.observed_at
    latest_start = max(r.start for r in runs)
    earliest_end = min((r.end or now) for r in runs)
    if latest_start < earliest_end:
        return []
    return [
        Miss(
            "all Running at one moment",
            f"the pods never ran all at once: the last started "
            f"{stamp(latest_start)}, the first ended {stamp(earliest_end)}",
        )
    ]


def each_pod_got_one_replica_of_one_uuid(o: TimeSlicingObs) -> list[Miss]:
    want = "one device per pod, one GPU UUID for all, no replica handed out twice"
    misses = []
    no_device = [(p.name, p.devices) for p in o.pods if len(p.devices) != 1]
    if no_device:
        misses.append(Miss(want, f"pods without exactly one GPU device: {no_device}"))
    uuids = sorted({physical(d) for p in o.pods for d in p.devices})
    if len(uuids) > 1:
        misses.append(Miss(want, f"pods ran on {len(uuids)} GPU UUIDs {uuids}: not one GPU shared"))
    slices = sorted(
        d
        for p in o.pods
        for d in p.devices
        if holding.device(d).kind not in (holding.Kind.REPLICA, holding.Kind.WHOLE)
    )
    if slices:  # a MIG slice is a card's partition, not a time-sliced replica of it
        misses.append(
            Miss(want, f"devices {slices} are neither a replica nor a whole card: not time-slicing")
        )
    replicas = [d for p in o.pods for d in p.devices if holding.device(d).kind is holding.Kind.REPLICA]
    if len(replicas) != len(set(replicas)):
        misses.append(Miss(want, f"one replica was handed to two pods: {sorted(replicas)}"))
    whole = sorted(d for p in o.pods for d in p.devices if holding.device(d).kind is holding.Kind.WHOLE)
    if whole and replicas:  # AWS shows every pod its card's UUID, the local target each its replica: not both
        misses.append(Miss(want, f"whole-card ids {whole} beside replica ids {sorted(replicas)} on one node"))
    beyond = sorted(d for d in set(replicas) if int(holding.device(d).replica or 0) >= o.replicas)
    if beyond:
        misses.append(
            Miss(
                want,
                f"replica ids {beyond} beyond the {o.replicas} the node advertises (0..{o.replicas - 1})",
            )
        )
    return misses


def each_ran_to_success(o: TimeSlicingObs) -> list[Miss]:
    failed = [
        f"{p.name} ({p.phase}, exit {p.exit_code})"
        for p in o.pods
        if p.phase != "Succeeded" or p.exit_code != 0
    ]
    # a pod the platform disrupted, or ended by the platform or its limits, did not run to its end
    failed += [f"{p.name} ({p.not_its_own_end})" for p in o.pods if p.not_its_own_end]
    return (
        [Miss("every pod Succeeded, exit 0", f"pods that did not run to success: {failed}")] if failed else []
    )


CLAUSES = (
    node_advertises_one_gpu_as_n_replicas,
    no_whole_gpu_beside_the_replicas,
    each_pod_admitted_by_kueue_on_the_shared_flavor,
    all_pods_on_that_node,
    all_ran_at_once,
    each_pod_got_one_replica_of_one_uuid,
    each_ran_to_success,
)


def check_timeslicing(o: TimeSlicingObs) -> Verdict:
    """Act 4's claim: every clause of `CLAUSES` over the node, its pods and their Workloads."""
    uuids = sorted({physical(d) for p in o.pods for d in p.devices})
    return compose(
        CLAIM,
        f"GFD count 1, replicas {o.replicas}, time-slicing; nvidia.com/gpu.shared capacity = allocatable = "
        f"{o.replicas}; {o.replicas} Kueue-admitted pods Running together on {o.node.name}, one device each, one "
        "UUID, each Succeeded",
        CLAUSES,
        o,
        lambda: (
            f"{o.node.name}: {o.node.capacity_shared} replicas of 1 GPU; {len(o.pods)} pods ran at once on {uuids}"
        ),
        node=o.node.name,
        pods={p.name: list(p.devices) for p in o.pods},
        uuids=uuids,
        replaced_pods={p.name: p.ended_before_it_ran for p in o.replaced},
    )
