"""Act 9: one physical card shared by MPS clients; the device plugin's MPS control daemon limits each client to
1/replicas of the card's memory and SMs; pods of two tenants, each admitted by Kueue on the MPS flavor, ran at
once as distinct clients of that one card; each tenant was billed its clients' share of the card, and the shares
with the card's unallocated rest sum to the card's cost for the interval.

| clause | identity | ownership | time order | count | provenance | target |
|---|---|---|---|---|---|---|
| node_shares_one_card_by_mps | the node the pods ran on, of the MPS pool; its instance type's card count from the catalog by name | the MPS pool's node, tainted for the MPS flavor alone | as last seen; seen Ready | one card (the claim's); GFD count = cards, replicas = the config's; nvidia.com/gpu.shared capacity = allocatable = cards x replicas; no whole card or MIG slice beside | GFD labels (sharing-strategy mps, mps.capable), node status and taints, the catalog | same |
| the_control_daemon_limits_each_client_to_its_share | the daemon of that node | - | - | one pinned-memory limit per card, each the card's memory (GFD, MiB) over the replicas in whole MiB; one active-thread percentage, 100 over the replicas; nothing else, nothing twice | the commands the daemon set (local: the simulated daemon, from daemon.go's arithmetic) | same clause |
| each_pod_admitted_by_kueue_on_the_mps_flavor | a Workload per pod, one uid each, none shared; the Workload's copy of its pod the same observation as the act's | each Workload its pod's tenant's, owning one of the act's pods and no other running pod; every admitted snapshot by that tenant's ClusterQueue, with status.admission, charged nvidia.com/gpu.shared on the MPS flavor alone | the pod's start inside a stretch its Workload was admitted; its Job suspended until admitted and seen unsuspended | a pod per Job; two tenants or more, a namespace each; no more clients asked than the node's cards hold | Workload snapshots | same |
| all_pods_on_that_node | pod spec.nodeName; within the node's life | - | node created <= every start; every run over before its deletion | every pod | pod spec, node timestamps | same |
| all_ran_at_once | per pod | - | latest start < earliest end, before the last look | every pod Running | recorded intervals | same |
| each_pod_a_client_of_its_own_on_that_card | the kubelet's device id per pod (`GPU-<uuid>::<n>`), a client index below the replicas; DCGM's series per pod on the same card UUID and vgpu | each series names the pod's namespace and the node; no series of a pod the act did not run | - | one device and one series per pod; no client twice; one card UUID for all | pod-resources (local); dcgm-exporter's series (UUID, vgpu, hostname, pod labels) | same clause |
| each_tenant_billed_its_clients_share_of_the_card | each row's (tenant, namespace) once | a tenant billed only for its own pods' clients, its dollars its seconds' share of the card's | the billed interval inside the time every pod ran, before the last look | every tenant's row = its clients / replicas x cards x seconds; the rows and the unallocated rest sum to the card's seconds and dollars exactly | the collector's split over its holdings; the card's dollars its node's rate x seconds | same |
| each_ran_to_success | per pod | - | - | every pod, none disrupted | phase, exit code 0, no eviction or DisruptionTarget | same |

DCGM reports an MPS card's SM activity for the card, not per client (dcgm-exporter's series under MPS are the
device's), so no clause reads a client's SM_ACTIVE: the bill splits the card by the clients' shares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from fractions import Fraction

from assertions.card_shares import (
    Bill,
    Shares,
    billed_their_share,
    each_admitted_for_its_resource,
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
from gpu_finops.facts.catalog import CARD_MEMORY_MIB, GPU_TYPES
from gpu_finops.facts.kube_keys import (
    LABEL_GPU_COUNT,
    LABEL_GPU_MEMORY,
    LABEL_GPU_REPLICAS,
    LABEL_GPU_SHARING,
    LABEL_INSTANCE_TYPE,
    LABEL_MPS_CAPABLE,
    SHARED_GPU_RESOURCE,
    TAINT_MPS_POOL,
)
from gpu_finops.model import holding

CLAIM = (
    "one card shared by MPS clients, each limited by the control daemon to its share of the card's memory and "
    "SMs; pods of two tenants, each admitted by Kueue on the MPS flavor, ran at once as distinct clients of that "
    "card, each tenant billed its clients' share, the shares summing to the card's cost"
)
PIN = "set_default_device_pinned_mem_limit"
MPS_MAX_CLIENTS = 48  # CUDA MPS serves at most 48 clients per device (Volta and later)
THREADS = "set_default_active_thread_percentage"


@dataclass(frozen=True)
class Client:
    """What the act asked for one pod: one MPS client for a tenant, in its namespace."""

    tenant: str
    namespace: str


@dataclass(frozen=True)
class ClientSeries:
    """One holder's series as dcgm-exporter labels a shared card's: the card (UUID), the client the pod was
    given (`vgpu`), the pod, and the node the exporter runs on."""

    namespace: str
    pod: str
    card: str
    vgpu: str
    hostname: str


@dataclass(frozen=True)
class MpsObs:
    node: NodeObs
    replicas: int  # MPS clients per card the configuration asks for
    cards: int  # the physical cards the node's instance type has
    asks: dict[str, Client]  # pod -> what the act asked for it
    pods: tuple[PodObs, ...]
    workloads: tuple[WorkloadObs, ...] = ()
    daemon: tuple[str, ...] | None = None  # the commands the node's MPS control daemon set; None: no daemon
    series: tuple[ClientSeries, ...] = ()
    bill: Bill = field(default_factory=Bill)
    jobs: int = 0  # the one-client Jobs the act submitted: each must have its pod among the asks
    pool: str = "gpu-mps"  # the MPS NodePool
    flavor: str = "gpu-mps"
    observed_at: datetime | None = None
    replaced: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_aware(self)
        require_not_after(self, self.observed_at)
        bad = [
            f"{k} {getattr(self, k)!r}"
            for k in ("cards", "replicas", "jobs")
            if type(getattr(self, k)) is not int
        ]
        if self.daemon is not None and not all(type(c) is str for c in self.daemon):
            bad.append(f"daemon commands {self.daemon!r}")
        labels = self.node.labels
        if not isinstance(labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            bad.append(f"node labels {labels!r}")
        for name in ("mig_capacity", "mig_allocatable"):
            counts = getattr(self.node, name)
            if not isinstance(counts, dict) or not all(type(v) is int for v in counts.values()):
                bad.append(f"node {name} {counts!r}")
        if not isinstance(self.node.taints, tuple) or not all(isinstance(t, str) for t in self.node.taints):
            bad.append(f"node taints {self.node.taints!r}")
        if not isinstance(self.asks, dict) or not all(isinstance(a, Client) for a in self.asks.values()):
            bad.append(f"asks {self.asks!r}")
        if not all(isinstance(x, ClientSeries) for x in self.series):
            bad.append(f"series {self.series!r}")
        bad += self.bill.problems()
        if bad:
            raise ValueError(
                f"MpsObs: {'; '.join(bad)}: expected integer counts, string labels and taints, command strings, "
                "Client asks, ClientSeries, Fraction seconds and finite Decimal dollars"
            )


def node_shares_one_card_by_mps(o: MpsObs) -> list[Miss]:
    n = o.node
    clients = o.cards * o.replicas
    want = (
        f"{o.cards} card(s) of the {o.pool} pool shared by MPS ({o.replicas} clients each): GFD's sharing "
        f"strategy mps and mps.capable, {clients} nvidia.com/gpu.shared in capacity and allocatable, no whole card "
        "or MIG slice beside, the pool's MPS taint"
    )
    misses = []
    if o.cards != 1:
        misses.append(
            Miss(want, f"the act expects {o.cards} cards on node {n.name}: the claim is one card shared")
        )
    itype = n.labels.get(LABEL_INSTANCE_TYPE, "")
    known = GPU_TYPES.get(itype)
    if known is None or known[2] != o.cards:
        misses.append(
            Miss(
                want,
                f"node {n.name} is a {itype or 'type with no instance-type label'} of "
                f"{known[2] if known else 'unknown'} card(s); the act expected {o.cards}",
            )
        )
    misses += node_history(want, n, o.pods, o.observed_at)
    if (
        n.nodepool != o.pool
        or n.nodeclaim_nodepool != o.pool
        or f"{TAINT_MPS_POOL}:NoSchedule" not in n.taints
    ):
        misses.append(
            Miss(
                want,
                f"node {n.name} is of NodePool {n.nodepool} (its NodeClaim {n.nodeclaim or 'none'}'s "
                f"{n.nodeclaim_nodepool}) with taints {list(n.taints)}, not the {o.pool} pool's node tainted "
                f"{TAINT_MPS_POOL}:NoSchedule",
            )
        )
    if not 1 <= o.replicas <= MPS_MAX_CLIENTS:
        misses.append(
            Miss(want, f"{o.replicas} clients per card: MPS serves 1 to {MPS_MAX_CLIENTS} per card")
        )
    misses += read_by_the_model(want, n, o.cards, holding.Sharing.MPS, holding.Kind.MPS_CLIENT)
    got = {
        "count": n.labels.get(LABEL_GPU_COUNT),
        "sharing": n.labels.get(LABEL_GPU_SHARING),
        "mps.capable": n.labels.get(LABEL_MPS_CAPABLE),
        "replicas": n.labels.get(LABEL_GPU_REPLICAS),
    }
    expected = {"count": str(o.cards), "sharing": "mps", "mps.capable": "true", "replicas": str(o.replicas)}
    if got != expected:
        misses.append(Miss(want, f"node {n.name}'s GFD labels are {got}, expected {expected}"))
    if (n.capacity_shared, n.allocatable_shared) != (clients, clients):
        misses.append(
            Miss(
                want,
                f"node {n.name} advertises {n.capacity_shared} nvidia.com/gpu.shared ({n.allocatable_shared} "
                f"allocatable), expected {clients} = {o.cards} card(s) x {o.replicas} clients",
            )
        )
    beside = {
        k: v
        for k, v in {
            "nvidia.com/gpu capacity": n.capacity_gpu,
            "nvidia.com/gpu allocatable": n.allocatable_gpu,
            "MIG capacity": sum(n.mig_capacity.values()),
            "MIG allocatable": sum(n.mig_allocatable.values()),
        }.items()
        if v
    }
    if beside:
        misses.append(
            Miss(want, f"node {n.name} also advertises {beside}: a card handed out beside its clients")
        )
    return misses


def _card_memory(o: MpsObs, want: str) -> tuple[int | None, list[Miss]]:
    """The card's memory, MiB, as GFD labels it, which must be the catalog's for the node's instance family."""
    n = o.node
    said = n.labels.get(LABEL_GPU_MEMORY, "")
    family = n.labels.get(LABEL_INSTANCE_TYPE, "").split(".")[0]
    known = CARD_MEMORY_MIB.get(family)
    if not re.fullmatch(r"[0-9]{1,7}", said) or int(said) != known:
        return None, [
            Miss(
                want,
                f"node {n.name}'s card memory (GFD {LABEL_GPU_MEMORY}) is {said or 'not labelled'!r}, the "
                f"catalog's for a {family or 'type-less'} card {known or 'unknown'} MiB: the clients' limits "
                "cannot be checked",
            )
        ]
    return int(said), []


