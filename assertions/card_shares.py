"""Clause parts every act that shares one card among pods of several tenants checks alike (act 8's MIG slices,
act 9's MPS clients): what was asked (a pod per Job, two tenants or more, a namespace each), each pod admitted by
its tenant's ClusterQueue for the resource it asked on the pool's flavor, and the collector's bill of the
node-interval (each tenant its pods' share of the card, the rest unallocated, rows that sum to the card's seconds
and dollars exactly, the card priced at its rate). Each act says what a pod's share of a card is (a slice's
compute fraction, a client's 1/replicas) and what one is called in its texts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol

from assertions.clauses import Miss, before, stamp
from assertions.observed import NodeObs, PodObs, WorkloadObs
from assertions.workload_gate import one_object, ran_only_while_admitted
from gpu_finops.facts.kube_keys import GPU_RESOURCE, LABEL_INSTANCE_TYPE, SHARED_GPU_RESOURCE
from gpu_finops.model import holding, workload
from gpu_finops.model.workload import ADMITTED

UNALLOCATED = "unallocated"  # gpu_finops.cost.allocation's row for the part of a node no pod held
QUANTUM = Decimal("0.000001")  # the collector's money quantum: a row is its exact share within one


class Asked(Protocol):
    """What the act asked for one pod: at least its tenant and namespace."""

    @property
    def tenant(self) -> str: ...

    @property
    def namespace(self) -> str: ...


@dataclass(frozen=True)
class Billed:
    """One row of the collector's split of the node-interval: a (tenant, namespace), or the unallocated rest."""

    tenant: str
    namespace: str | None
    gpu_seconds: Fraction
    usd: Decimal


