"""Act 8: one physical card cut into isolated MIG slices by the MIG manager's layout; pods of two tenants, each
admitted by Kueue for the profile it asked on the MIG flavor, ran at once on distinct slices of that one card,
each slice of the profile its pod asked; each tenant was billed its slices' share of the card, and the shares
with the card's unallocated rest sum to the card's cost for the interval.

| clause | identity | ownership | time order | count | provenance | target |
|---|---|---|---|---|---|---|
| node_cuts_one_card_by_the_layout | the node the pods ran on | - | as last seen | GFD count = cards; per profile capacity = allocatable = layout x cards; no whole card or replica beside | GFD and MIG manager labels, node status | same |
| each_pod_admitted_by_kueue_for_its_profile | a Workload per pod, one uid each | each Workload owns exactly one of the act's pods; every admitted snapshot by the pod's tenant's ClusterQueue, charged the profile the pod asked on the MIG flavor | the pod's start inside a stretch its Workload was admitted | one Workload per pod | Workload snapshots (podSetAssignments' resource -> flavor) | same |
| all_pods_on_that_node | pod spec.nodeName; within the node's life | - | node created <= every start < its deletion | every pod | pod spec, node timestamps | same |
| all_ran_at_once | per pod | - | latest start < earliest end, before the last look | every pod Running | recorded intervals | same |
| each_pod_on_its_own_slice_of_the_profile_it_asked | DCGM's (card UUID, GPU_I_ID) per pod; the kubelet's device id per pod | each slice's series name the pod (namespace, pod) | - | one slice and one device per pod, no slice or device twice, one card UUID for all | dcgm-exporter series (GPU_I_PROFILE, GPU_I_ID, UUID, pod labels); pod-resources (local) | same clause |
| each_tenant_billed_its_slices_share_of_the_card | each row's (tenant, namespace) is a tenant of the act, in its own namespace | a tenant billed only for its own pods' slices | the interval all ran at once | every tenant's row = its slices' compute slices / 7 x cards x seconds; the rows and the unallocated rest sum to the card's seconds and dollars exactly | the collector's split (gpu_finops.cost.allocation) over the collector's holdings | same |
| each_ran_to_success | per pod | - | - | every pod | phase, exit code 0 | same |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from fractions import Fraction

from assertions.clauses import Miss, compose, require_aware, stamp
from assertions.observed import NodeObs, PodObs, WorkloadObs
from assertions.timeslicing import all_pods_on_that_node, all_ran_at_once, each_ran_to_success
from assertions.verdict import Verdict
from assertions.workload_gate import one_object, ran_only_while_admitted
from gpu_finops.facts.kube_keys import (
    LABEL_GPU_COUNT,
    LABEL_MIG_CONFIG,
    LABEL_MIG_CONFIG_STATE,
    LABEL_MIG_STRATEGY,
    mig_resource,
)
from gpu_finops.model import holding, workload
from gpu_finops.model.workload import ADMITTED

CLAIM = (
    "one card cut into MIG slices; pods of two tenants, each admitted by Kueue for its profile, ran at once on "
    "distinct slices of that card, each tenant billed its slices' share, the shares summing to the card's cost"
)
UNALLOCATED = "unallocated"  # gpu_finops.cost.allocation's row for the part of a node no pod held


@dataclass(frozen=True)
class Ask:
    """What the act asked for one pod: its tenant, namespace and MIG profile."""

    tenant: str
    namespace: str
    profile: str


@dataclass(frozen=True)
class SliceSeries:
    """One GPU instance's series as dcgm-exporter labels it: its card (UUID), GPU_I_ID, GPU_I_PROFILE and the
    pod the exporter mapped it to."""

    namespace: str
    pod: str
    card: str
    instance: str
    profile: str
    hostname: str  # the node the exporter runs on (its `hostname` label)


@dataclass(frozen=True)
class Billed:
    """One row of the collector's split of the node-interval: a (tenant, namespace), or the unallocated rest."""

    tenant: str
    namespace: str | None
    gpu_seconds: Fraction
    usd: Decimal