def the_control_daemon_limits_each_client_to_its_share(o: MpsObs) -> list[Miss]:
    n = o.node
    want = (
        f"node {n.name}'s MPS control daemon: each of the {o.cards} card(s) pinned at its memory over the "
        f"{o.replicas} clients (whole MiB), every client {100 // max(o.replicas, 1)} % of the SMs, nothing else"
    )
    if o.daemon is None:
        return [
            Miss(
                want,
                f"no MPS control daemon ran on node {n.name}: its clients share the card's memory and SMs with "
                "no limit",
            )
        ]
    mib, misses = _card_memory(o, want)
    if mib is None or not 1 <= o.replicas <= MPS_MAX_CLIENTS:
        return misses or [Miss(want, f"{o.replicas} clients per card: the clients' limits cannot be checked")]
    per_client = mib // o.replicas
    expected = [f"{PIN} {i} {per_client}M" for i in range(o.cards)] + [f"{THREADS} {100 // o.replicas}"]
    got = list(o.daemon)
    missing = [c for c in expected if got.count(c) == 0]
    if missing:
        set_ = [c for c in got if c.startswith((PIN, THREADS))]
        misses.append(
            Miss(
                want,
                f"the daemon on node {n.name} did not set {missing} ({mib} MiB / {o.replicas} clients = "
                f"{per_client} MiB); it set {set_}",
            )
        )
    other = sorted({c for c in got if c not in expected})
    twice = sorted({c for c in got if c in expected and got.count(c) > 1})
    if other:
        misses.append(Miss(want, f"the daemon on node {n.name} also set {other}"))
    if twice:
        misses.append(Miss(want, f"the daemon on node {n.name} set {twice} more than once"))
    return misses