@dataclass(frozen=True)
class Bill:
    """The collector's split of one node-interval inside the time every pod ran, and the card's price for it."""

    rows: tuple[Billed, ...] = ()
    start: datetime | None = None
    end: datetime | None = None
    card_usd: Decimal = Decimal(0)  # the node's cost for that interval
    usd_per_hour: Decimal = Decimal(0)  # the rate the collector priced the node at

    @property
    def seconds(self) -> Fraction:
        """The billed interval's seconds (0 when none was billed)."""
        if self.start is None or self.end is None:
            return Fraction(0)
        return Fraction((self.end - self.start) // timedelta(microseconds=1), 10**6)

    def problems(self) -> list[str]:
        """Fields no clause can read: non-Fraction seconds, non-finite or non-Decimal dollars."""
        bad = [
            f"billed row {b.tenant}: {b.gpu_seconds!r} GPU-seconds, {b.usd!r} dollars"
            for b in self.rows
            if type(b.gpu_seconds) is not Fraction or type(b.usd) is not Decimal or not b.usd.is_finite()
        ]
        for name in ("card_usd", "usd_per_hour"):
            v = getattr(self, name)
            if type(v) is not Decimal or not v.is_finite():
                bad.append(f"{name} {v!r}")
        return bad


def tenants_and_jobs(
    want: str, asks: Mapping[str, Asked], jobs: int, pods: Sequence[PodObs], replaced: Mapping[str, str]
) -> list[Miss]:
    """A pod observed per Job submitted, the pods the act asked for and no other (none of them also among those
    disrupted and replaced), two tenants or more each in a namespace of its own."""
    misses = []
    both = sorted(set(replaced) & set(asks))
    if both:
        misses.append(Miss(want, f"pods counted as the act's and as disrupted and replaced: {both}"))
    if len(asks) != jobs:
        misses.append(Miss(want, f"{jobs} Jobs submitted, {len(asks)} of them with a pod observed"))
    names = [p.name for p in pods]
    if sorted(names) != sorted(asks):
        misses.append(Miss(want, f"pods observed {sorted(names)}, the act asked for {sorted(asks)}"))
    unnamed = sorted(p for p, a in asks.items() if not _named(a.tenant) or not _named(a.namespace))
    if unnamed:
        misses.append(Miss(want, f"pods asked for no named tenant or namespace: {unnamed}"))
        return misses
    spaces: dict[str, set[str]] = {}
    for a in asks.values():
        spaces.setdefault(a.tenant, set()).add(a.namespace)
    shared = sorted(
        ns for ns in {a.namespace for a in asks.values()} if sum(ns in v for v in spaces.values()) > 1
    )
    if len(spaces) < 2 or any(len(v) != 1 for v in spaces.values()) or shared:
        misses.append(
            Miss(want, f"tenants and their namespaces: { {t: sorted(v) for t, v in sorted(spaces.items())} }")
        )
    return misses


def _named(x: object) -> bool:
    return isinstance(x, str) and bool(x.strip())


def node_history(
    want: str, node: NodeObs, pods: Sequence[PodObs], observed_at: datetime | None
) -> list[Miss]:
    """The node's own history is well-formed and the act's: created <= Ready <= the last look, Ready before any
    pod of the act started there, not deleted before it was Ready."""
    n, misses = node, []
    if n.ready_at is None:
        return [Miss(want, f"node {n.name} was never seen Ready")]
    starts = [p.running.start for p in pods if p.running is not None and p.node == n.name]
    first = min(starts, default=None)
    launched = n.nodeclaim_launched_at
    if (n.nodeclaim_created is not None and before(n.created, n.nodeclaim_created)) or (
        launched is not None
        and (before(n.ready_at, launched) or (first is not None and before(first, launched)))
    ):
        misses.append(
            Miss(
                want,
                f"node {n.name} (created {stamp(n.created)}, Ready {stamp(n.ready_at)}) and its NodeClaim "
                f"{n.nodeclaim} (created {stamp(n.nodeclaim_created)}, launched {stamp(launched)}): the claim came "
                f"after the node it launched, or launched after the node was Ready or a pod ran ({stamp(first)})",
            )
        )
    if (
        before(n.ready_at, n.created)
        or (observed_at is not None and before(observed_at, n.ready_at))
        or (first is not None and before(first, n.ready_at))
        or (n.deleted_at is not None and before(n.deleted_at, n.ready_at))
    ):
        misses.append(
            Miss(
                want,
                f"node {n.name}: created {stamp(n.created)}, Ready {stamp(n.ready_at)}, deleted {stamp(n.deleted_at)}, "
                f"the first pod started {stamp(first)}, last look {stamp(observed_at)}: not Ready between its "
                "creation and the pods' start",
            )
        )
    return misses


def series_of_the_node(
    want: str, series: Sequence[Any], node: str, asks: Mapping[str, Asked], what: str
) -> list[Miss]:
    """DCGM's series the act read (each with `.pod` and `.hostname`) all come from the node's exporter and name
    only the act's pods; `what` names them in the texts ("slice series", "series")."""
    misses = []
    elsewhere = sorted({f"{s.pod} on {s.hostname or 'no hostname'}" for s in series if s.hostname != node})
    if elsewhere:
        misses.append(Miss(want, f"{what} from another node than {node}: {elsewhere}"))
    strangers = sorted({s.pod for s in series} - set(asks))
    if strangers:
        misses.append(Miss(want, f"{what} of pods the act did not run: {strangers}"))
    return misses


def model_reading(node: NodeObs) -> holding.NodeGpus:
    """The node as the one reading of a held GPU reads it (gpu_finops.model.holding.read_node, strictly): what
    each device it offers is worth of a card. Raises NodeGpusError naming the node when the model refuses it."""
    capacity = {
        k: v
        for k, v in {
            GPU_RESOURCE: node.capacity_gpu,
            SHARED_GPU_RESOURCE: node.capacity_shared,
            **node.mig_capacity,
        }.items()
        if v
    }
    return holding.read_node(node.name, node.labels, capacity)


def read_by_the_model(
    want: str, node: NodeObs, cards: int, sharing: holding.Sharing, kind: holding.Kind
) -> list[Miss]:
    """The node as the one reading of a held GPU reads it (gpu_finops.model.holding, strictly, as the collector
    and the diagnosis do): `cards` cards shared as `sharing`, every device it offers a `kind`, nothing it
    refuses (labels that contradict the capacity, a strategy the resources do not match)."""
    try:
        read = model_reading(node)
    except holding.NodeGpusError as exc:
        return [Miss(want, f"the held-GPU model refuses {exc}")]
    if (
        read.sharing is not sharing
        or read.cards != cards
        or not read.offers
        or any(o.kind is not kind for o in read.offers.values())
    ):
        return [
            Miss(
                want,
                f"the held-GPU model reads node {node.name} as {read.cards} card(s) shared by {read.sharing}, "
                f"offering { {r: str(x.kind) for r, x in read.offers.items()} }",
            )
        ]
    return []


def other_pods_holding(w: WorkloadObs, asked: set[str]) -> list[str]:
    """The Workload's pods the act did not ask for that hold what they run on (or were given): a pod that ran,
    disrupted or not, or one given devices undisrupted; one disrupted before it ran and given nothing holds
    nothing (acts 4, 8 and 9)."""
    return [
        p.name
        for p in w.pods
        if p.name not in asked
        and (p.running is not None or (p.devices and p.disruption is None and not p.evicted))
    ]


def _admitted_for_its_resource(
    want: str,
    w: WorkloadObs,
    asks: Mapping[str, Asked],
    resource_of: Mapping[str, str],
    flavor: str,
    share_name: str,
    by_name: dict[str, PodObs],
) -> list[Miss]:
    """One Workload: one object, one of the act's pods (the same observation of it), its tenant's, admitted
    by its tenant's ClusterQueue for the pod's resource on the flavor alone, its pod gated by the admission."""
    misses: list[Miss] = []
    misses += one_object(want, w)
    mine = [p.name for p in w.pods if p.name in asks]
    if len(mine) != 1:
        misses.append(
            Miss(want, f"workload {w.name} owns {len(mine)} of the act's pods {mine}, expected one")
        )
        return misses
    ask = asks[mine[0]]
    pod = next(p for p in w.pods if p.name == mine[0])
    if by_name.get(pod.name) != pod:
        misses.append(
            Miss(want, f"two observations of pod {pod.name} disagree: {by_name.get(pod.name)} and {pod}")
        )
    extra = other_pods_holding(w, set(asks))
    if extra:
        misses.append(
            Miss(
                want, f"workload {w.name} also ran pods {extra}, which hold {share_name} the act did not ask"
            )
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
    resource = resource_of[mine[0]]
    for s in admitted:
        if s.cluster_queue != ask.tenant:
            misses.append(
                Miss(
                    want,
                    f"{w.name} of pod {mine[0]} (tenant {ask.tenant}) admitted at {stamp(s.at)} by "
                    f"ClusterQueue {s.cluster_queue}, not its tenant's",
                )
            )
        charged = (resource, flavor)
        if list(s.admitted) != [charged] or not s.has_admission or set(s.flavors) != {flavor}:
            misses.append(
                Miss(
                    want,
                    f"{w.name} of pod {mine[0]}, which asked {resource}, admitted at "
                    f"{stamp(s.at)} as {list(s.admitted)} (resource, flavor) on flavors {list(s.flavors)}"
                    f"{'' if s.has_admission else ' with no status.admission'}, not {[charged]}",
                )
            )
    misses += [
        Miss(want, f"workload {w.name}: {v.observed}: Kueue did not gate it")
        for v in workload.suspended_until_admitted(w.snapshots)
        + workload.unsuspended_before_its_pods_ran(w.snapshots, any(p.running for p in w.pods))
    ]
    misses += ran_only_while_admitted(want, w, pod)
    return misses


def each_admitted_for_its_resource(
    want: str,
    asks: Mapping[str, Asked],
    resource_of: Mapping[str, str],
    flavor: str,
    share_name: str,
    pods: Sequence[PodObs],
    workloads: Sequence[WorkloadObs],
) -> list[Miss]:
    """A Workload per asked pod, no uid shared between two, each admitted for its pod's resource on `flavor`
    (`_admitted_for_its_resource`), each pod of exactly one of them."""
    misses = []
    if len(workloads) != len(asks):
        misses.append(
            Miss(want, f"{len(workloads)} Kueue Workloads observed for the pods, expected {len(asks)}")
        )
    uids = [u for w in workloads for u in w.uids]
    if len(uids) != len(set(uids)):
        misses.append(Miss(want, f"two of the act's Workloads share a uid: {sorted(map(str, uids))}"))
    by_name = {p.name: p for p in pods}
    for w in workloads:
        misses += _admitted_for_its_resource(want, w, asks, resource_of, flavor, share_name, by_name)
    owners = {p: [w.name for w in workloads if p in {q.name for q in w.pods}] for p in asks}
    misses += [
        Miss(want, f"pod {p} belongs to {len(ws)} of the act's Workloads {ws}, expected one")
        for p, ws in owners.items()
        if len(ws) != 1
    ]
    return misses


def _billed_while_all_ran(
    want: str, bill: Bill, pods: Sequence[PodObs], observed_at: datetime | None
) -> list[Miss]:
    """The billed interval lies inside the time every pod ran, and before the act's last look."""
    assert bill.start is not None and bill.end is not None
    runs = [p.running for p in pods if p.running is not None]
    latest = max((r.start for r in runs), default=None)
    earliest = min((r.end for r in runs if r.end is not None), default=None)
    if (
        len(runs) != len(pods)
        or latest is None
        or bill.start < latest
        or (earliest is not None and bill.end > earliest)
        or (observed_at is not None and bill.end > observed_at)
    ):
        return [
            Miss(
                want,
                f"billed {stamp(bill.start)} to {stamp(bill.end)}, not inside the time every pod ran "
                f"(the last started {stamp(latest)}, the first ended {stamp(earliest)}, last look "
                f"{stamp(observed_at)})",
            )
        ]
    return []


def catalog_rate(node: NodeObs) -> Decimal | None:
    """The catalog's $/h for the node's instance type and capacity type (on-demand where it has no capacity-type
    label), None where the catalog has no price for it."""
    from gpu_finops.facts.catalog import prices

    key = (node.labels.get(LABEL_INSTANCE_TYPE, ""), node.capacity_type or "on-demand")
    price = prices().get(key)
    return None if price is None else Decimal(str(price))


def _priced(want: str, bill: Bill, card_s: Fraction, node: NodeObs) -> list[Miss]:
    """The card's rate is the catalog's for its node, its dollars its rate times its seconds, and each row's
    its seconds' share of them."""
    misses: list[Miss] = []
    rate = catalog_rate(node)
    if rate is None or bill.usd_per_hour != rate:
        misses.append(
            Miss(
                want,
                f"the card priced at ${bill.usd_per_hour}/h, the catalog's rate for node {node.name} "
                f"({node.labels.get(LABEL_INSTANCE_TYPE)}, {node.capacity_type or 'on-demand'}) is "
                f"{'none' if rate is None else f'${rate}/h'}",
            )
        )
    seconds = bill.seconds  # the node's: its rate is the instance's, whatever its cards
    priced = (bill.usd_per_hour * seconds.numerator / seconds.denominator / 3600).quantize(QUANTUM)
    if bill.card_usd <= 0 or abs(bill.card_usd - priced) > QUANTUM:
        misses.append(
            Miss(
                want,
                f"the card's ${bill.card_usd} is not its node's rate ${bill.usd_per_hour}/h x {seconds_text(seconds)} s "
                f"(${priced})",
            )
        )
    if card_s and bill.card_usd > 0:
        off = [
            f"{b.tenant}: ${b.usd} for {seconds_text(b.gpu_seconds)} s"
            for b in bill.rows
            if abs(Fraction(b.usd) - Fraction(bill.card_usd) * b.gpu_seconds / card_s) > Fraction(QUANTUM)
        ]
        if off:
            misses.append(
                Miss(want, f"rows whose dollars are not their seconds' share of ${bill.card_usd}: {off}")
            )
    return misses


@dataclass(frozen=True)
class Shares:
    """What each asked pod holds of the node's cards: `share_of` pod -> cards' worth (a slice's compute part, a
    client's 1/replicas), `name` what one is called in the texts ("slices", "clients")."""

    asks: Mapping[str, Asked]
    share_of: Mapping[str, Fraction]
    cards: int
    name: str


def billed_their_share(
    want: str, bill: Bill, shares: Shares, pods: Sequence[PodObs], observed_at: datetime | None, node: NodeObs
) -> list[Miss]:
    """Each tenant billed its pods' shares of the card over the interval, the rest unallocated; no row twice or
    negative; the rows summing to the card's seconds and dollars exactly, each row's dollars its seconds' share,
    the card priced at its node's catalog rate; the interval inside the time all ran."""
    asks, share_of, cards, share_name = shares.asks, shares.share_of, shares.cards, shares.name
    if bill.seconds <= 0 or bill.start is None or bill.end is None:
        return [Miss(want, f"no interval to bill: {seconds_text(bill.seconds)} s with every pod Running")]
    if not bill.rows:
        return [Miss(want, "the collector's split has no rows for the node-interval")]
    misses = _billed_while_all_ran(want, bill, pods, observed_at)
    expected: dict[tuple[str, str | None], Fraction] = {}
    for pod, ask in asks.items():
        key = (ask.tenant, ask.namespace)
        expected[key] = expected.get(key, Fraction(0)) + share_of[pod] * bill.seconds
    card_s = cards * bill.seconds
    expected[(UNALLOCATED, None)] = card_s - sum(expected.values(), Fraction(0))
    keys = [(b.tenant, b.namespace) for b in bill.rows]
    twice = sorted({str(k) for k in keys if keys.count(k) > 1})
    negative = [
        f"{b.tenant}: {seconds_text(b.gpu_seconds)} s, ${b.usd}"
        for b in bill.rows
        if b.gpu_seconds < 0 or b.usd < 0
    ]
    if twice or negative:
        misses.append(Miss(want, f"rows billed twice {twice}; negative rows {negative}"))
    got: dict[tuple[str, str | None], Fraction] = {}
    for b in bill.rows:
        got[(b.tenant, b.namespace)] = got.get((b.tenant, b.namespace), Fraction(0)) + b.gpu_seconds
    if not got.get((UNALLOCATED, None)):
        got.pop((UNALLOCATED, None), None)
    if not expected[(UNALLOCATED, None)]:
        expected.pop((UNALLOCATED, None))
    for key in sorted(set(expected) | set(got), key=str):
        if got.get(key) != expected.get(key):
            billed = f"billed {seconds_text(got.get(key))} GPU-seconds"
            if key[0] == UNALLOCATED:
                text = f"the unallocated rest {billed}, the card less its {share_name} is {seconds_text(expected.get(key))}"
            else:
                text = f"tenant {key[0]} in {key[1]} {billed}, its {share_name} are {seconds_text(expected.get(key))}"
            misses.append(Miss(want, text))
    total = sum((b.gpu_seconds for b in bill.rows), Fraction(0))
    if total != card_s:
        misses.append(
            Miss(
                want,
                f"the rows sum to {seconds_text(total)} GPU-seconds, the card's interval is {seconds_text(card_s)}",
            )
        )
    usd = sum((b.usd for b in bill.rows), Decimal(0))
    if usd != bill.card_usd:
        misses.append(
            Miss(want, f"the rows sum to ${usd}, the card's cost for the interval is ${bill.card_usd}")
        )
    misses += _priced(want, bill, card_s, node)
    return misses


def seconds_text(x: Fraction | None) -> str:
    """Seconds as the texts write them."""
    return "none" if x is None else f"{float(x):g}"