@dataclass(frozen=True)
class MigObs:
    node: NodeObs
    layout: dict[str, int]  # the MIG devices the configured layout cuts per card
    cards: int  # the physical cards the node's instance type has
    asks: dict[str, Ask]  # pod -> what the act asked for it
    pods: tuple[PodObs, ...]
    workloads: tuple[WorkloadObs, ...] = ()
    slices: tuple[SliceSeries, ...] = ()
    billed: tuple[Billed, ...] = ()
    interval_s: Fraction = Fraction(0)  # the node-interval the split is over (all pods Running)
    card_usd: Decimal = Decimal(0)  # the node's cost for that interval
    layout_name: str = "all-balanced"
    jobs: int = 0  # the one-slice Jobs the act submitted: each must have its pod among the asks
    flavor: str = "gpu-mig"
    observed_at: datetime | None = None
    replaced: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_aware(self)


def node_cuts_one_card_by_the_layout(o: MigObs) -> list[Miss]:
    n = o.node
    want_cap = {mig_resource(p): c * o.cards for p, c in sorted(o.layout.items())}
    want = (
        f"{o.cards} card(s) cut by {o.layout_name} under the mixed strategy, the MIG manager done: "
        f"{want_cap} in capacity and allocatable, no whole card or replica beside"
    )
    misses = []
    count = n.labels.get(LABEL_GPU_COUNT)
    if count != str(o.cards):
        misses.append(
            Miss(
                want,
                f"node {n.name} has {count} physical GPUs (GFD nvidia.com/gpu.count), expected {o.cards}",
            )
        )
    got = {
        "strategy": n.labels.get(LABEL_MIG_STRATEGY),
        "layout": n.labels.get(LABEL_MIG_CONFIG),
        "state": n.labels.get(LABEL_MIG_CONFIG_STATE),
    }
    expected = {"strategy": "mixed", "layout": o.layout_name, "state": "success"}
    if got != expected:
        misses.append(Miss(want, f"node {n.name}'s MIG labels are {got}, expected {expected}"))
    if n.mig_capacity != want_cap:
        misses.append(
            Miss(want, f"node {n.name} advertises {n.mig_capacity} in capacity, expected {want_cap}")
        )
    if n.mig_allocatable != n.mig_capacity:
        misses.append(
            Miss(
                want,
                f"node {n.name}'s MIG allocatable {n.mig_allocatable} != its capacity {n.mig_capacity}: the "
                "scheduler can place fewer slices than the node advertises",
            )
        )
    beside = {
        k: v
        for k, v in {
            "nvidia.com/gpu capacity": n.capacity_gpu,
            "nvidia.com/gpu allocatable": n.allocatable_gpu,
            "nvidia.com/gpu.shared capacity": n.capacity_shared,
        }.items()
        if v
    }
    if beside:
        misses.append(
            Miss(want, f"node {n.name} also advertises {beside}: a card handed out whole beside its slices")
        )
    return misses