def each_pod_admitted_by_kueue_on_the_mps_flavor(o: MpsObs) -> list[Miss]:
    want = (
        f"{len(o.asks)} pods of at least two tenants, each in its own namespace, each of its own Workload, admitted "
        f"by its tenant's ClusterQueue for {SHARED_GPU_RESOURCE} on {o.flavor}, no more than the card's clients"
    )
    misses = tenants_and_jobs(want, o.asks, o.jobs, o.pods, o.replaced)
    if len(o.asks) > o.cards * o.replicas:
        misses.append(
            Miss(
                want, f"asked {len(o.asks)} clients, more than {o.cards} card(s) x {o.replicas} clients hold"
            )
        )
    resource_of = dict.fromkeys(o.asks, SHARED_GPU_RESOURCE)
    return misses + each_admitted_for_its_resource(
        want, o.asks, resource_of, o.flavor, "clients", o.pods, o.workloads
    )


def _client(device_id: str) -> holding.Device | None:
    try:
        return holding.device(device_id)
    except holding.DeviceIdError:
        return None


def each_pod_a_client_of_its_own_on_that_card(o: MpsObs) -> list[Miss]:
    want = (
        f"one MPS client per pod (GPU-<uuid>::<n>, n below {o.replicas}) from the kubelet and one series per pod "
        "from DCGM on that card and client, all on one card of the node; no client given twice"
    )
    misses = []
    mine: dict[str, holding.Device] = {}
    for p in o.pods:
        devices = [_client(d) for d in p.devices]
        if len(devices) != 1 or devices[0] is None or devices[0].kind is not holding.Kind.REPLICA:
            misses.append(
                Miss(want, f"pod {p.name} was given devices {list(p.devices)}, expected one MPS client")
            )
            continue
        d = devices[0]
        if d.replica is None or int(d.replica) >= o.replicas:
            misses.append(Miss(want, f"pod {p.name} was given {d.id}: no client of {o.replicas} per card"))
            continue
        mine[p.name] = d
        if p.gpu_uuid and p.gpu_uuid != d.card:
            misses.append(
                Miss(want, f"pod {p.name} reports card {p.gpu_uuid}, its device {d.id} names {d.card}")
            )
    ids = [d for p in o.pods for d in p.devices]
    if len(ids) != len(set(ids)):
        misses.append(Miss(want, f"one client given to two pods: {sorted(ids)}"))
    cards = sorted({d.card or "" for d in mine.values()})
    if len(cards) > 1:
        misses.append(Miss(want, f"the pods' clients are on {len(cards)} cards {cards}: not one card shared"))
    by_pod: dict[str, list[ClientSeries]] = {}
    for s in o.series:
        by_pod.setdefault(s.pod, []).append(s)
    for name, ask in sorted(o.asks.items()):
        seen = by_pod.get(name, [])
        if len(seen) != 1:
            misses.append(
                Miss(
                    want,
                    f"pod {name}: {len(seen)} series in DCGM {[(s.card, s.vgpu) for s in seen]}, expected one",
                )
            )
            continue
        s, d = seen[0], mine.get(name)
        if s.namespace != ask.namespace:
            misses.append(
                Miss(want, f"pod {name}'s series name namespace {s.namespace}, the pod is {ask.namespace}'s")
            )
        if d is not None and (s.card, s.vgpu) != (d.card, d.replica):
            misses.append(
                Miss(
                    want,
                    f"pod {name}'s series is card {s.card} client {s.vgpu!r}, the kubelet gave it {d.id}",
                )
            )
    misses += series_of_the_node(want, o.series, o.node.name, o.asks, "series")
    return misses


