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
| each_pod_on_its_own_slice_of_the_profile_it_asked | DCGM's (card UUID, GPU_I_ID) per pod, a card UUID and a numeric id; the kubelet's device id per pod, a slice of its own (no replica), naming no other card than DCGM's, as the pod's reported UUID | each slice's series name the pod's namespace and the node | - | one slice and one device per pod, no slice or device twice, one card UUID for all | dcgm-exporter series (GPU_I_PROFILE, GPU_I_ID, UUID, hostname, pod labels); pod-resources (local) | same clause |
| each_tenant_billed_its_slices_share_of_the_card | each row's (tenant, namespace) once | a tenant billed only for its own pods' slices, its dollars its seconds' share of the card's | the billed interval inside the time every pod ran, before the last look | every tenant's row = its slices' compute slices / 7 x cards x seconds; no negative row; the rows and the unallocated rest sum to the card's seconds and dollars exactly | the collector's split (gpu_finops.cost.allocation) over the collector's holdings; the card's dollars its node's rate x seconds | same |
| each_ran_to_success | per pod | - | - | every pod, none disrupted | phase, exit code 0, no eviction or DisruptionTarget | same |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from assertions.clauses import Miss, compose, require_aware, stamp
from assertions.observed import NodeObs, PodObs, WorkloadObs
from assertions.timeslicing import all_pods_on_that_node, all_ran_at_once, each_ran_to_success
from assertions.verdict import Verdict
from assertions.workload_gate import one_object, ran_only_while_admitted
from gpu_finops.facts.catalog import GPU_TYPES, MIG_CARDS, mig_layouts
from gpu_finops.facts.kube_keys import (
    LABEL_GPU_COUNT,
    LABEL_INSTANCE_TYPE,
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
QUANTUM = Decimal("0.000001")  # the collector's money quantum: a row is its exact share within one


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
        bad = [f"cards {self.cards!r}"] if type(self.cards) is not int else []
        bad += [f"layout {p}: {n!r}" for p, n in self.layout.items() if type(n) is not int]
        bad += [f"ask {k}: profile {a.profile!r}" for k, a in self.asks.items() if not _profile(a.profile)]
        for b in self.billed:
            if type(b.gpu_seconds) is not Fraction or type(b.usd) is not Decimal or not b.usd.is_finite():
                bad.append(f"billed row {b.tenant}: {b.gpu_seconds!r} GPU-seconds, {b.usd!r} dollars")
        for name in ("card_usd", "usd_per_hour"):
            v = getattr(self, name)
            if type(v) is not Decimal or not v.is_finite():
                bad.append(f"{name} {v!r}")
        if bad:
            raise ValueError(
                f"MigObs: {'; '.join(bad)}: expected integer counts, MIG profiles, Fraction seconds and finite "
                "Decimal dollars"
            )

    @property
    def interval_s(self) -> Fraction:
        """The billed interval's seconds (0 when none was billed)."""
        if self.billed_from is None or self.billed_to is None:
            return Fraction(0)
        return Fraction((self.billed_to - self.billed_from) // timedelta(microseconds=1), 10**6)


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
    if n.ready_at is None:
        misses.append(Miss(want, f"node {n.name} was never seen Ready"))
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
    misses = []
    if len(o.asks) != o.jobs:
        misses.append(Miss(want, f"{o.jobs} Jobs submitted, {len(o.asks)} of them with a pod observed"))
    names = [p.name for p in o.pods]
    if sorted(names) != sorted(o.asks):
        misses.append(Miss(want, f"pods observed {sorted(names)}, the act asked for {sorted(o.asks)}"))
    spaces: dict[str, set[str]] = {}
    for a in o.asks.values():
        spaces.setdefault(a.tenant, set()).add(a.namespace)
    shared = sorted(
        ns for ns in {a.namespace for a in o.asks.values()} if sum(ns in v for v in spaces.values()) > 1
    )
    if len(spaces) < 2 or any(len(v) != 1 for v in spaces.values()) or shared:
        misses.append(
            Miss(want, f"tenants and their namespaces: { {t: sorted(v) for t, v in sorted(spaces.items())} }")
        )
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


def _admitted_for_its_profile(o: MigObs, w: WorkloadObs, want: str, by_name: dict[str, PodObs]) -> list[Miss]:
    """One Workload: one object, one of the act's pods (the same observation of it), its tenant's, admitted
    by its tenant's ClusterQueue for the pod's profile on the MIG flavor, its pod gated by the admission."""
    misses: list[Miss] = []
    misses += one_object(want, w)
    mine = [p.name for p in w.pods if p.name in o.asks]
    if len(mine) != 1:
        misses.append(
            Miss(want, f"workload {w.name} owns {len(mine)} of the act's pods {mine}, expected one")
        )
        return misses
    ask = o.asks[mine[0]]
    pod = next(p for p in w.pods if p.name == mine[0])
    if by_name.get(pod.name) != pod:
        misses.append(
            Miss(want, f"two observations of pod {pod.name} disagree: {by_name.get(pod.name)} and {pod}")
        )
    extra = [p.name for p in w.pods if p.name not in o.asks and p.disruption is None and not p.evicted]
    if extra:
        misses.append(
            Miss(want, f"workload {w.name} also ran pods {extra}, which hold slices the act did not ask")
        )
    if w.tenant != ask.tenant:
        misses.append(
            Miss(
                want,
                f"workload {w.name} is tenant {w.tenant}'s, its pod {pod.name} tenant {ask.tenant}'s",
            )
        )
    admitted = [s for s in w.snapshots if s.is_(ADMITTED)]
    if not admitted:
        misses.append(Miss(want, f"workload {w.name} of pod {mine[0]} was never admitted by Kueue"))
    for s in admitted:
        if s.cluster_queue != ask.tenant:
            misses.append(
                Miss(
                    want,
                    f"{w.name} of pod {mine[0]} (tenant {ask.tenant}) admitted at {stamp(s.at)} by "
                    f"ClusterQueue {s.cluster_queue}, not its tenant's",
                )
            )
        charged = (mig_resource(ask.profile), o.flavor)
        if list(s.admitted) != [charged] or not s.has_admission or set(s.flavors) != {o.flavor}:
            misses.append(
                Miss(
                    want,
                    f"{w.name} of pod {mine[0]}, which asked {mig_resource(ask.profile)}, admitted at "
                    f"{stamp(s.at)} as {list(s.admitted)} (resource, flavor) on flavors {list(s.flavors)}"
                    f"{'' if s.has_admission else ' with no status.admission'}, not {[charged]}",
                )
            )
    misses += [
        Miss(want, f"{w.name}'s {v.observed}: Kueue did not gate it")
        for v in workload.suspended_until_admitted(w.snapshots)
        + workload.unsuspended_before_its_pods_ran(w.snapshots, any(p.running for p in w.pods))
    ]
    misses += ran_only_while_admitted(want, w, pod)
    return misses


def each_pod_admitted_by_kueue_for_its_profile(o: MigObs) -> list[Miss]:
    want = (
        f"{len(o.asks)} pods of at least two tenants, each in its own namespace, each of its own Workload, admitted "
        f"by its tenant's ClusterQueue for the profile it asked on {o.flavor}, the profiles asked fitting the layout"
    )
    misses = _asks_fit(o, want)
    if len(o.workloads) != len(o.asks):
        misses.append(
            Miss(want, f"{len(o.workloads)} Kueue Workloads observed for the pods, expected {len(o.asks)}")
        )
    uids = [u for w in o.workloads for u in w.uids]
    if len(uids) != len(set(uids)):
        misses.append(Miss(want, f"two of the act's Workloads share a uid: {sorted(map(str, uids))}"))
    by_name = {p.name: p for p in o.pods}
    for w in o.workloads:
        misses += _admitted_for_its_profile(o, w, want, by_name)
    owners = {p: [w.name for w in o.workloads if p in {q.name for q in w.pods}] for p in o.asks}
    misses += [
        Miss(want, f"pod {p} belongs to {len(ws)} of the act's Workloads {ws}, expected one")
        for p, ws in owners.items()
        if len(ws) != 1
    ]
    return misses


def _own_ids(o: MigObs, want: str) -> list[Miss]:
    """The kubelet's ids: one MIG slice per pod, not a replica of one, naming (where the id or the pod names a
    card) the card DCGM puts the pod's slice on."""
    misses: list[Miss] = []
    dcgm_card = {s.pod: s.card for s in o.slices}
    for p in o.pods:
        named = [holding.device(d) for d in p.devices if _parses(d)]
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
    bad_series = sorted(
        f"{s.pod}: card {s.card!r}, GPU_I_ID {s.instance!r}"
        for s in o.slices
        if not s.instance.isdigit() or not _a_card(s.card)
    )
    if bad_series:
        misses.append(Miss(want, f"slice series that name no card UUID or GPU instance: {bad_series}"))
    misses += _own_ids(o, want)
    ids = [d for p in o.pods for d in p.devices]
    if len(ids) != len(set(ids)):
        misses.append(Miss(want, f"one device id given to two pods: {sorted(ids)}"))
    return misses


def _parses(device_id: str) -> bool:
    try:
        holding.device(device_id)
    except holding.DeviceIdError:
        return False
    return True


def _a_card(card: str) -> bool:
    """A physical card's UUID as DCGM's `UUID` label writes it (GPU-<uuid>), not a slice's or nothing."""
    return _parses(card) and holding.device(card).kind is holding.Kind.WHOLE


def _billed_while_all_ran(o: MigObs, want: str) -> list[Miss]:
    """The billed interval lies inside the time every pod ran, and before the act's last look."""
    misses: list[Miss] = []
    assert o.billed_from is not None and o.billed_to is not None
    runs = [p.running for p in o.pods if p.running is not None]
    latest = max((r.start for r in runs), default=None)
    earliest = min((r.end for r in runs if r.end is not None), default=None)
    if (
        len(runs) != len(o.pods)
        or latest is None
        or o.billed_from < latest
        or (earliest is not None and o.billed_to > earliest)
        or (o.observed_at is not None and o.billed_to > o.observed_at)
    ):
        misses.append(
            Miss(
                want,
                f"billed {stamp(o.billed_from)} to {stamp(o.billed_to)}, not inside the time every pod ran "
                f"(the last started {stamp(latest)}, the first ended {stamp(earliest)}, last look "
                f"{stamp(o.observed_at)})",
            )
        )
    return misses


def _priced(o: MigObs, want: str, card_s: Fraction) -> list[Miss]:
    """The card's dollars are its rate times its seconds, and each row's its seconds' share of them."""
    misses: list[Miss] = []
    seconds = o.interval_s  # the node's: its rate is the instance's, whatever its cards
    priced = (o.usd_per_hour * seconds.numerator / seconds.denominator / 3600).quantize(QUANTUM)
    if o.card_usd <= 0 or abs(o.card_usd - priced) > QUANTUM:
        misses.append(
            Miss(
                want,
                f"the card's ${o.card_usd} is not its node's rate ${o.usd_per_hour}/h x {_s(seconds)} s (${priced})",
            )
        )
    if card_s and o.card_usd > 0:
        off = [
            f"{b.tenant}: ${b.usd} for {_s(b.gpu_seconds)} s"
            for b in o.billed
            if abs(Fraction(b.usd) - Fraction(o.card_usd) * b.gpu_seconds / card_s) > Fraction(QUANTUM)
        ]
        if off:
            misses.append(
                Miss(want, f"rows whose dollars are not their seconds' share of ${o.card_usd}: {off}")
            )
    return misses


def each_tenant_billed_its_slices_share_of_the_card(o: MigObs) -> list[Miss]:
    want = (
        f"over the {_s(o.interval_s)} s all ran at once: each tenant billed its slices' compute slices / 7 of the "
        "card, the rest unallocated, no row negative, each row's dollars its seconds' share of the card's, the rows "
        "summing to the card's seconds and dollars exactly, the card priced at its rate"
    )
    if o.interval_s <= 0 or o.billed_from is None or o.billed_to is None:
        return [Miss(want, f"no interval to bill: {_s(o.interval_s)} s with every pod Running")]
    if not o.billed:
        return [Miss(want, "the collector's split has no rows for the node-interval")]
    misses = []
    misses += _billed_while_all_ran(o, want)
    expected: dict[tuple[str, str | None], Fraction] = {}
    for ask in o.asks.values():
        key = (ask.tenant, ask.namespace)
        expected[key] = (
            expected.get(key, Fraction(0))
            + holding.MigProfile.parse(ask.profile).compute_fraction * o.interval_s
        )
    card_s = o.cards * o.interval_s
    expected[(UNALLOCATED, None)] = card_s - sum(expected.values(), Fraction(0))
    keys = [(b.tenant, b.namespace) for b in o.billed]
    twice = sorted({str(k) for k in keys if keys.count(k) > 1})
    negative = [
        f"{b.tenant}: {_s(b.gpu_seconds)} s, ${b.usd}" for b in o.billed if b.gpu_seconds < 0 or b.usd < 0
    ]
    if twice or negative:
        misses.append(Miss(want, f"rows billed twice {twice}; negative rows {negative}"))
    got: dict[tuple[str, str | None], Fraction] = {}
    for b in o.billed:
        got[(b.tenant, b.namespace)] = got.get((b.tenant, b.namespace), Fraction(0)) + b.gpu_seconds
    if not got.get((UNALLOCATED, None)):
        got.pop((UNALLOCATED, None), None)
    if not expected[(UNALLOCATED, None)]:
        expected.pop((UNALLOCATED, None))
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
    misses += _priced(o, want, card_s)
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