def each_pod_admitted_by_kueue_for_its_profile(o: MigObs) -> list[Miss]:
    want = f"{len(o.asks)} pods, each of its own Workload, admitted by its tenant's ClusterQueue for the profile it asked on {o.flavor}"
    misses = []
    if len(o.asks) != o.jobs:
        misses.append(Miss(want, f"{o.jobs} Jobs submitted, {len(o.asks)} of them with a pod observed"))
    names = [p.name for p in o.pods]
    if sorted(names) != sorted(o.asks):
        misses.append(Miss(want, f"pods observed {sorted(names)}, the act asked for {sorted(o.asks)}"))
    if len(o.workloads) != len(o.asks):
        misses.append(
            Miss(want, f"{len(o.workloads)} Kueue Workloads observed for the pods, expected {len(o.asks)}")
        )
    for w in o.workloads:
        misses += one_object(want, w)
        mine = [p.name for p in w.pods if p.name in o.asks]
        if len(mine) != 1:
            misses.append(
                Miss(want, f"workload {w.name} owns {len(mine)} of the act's pods {mine}, expected one")
            )
            continue
        ask = o.asks[mine[0]]
        admitted = [s for s in w.snapshots if s.is_(ADMITTED)]
        if not admitted:
            misses.append(Miss(want, f"workload {w.name} of pod {mine[0]} was never admitted by Kueue"))
        for s in admitted:
            if s.cluster_queue != ask.tenant:
                misses.append(
                    Miss(
                        want,
                        f"{w.name} of pod {mine[0]} (tenant {ask.tenant}) admitted at {stamp(s.at)} by ClusterQueue "
                        f"{s.cluster_queue}, not its tenant's",
                    )
                )
            charged = (mig_resource(ask.profile), o.flavor)
            if list(s.admitted) != [charged]:
                misses.append(
                    Miss(
                        want,
                        f"{w.name} of pod {mine[0]}, which asked {mig_resource(ask.profile)}, admitted at "
                        f"{stamp(s.at)} as {list(s.admitted)} (resource, flavor), not {[charged]}",
                    )
                )
        misses += [
            Miss(want, f"{w.name}'s {v.observed}: Kueue did not gate it")
            for v in workload.suspended_until_admitted(w.snapshots)
        ]
        misses += ran_only_while_admitted(want, w, next(p for p in w.pods if p.name == mine[0]))
    owners = {p: [w.name for w in o.workloads if p in {q.name for q in w.pods}] for p in o.asks}
    misses += [
        Miss(want, f"pod {p} belongs to {len(ws)} of the act's Workloads {ws}, expected one")
        for p, ws in owners.items()
        if len(ws) != 1
    ]
    return misses


def each_pod_on_its_own_slice_of_the_profile_it_asked(o: MigObs) -> list[Miss]:
    want = (
        "one slice per pod as DCGM reports it (card UUID, GPU_I_ID), of the profile the pod asked, all on one "
        "card; one device id per pod from the kubelet; no slice or device given twice"
    )
    misses = []
    by_pod: dict[str, list[SliceSeries]] = {}
    for s in o.slices:
        by_pod.setdefault(s.pod, []).append(s)
    for name, ask in sorted(o.asks.items()):
        seen = by_pod.get(name, [])
        if len(seen) != 1:
            misses.append(
                Miss(
                    want,
                    f"pod {name}: {len(seen)} GPU instances in DCGM's series {[(s.card, s.instance) for s in seen]}, expected one",
                )
            )
            continue
        s = seen[0]
        if s.namespace != ask.namespace:
            misses.append(
                Miss(
                    want,
                    f"pod {name}'s slice series name namespace {s.namespace}, the pod is {ask.namespace}'s",
                )
            )
        if s.profile != ask.profile:
            misses.append(
                Miss(
                    want,
                    f"pod {name} asked {ask.profile} and runs on GPU instance {s.instance} of profile {s.profile}",
                )
            )
    elsewhere = sorted(
        {f"{s.pod} on {s.hostname or 'no hostname'}" for s in o.slices if s.hostname != o.node.name}
    )
    if elsewhere:
        misses.append(Miss(want, f"slice series from another node than {o.node.name}: {elsewhere}"))
    strangers = sorted({s.pod for s in o.slices} - set(o.asks))
    if strangers:
        misses.append(Miss(want, f"slice series of pods the act did not run: {strangers}"))
    keys = [(s.card, s.instance) for s in o.slices]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        misses.append(Miss(want, f"GPU instances held by two pods at once: {twice}"))
    cards = sorted({s.card for s in o.slices})
    if len(cards) > 1:
        misses.append(
            Miss(want, f"the pods' slices are on {len(cards)} cards {cards}: not slices of one card shared")
        )
    for p in o.pods:
        if len(p.devices) != 1:
            misses.append(
                Miss(want, f"pod {p.name} was given devices {list(p.devices)}, expected one MIG slice")
            )
        elif holding.device(p.devices[0]).kind is not holding.Kind.MIG_SLICE:
            misses.append(Miss(want, f"pod {p.name} was given {p.devices[0]}, not a MIG slice's id"))
    ids = [d for p in o.pods for d in p.devices]
    if len(ids) != len(set(ids)):
        misses.append(Miss(want, f"one device id given to two pods: {sorted(ids)}"))
    return misses


