"""Act 8: one physical card cut into isolated MIG slices by the MIG manager's layout; pods of two tenants, each
admitted by Kueue for the profile it asked on the MIG flavor, ran at once on distinct slices of that one card,
each slice of the profile its pod asked; each tenant was billed its slices' share of the card, and the shares
with the card's unallocated rest sum to the card's cost for the interval.

| clause | identity | ownership | time order | count | provenance | target |
|---|---|---|---|---|---|---|
| node_cuts_one_card_by_the_layout | the node the pods ran on; its instance type's card count and the layout by name from the catalog | - | as last seen; seen Ready | one card (the claim's); GFD count = cards; per profile capacity = allocatable = layout x cards; no whole card, no replica in capacity or allocatable | GFD and MIG manager labels, node status, the catalog | same |
| each_pod_admitted_by_kueue_for_its_profile | a Workload per pod, one uid each, no uid shared between two; the Workload's copy of its pod the same observation as the act's | each Workload its pod's tenant's, owning one of the act's pods and no other running pod; every admitted snapshot by that tenant's ClusterQueue, with status.admission, charged the profile the pod asked on the MIG flavor alone | the pod's start inside a stretch its Workload was admitted; its Job suspended until admitted and seen unsuspended | a pod per Job; two tenants or more, a namespace each, none shared; no profile asked more often than the layout cuts | Workload snapshots (podSetAssignments' resource -> flavor) | same |
| all_pods_on_that_node | pod spec.nodeName; within the node's life | - | node created <= every start; every run over before its deletion | every pod | pod spec, node timestamps | same |
| all_ran_at_once | per pod | - | latest start < earliest end, before the last look | every pod Running | recorded intervals | same |
| each_pod_on_its_own_slice_of_the_profile_it_asked | DCGM's (card UUID, GPU_I_ID) per pod, a card UUID and a numeric id; the kubelet's device id per pod, a slice of its own (no replica), naming no other card than DCGM's, as the pod's reported UUID, and where it names its GPU instance (`MIG-<card>/<gi>/<ci>`) DCGM's GPU_I_ID, no instance to two pods | each slice's series name the pod's namespace and the node | - | one slice and one device per pod, no slice or device twice, one card UUID for all | dcgm-exporter series (GPU_I_PROFILE, GPU_I_ID, UUID, hostname, pod labels); pod-resources (local) | same clause |
| each_tenant_billed_its_slices_share_of_the_card | each row's (tenant, namespace) once | a tenant billed only for its own pods' slices, its dollars its seconds' share of the card's | the billed interval inside the time every pod ran, before the last look | every tenant's row = its slices' worth (the held-GPU model's: compute slices over those of every slice the node advertises) x cards x seconds; no negative row; the rows and the unallocated rest sum to the card's seconds and dollars exactly | the collector's split (gpu_finops.cost.allocation) over the collector's holdings; the card's dollars its node's rate x seconds | same |
| each_ran_to_success | per pod | - | - | every pod, none disrupted | phase, exit code 0, no eviction or DisruptionTarget | same |
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from fractions import Fraction

from assertions.card_shares import (
    Bill,
    Billed,
    Shares,
    billed_their_share,
    each_admitted_for_its_resource,
    model_reading,
    node_history,
    read_by_the_model,
    seconds_text,
    series_of_the_node,
    tenants_and_jobs,
)
from assertions.clauses import Miss, compose, require_aware, require_not_after
from assertions.observed import NodeObs, PodObs, WorkloadObs
from assertions.timeslicing import all_pods_on_that_node, all_ran_at_once, each_ran_to_success
from assertions.verdict import Verdict
from gpu_finops.facts.catalog import GPU_TYPES, MIG_CARDS, mig_layouts
from gpu_finops.facts.kube_keys import (
    LABEL_GPU_COUNT,
    LABEL_INSTANCE_TYPE,
    LABEL_MIG_CONFIG,
    LABEL_MIG_CONFIG_STATE,
    LABEL_MIG_STRATEGY,
    mig_resource,
)
from gpu_finops.model import holding

CLAIM = (
    "one card cut into MIG slices; pods of two tenants, each admitted by Kueue for its profile, ran at once on "
    "distinct slices of that card, each tenant billed its slices' share, the shares summing to the card's cost"
)


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
class MigObs:
    node: NodeObs
    layout: dict[str, int]  # the MIG devices the configured layout cuts per card
    cards: int  # the physical cards the node's instance type has
    asks: dict[str, Ask]  # pod -> what the act asked for it
    pods: tuple[PodObs, ...]
    workloads: tuple[WorkloadObs, ...] = ()
    slices: tuple[SliceSeries, ...] = ()
    billed: tuple[Billed, ...] = ()
    billed_from: datetime | None = None  # the node-interval the split is over, inside the time all ran
    billed_to: datetime | None = None
    card_usd: Decimal = Decimal(0)  # the node's cost for that interval
    usd_per_hour: Decimal = Decimal(0)  # the rate the collector priced the node at
    layout_name: str = "all-balanced"
    jobs: int = 0  # the one-slice Jobs the act submitted: each must have its pod among the asks
    flavor: str = "gpu-mig"
    observed_at: datetime | None = None
    replaced: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_aware(self)
        require_not_after(self, self.observed_at)
        bad = [f"cards {self.cards!r}"] if type(self.cards) is not int else []
        bad += [f"layout {p}: {n!r}" for p, n in self.layout.items() if type(n) is not int]
        bad += [f"ask {k}: profile {a.profile!r}" for k, a in self.asks.items() if not _profile(a.profile)]
        bad += self.bill.problems()
        if bad:
            raise ValueError(
                f"MigObs: {'; '.join(bad)}: expected integer counts, MIG profiles, Fraction seconds and finite "
                "Decimal dollars"
            )

    @property
    def bill(self) -> Bill:
        """The collector's split of the node-interval and the card's price for it."""
        return Bill(self.billed, self.billed_from, self.billed_to, self.card_usd, self.usd_per_hour)

    @property
    def interval_s(self) -> Fraction:
        """The billed interval's seconds (0 when none was billed)."""
        return self.bill.seconds