def each_tenant_billed_its_clients_share_of_the_card(o: MpsObs) -> list[Miss]:
    want = (
        f"over the {seconds_text(o.bill.seconds)} s all ran at once: each tenant billed its clients / "
        f"{o.replicas} of the card, the rest unallocated, no row negative, each row's dollars its seconds' share "
        "of the card's, the rows summing to the card's seconds and dollars exactly, the card priced at its rate"
    )
    if o.replicas < 1:
        return [Miss(want, f"{o.replicas} clients per card: no share to bill")]
    shares = Shares(o.asks, dict.fromkeys(o.asks, Fraction(1, o.replicas)), o.cards, "clients")
    return billed_their_share(want, o.bill, shares, o.pods, o.observed_at, o.node)


CLAUSES = (
    node_shares_one_card_by_mps,
    the_control_daemon_limits_each_client_to_its_share,
    each_pod_admitted_by_kueue_on_the_mps_flavor,
    all_pods_on_that_node,
    all_ran_at_once,
    each_pod_a_client_of_its_own_on_that_card,
    each_tenant_billed_its_clients_share_of_the_card,
    each_ran_to_success,
)


def check_mps(o: MpsObs) -> Verdict:
    """Act 9's claim: every clause of `CLAUSES` over the node, its daemon, its pods, their Workloads, series and
    bill."""
    return compose(
        CLAIM,
        f"{o.cards} card shared by {o.replicas} MPS clients, each limited to its share by the control daemon; "
        f"{len(o.asks)} Kueue-admitted pods of {len({a.tenant for a in o.asks.values()})} tenants Running together "
        "as distinct clients of it, each tenant billed its clients' share, the shares summing to the card's cost, "
        "each pod Succeeded",
        CLAUSES,
        o,
        lambda: (
            f"{o.node.name}: {len(o.pods)} clients of {sorted({s.card for s in o.series})} at once, daemon "
            f"{list(o.daemon) if o.daemon is not None else 'none'}; "
            f"${sum((b.usd for b in o.bill.rows), Decimal(0))} of ${o.bill.card_usd} billed"
        ),
        node=o.node.name,
        daemon=list(o.daemon) if o.daemon is not None else None,
        clients={s.pod: [s.card, s.vgpu] for s in o.series},
        billed=[[b.tenant, b.namespace, str(b.gpu_seconds), str(b.usd)] for b in o.bill.rows],
        replaced_pods=o.replaced,
    )