def each_tenant_billed_its_slices_share_of_the_card(o: MigObs) -> list[Miss]:
    want = (
        f"over the {o.interval_s} s all ran at once: each tenant billed its slices' compute slices / 7 of the card, "
        "the rest unallocated, seconds and dollars summing to the card's exactly"
    )
    if o.interval_s <= 0:
        return [Miss(want, f"no interval to bill: {o.interval_s} s with every pod Running")]
    if not o.billed:
        return [Miss(want, "the collector's split has no rows for the node-interval")]
    expected: dict[tuple[str, str | None], Fraction] = {}
    for ask in o.asks.values():
        key = (ask.tenant, ask.namespace)
        expected[key] = (
            expected.get(key, Fraction(0))
            + holding.MigProfile.parse(ask.profile).compute_fraction * o.interval_s
        )
    card_s = o.cards * o.interval_s
    expected[(UNALLOCATED, None)] = card_s - sum(expected.values(), Fraction(0))
    got: dict[tuple[str, str | None], Fraction] = {}
    for b in o.billed:
        got[(b.tenant, b.namespace)] = got.get((b.tenant, b.namespace), Fraction(0)) + b.gpu_seconds
    if not got.get((UNALLOCATED, None)):
        got.pop((UNALLOCATED, None), None)
    if not expected[(UNALLOCATED, None)]:
        expected.pop((UNALLOCATED, None))
    misses = []
    for key in sorted(set(expected) | set(got), key=str):
        if got.get(key) != expected.get(key):
            who = "the unallocated rest" if key[0] == UNALLOCATED else f"tenant {key[0]} in {key[1]}"
            misses.append(
                Miss(
                    want,
                    f"{who} billed {_s(got.get(key))} GPU-seconds, its slices are {_s(expected.get(key))}",
                )
            )
    total = sum((b.gpu_seconds for b in o.billed), Fraction(0))
    if total != card_s:
        misses.append(
            Miss(want, f"the rows sum to {_s(total)} GPU-seconds, the card's interval is {_s(card_s)}")
        )
    usd = sum((b.usd for b in o.billed), Decimal(0))
    if usd != o.card_usd:
        misses.append(
            Miss(want, f"the rows sum to ${usd}, the card's cost for the interval is ${o.card_usd}")
        )
    return misses


def _s(x: Fraction | None) -> str:
    return "none" if x is None else f"{float(x):g}"


CLAUSES = (
    node_cuts_one_card_by_the_layout,
    each_pod_admitted_by_kueue_for_its_profile,
    all_pods_on_that_node,
    all_ran_at_once,
    each_pod_on_its_own_slice_of_the_profile_it_asked,
    each_tenant_billed_its_slices_share_of_the_card,
    each_ran_to_success,
)


def check_mig(o: MigObs) -> Verdict:
    """Act 8's claim: every clause of `CLAUSES` over the node, its pods, their Workloads, slices and bill."""
    cards = sorted({s.card for s in o.slices})
    return compose(
        CLAIM,
        f"{o.cards} card cut by {o.layout_name}; {len(o.asks)} Kueue-admitted pods of "
        f"{len({a.tenant for a in o.asks.values()})} tenants Running together on distinct slices of it, each "
        "tenant billed its slices' share, the shares summing to the card's cost, each pod Succeeded",
        CLAUSES,
        o,
        lambda: (
            f"{o.node.name}: {len(o.slices)} slices of {cards} held by {len(o.asks)} pods at once; "
            f"${sum((b.usd for b in o.billed), Decimal(0))} of ${o.card_usd} billed"
        ),
        node=o.node.name,
        slices={s.pod: [s.card, s.instance, s.profile] for s in o.slices},
        billed=[[b.tenant, b.namespace, str(b.gpu_seconds), str(b.usd)] for b in o.billed],
        replaced_pods=o.replaced,
    )