def _profile(name: object) -> holding.MigProfile | None:
    try:
        return holding.MigProfile.parse(name)  # type: ignore[arg-type]
    except holding.NodeGpusError:
        return None


def node_cuts_one_card_by_the_layout(o: MigObs) -> list[Miss]:
    n = o.node
    want_cap = {mig_resource(p): c * o.cards for p, c in sorted(o.layout.items())}
    want = (
        f"{o.cards} card(s) cut by {o.layout_name} under the mixed strategy, the MIG manager done: "
        f"{want_cap} in capacity and allocatable, no whole card or replica beside"
    )
    misses = []
    if o.cards != 1:
        misses.append(
            Miss(want, f"the act expects {o.cards} cards on node {n.name}: the claim is one card cut")
        )
    itype = n.labels.get(LABEL_INSTANCE_TYPE, "")
    known = GPU_TYPES.get(itype)
    layouts = mig_layouts(itype) if itype in MIG_CARDS else {}
    if known is None or known[2] != o.cards or layouts.get(o.layout_name) != o.layout or not o.layout:
        misses.append(
            Miss(
                want,
                f"node {n.name} is a {itype or 'type with no instance-type label'}: "
                f"{known[2] if known else 'unknown'} card(s), MIG layout {o.layout_name} "
                f"{layouts.get(o.layout_name) if layouts else 'none (not MIG-capable)'}; the act expected "
                f"{o.cards} card(s) cut as {o.layout}",
            )
        )
    misses += node_history(want, n, o.pods, o.observed_at)
    misses += read_by_the_model(want, n, o.cards, holding.Sharing.MIG_MIXED, holding.Kind.MIG_SLICE)
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
            "nvidia.com/gpu.shared allocatable": n.allocatable_shared,
        }.items()
        if v
    }
    if beside:
        misses.append(
            Miss(want, f"node {n.name} also advertises {beside}: a card handed out whole beside its slices")
        )
    return misses


def _asks_fit(o: MigObs, want: str) -> list[Miss]:
    """What the act asked: a pod per Job, two tenants or more each in a namespace of its own, profiles the
    layout cuts on the node's cards."""
    misses = tenants_and_jobs(want, o.asks, o.jobs, o.pods, o.replaced)
    asked: dict[str, int] = {}
    for a in o.asks.values():
        asked[a.profile] = asked.get(a.profile, 0) + 1
    over = {p: n for p, n in sorted(asked.items()) if n > o.layout.get(p, 0) * o.cards}
    if over:
        misses.append(
            Miss(
                want,
                f"asked {over} slices, more than layout {o.layout_name} cuts on {o.cards} card(s): {o.layout}",
            )
        )
    return misses


def each_pod_admitted_by_kueue_for_its_profile(o: MigObs) -> list[Miss]:
    want = (
        f"{len(o.asks)} pods of at least two tenants, each in its own namespace, each of its own Workload, admitted "
        f"by its tenant's ClusterQueue for the profile it asked on {o.flavor}, the profiles asked fitting the layout"
    )
    resource_of = {p: mig_resource(a.profile) for p, a in o.asks.items()}
    return _asks_fit(o, want) + each_admitted_for_its_resource(
        want, o.asks, resource_of, o.flavor, "slices", o.pods, o.workloads
    )


def _own_ids(o: MigObs, want: str) -> list[Miss]:
    """The kubelet's ids: one MIG slice per pod, not a replica of one, naming (where the id or the pod names a
    card) the card DCGM puts the pod's slice on."""
    misses: list[Miss] = []
    dcgm_card = {s.pod: s.card for s in o.slices}
    dcgm_instance = {s.pod: s.instance for s in o.slices}
    by_instance: dict[tuple[str | None, str], list[str]] = {}
    for p in o.pods:
        named = [holding.device(d) for d in p.devices if _parses(d)]
        for d in named:
            if d.gpu_instance is None:
                continue
            by_instance.setdefault((d.card, d.gpu_instance), []).append(p.name)
            if p.name in dcgm_instance and d.gpu_instance != dcgm_instance[p.name]:
                misses.append(
                    Miss(
                        want,
                        f"pod {p.name}'s kubelet id {d.id} names GPU instance {d.gpu_instance}, DCGM's series put it "
                        f"on GPU_I_ID {dcgm_instance[p.name]}: the two name different slices",
                    )
                )
        shared_slice = [d.id for d in named if d.replica is not None]
        if shared_slice:
            misses.append(
                Miss(want, f"pod {p.name} holds {shared_slice}: a replica of a slice, not one of its own")
            )
        other = sorted(
            {c for c in [*(d.card for d in named), p.gpu_uuid] if c and c != dcgm_card.get(p.name, c)}
        )
        if other:
            misses.append(
                Miss(
                    want, f"pod {p.name}'s own ids name card {other}, DCGM's series card {dcgm_card[p.name]}"
                )
            )
    shared = {
        f"{card} GI {gi}": names
        for (card, gi), names in sorted(by_instance.items(), key=str)
        if len(names) > 1
    }
    if shared:
        misses.append(Miss(want, f"one GPU instance given to two pods by the kubelet's ids: {shared}"))
    for p in o.pods:
        if len(p.devices) != 1:
            misses.append(
                Miss(want, f"pod {p.name} was given devices {list(p.devices)}, expected one MIG slice")
            )
        elif holding.device(p.devices[0]).kind is not holding.Kind.MIG_SLICE:
            misses.append(Miss(want, f"pod {p.name} was given {p.devices[0]}, not a MIG slice's id"))
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
    misses += series_of_the_node(want, o.slices, o.node.name, o.asks, "slice series")
    keys = [(s.card, s.instance) for s in o.slices]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        misses.append(Miss(want, f"GPU instances held by two pods at once: {twice}"))
    cards = sorted({s.card for s in o.slices})
    if len(cards) > 1:
        misses.append(
            Miss(want, f"the pods' slices are on {len(cards)} cards {cards}: not slices of one card shared")
        )
    bad_series = sorted(
        f"{s.pod}: card {s.card!r}, GPU_I_ID {s.instance!r}"
        for s in o.slices
        if not GPU_INSTANCE_ID.fullmatch(s.instance) or not _a_card(s.card)
    )
    if bad_series:
        misses.append(Miss(want, f"slice series that name no card UUID or GPU instance: {bad_series}"))
    misses += _own_ids(o, want)
    ids = [d for p in o.pods for d in p.devices]
    if len(ids) != len(set(ids)):
        misses.append(Miss(want, f"one device id given to two pods: {sorted(ids)}"))
    return misses


# DCGM's GPU_I_ID label: the GPU instance's id as NVML numbers it, in plain ASCII decimal ("01" or "¹" would let
# one instance be written two ways, and str.isdigit takes both)
GPU_INSTANCE_ID = re.compile(r"0|[1-9][0-9]*")


def _parses(device_id: str) -> bool:
    try:
        holding.device(device_id)
    except holding.DeviceIdError:
        return False
    return True


def _a_card(card: str) -> bool:
    """A physical card's UUID as DCGM's `UUID` label writes it (GPU-<uuid>), not a slice's or nothing."""
    return _parses(card) and holding.device(card).kind is holding.Kind.WHOLE


def each_tenant_billed_its_slices_share_of_the_card(o: MigObs) -> list[Miss]:
    want = (
        f"over the {seconds_text(o.interval_s)} s all ran at once: each tenant billed its slices' worth of the card "
        "(the held-GPU model's: compute slices over those of every slice the node advertises), the rest unallocated, no row negative, each row's dollars its seconds' share of the card's, the rows "
        "summing to the card's seconds and dollars exactly, the card priced at its rate"
    )
    # each slice's worth of its card as the collector prices it: the held-GPU model's reading of the node (its
    # compute slices over those of every slice the node advertises, times the cards cut)
    try:
        worth = {
            x.profile.name: x.share
            for x in model_reading(o.node).offers.values()
            if x.kind is holding.Kind.MIG_SLICE and x.profile is not None
        }
    except holding.NodeGpusError as exc:
        return [Miss(want, f"no slice's worth to bill against: the held-GPU model refuses {exc}")]
    unpriced = sorted({a.profile for a in o.asks.values()} - set(worth))
    if unpriced:
        return [
            Miss(
                want,
                f"profiles {unpriced} asked, which node {o.node.name} does not advertise: no worth to bill",
            )
        ]
    share_of = {p: worth[a.profile] for p, a in o.asks.items()}
    shares = Shares(o.asks, share_of, o.cards, "slices")
    return billed_their_share(want, o.bill, shares, o.pods, o.observed_at, o.node)


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
