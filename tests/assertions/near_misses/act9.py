"""Act 9 (MPS): holding worlds and their near-misses."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

from hypothesis import strategies as st

from assertions.card_shares import Bill, Billed
from assertions.mps import Client, ClientSeries, MpsObs
from assertions.observed import Interval, NodeObs, PodObs, WorkloadObs
from gpu_finops.cost.allocation import split
from tests.assertions.near_misses import Break
from tests.assertions.tables import admitted_snap, t

MEMORY = {"g6e.xlarge": 46068, "p5.4xlarge": 81559}  # MiB, GFD's nvidia.com/gpu.memory: an L40S, an H100
RATE = {"g6e.xlarge": Decimal("0.95"), "p5.4xlarge": Decimal("3.44")}  # $ per hour, the catalog's spot
CARD = "GPU-1111"


def daemon(memory: int, replicas: int, cards: int = 1) -> tuple[str, ...]:
    return (
        *(f"set_default_device_pinned_mem_limit {i} {memory // replicas}M" for i in range(cards)),
        f"set_default_active_thread_percentage {100 // replicas}",
    )


def world(itype: str, replicas: int, tenants: list[str], interval: int, starts: list[int]) -> MpsObs:
    """`tenants`: one per pod; pod i the MPS client GPU-1111::i."""
    labels = {"nvidia.com/gpu.count": "1", "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/mps.capable": "true",
              "nvidia.com/gpu.replicas": str(replicas), "nvidia.com/gpu.memory": str(MEMORY[itype]),
              "node.kubernetes.io/instance-type": itype, "karpenter.sh/nodepool": "gpu-mps",
              "karpenter.sh/capacity-type": "spot"}  # fmt: skip
    node = NodeObs("gpu-mps", t(0), labels, capacity_shared=replicas, allocatable_shared=replicas, ready_at=t(2),
                   taints=("nvidia.com/gpu:NoSchedule", "gpu-finops.io/mps:NoSchedule"), nodeclaim="gpu-mps-x1",
                   nodeclaim_nodepool="gpu-mps")  # fmt: skip
    end = max(starts) + interval + 20
    pods, wls, series, by = [], [], [], {}
    for i, tenant in enumerate(tenants):
        ns = f"ns-{tenant}"
        pod = PodObs(f"mps-{i}", "gpu-mps", "Succeeded", Interval(t(starts[i]), t(end + i)), exit_code=0,
                     devices=(f"{CARD}::{i}",))  # fmt: skip
        snap = replace(admitted_snap(5, cq=tenant, flavors=("gpu-mps",), uid=f"uid-{i}"),
                       admitted=(("nvidia.com/gpu.shared", "gpu-mps"),))  # fmt: skip
        pods.append(pod)
        wls.append(WorkloadObs(f"job-mps-{i}", tenant, snapshots=(snap,), pods=(pod,)))
        series.append(ClientSeries(ns, pod.name, CARD, str(i), "gpu-mps"))
        by[(tenant, ns)] = by.get((tenant, ns), Fraction(0)) + Fraction(interval, replicas)
    rest = interval - sum(by.values(), Fraction(0))
    rows = [(k, s) for k, s in by.items()] + ([(("unallocated", None), rest)] if rest else [])
    card = (RATE[itype] * interval / 3600).quantize(Decimal("0.000001"))
    money = split(card, [s / interval for _, s in rows])  # the collector's own split
    bill = Bill(
        tuple(Billed(k[0], k[1], s, m) for (k, s), m in zip(rows, money, strict=True)),
        t(max(starts) + 1), t(max(starts) + 1 + interval), card, RATE[itype],
    )  # fmt: skip
    return MpsObs(
        node, replicas, 1, {p.name: Client(a, f"ns-{a}") for p, a in zip(pods, tenants, strict=True)},
        tuple(pods), tuple(wls), daemon(MEMORY[itype], replicas), tuple(series), bill, jobs=len(tenants),
        observed_at=t(end + 30),
    )  # fmt: skip


@st.composite
def holding(draw: st.DrawFn) -> MpsObs:
    replicas = draw(st.sampled_from([2, 3, 4, 8]))
    k = draw(st.integers(2, replicas))
    tenants = ["team-a", "team-b"] + [draw(st.sampled_from(["team-a", "team-b"])) for _ in range(k - 2)]
    starts = [draw(st.integers(10, 30)) for _ in tenants]
    itype = draw(st.sampled_from(sorted(MEMORY)))
    return world(itype, replicas, tenants, draw(st.sampled_from([10, 60])), starts)


def node(o: MpsObs, **changes) -> MpsObs:
    return replace(o, node=replace(o.node, **changes))


def label(o: MpsObs, key: str, value: str) -> MpsObs:
    return node(o, labels={**o.node.labels, key: value})


def first_pod(o: MpsObs, **changes) -> MpsObs:
    changed = replace(o.pods[0], **changes)
    return replace(
        o, pods=(changed, *o.pods[1:]), workloads=(replace(o.workloads[0], pods=(changed,)), *o.workloads[1:])
    )


def first_snap(o: MpsObs, **changes) -> MpsObs:
    w = o.workloads[0]
    return replace(
        o, workloads=(replace(w, snapshots=(replace(w.snapshots[0], **changes),)), *o.workloads[1:])
    )


def first_series(o: MpsObs, **changes) -> MpsObs:
    return replace(o, series=(replace(o.series[0], **changes), *o.series[1:]))


def rows(o: MpsObs, new: tuple[Billed, ...], **changes) -> MpsObs:
    return replace(o, bill=replace(o.bill, rows=new, **changes))


def shift_bill(o: MpsObs, seconds: Fraction, usd: Decimal = Decimal(0)) -> MpsObs:
    b = o.bill.rows[0]
    return rows(o, (replace(b, gpu_seconds=b.gpu_seconds + seconds, usd=b.usd + usd), *o.bill.rows[1:]))


def swap_tenants(o: MpsObs) -> MpsObs:
    """The second tenant's row names the first: one tenant billed for another's clients."""
    a, b = o.bill.rows[0], o.bill.rows[1]
    return rows(o, (a, replace(b, tenant=a.tenant, namespace=a.namespace), *o.bill.rows[2:]))


def swap_usd(o: MpsObs) -> MpsObs:
    """Dollars moved between the first two rows (their seconds kept). Rows of equal seconds swap to about the
    same dollars, so three quanta move instead."""
    a, b = o.bill.rows[0], o.bill.rows[1]
    if abs(a.usd - b.usd) <= Decimal("0.000002"):
        q = Decimal("0.000003")
        return rows(o, (replace(a, usd=a.usd + q), replace(b, usd=b.usd - q), *o.bill.rows[2:]))
    return rows(o, (replace(a, usd=b.usd), replace(b, usd=a.usd), *o.bill.rows[2:]))


def admitted_late(o: MpsObs) -> MpsObs:
    w, pod = o.workloads[0], o.pods[0]
    late = (pod.running.start - t(0)).total_seconds() + 3
    snap = replace(
        admitted_snap(late, cq=w.snapshots[0].cluster_queue, flavors=("gpu-mps",), uid=w.snapshots[0].uid),
        admitted=w.snapshots[0].admitted,
    )
    return replace(o, workloads=(replace(w, snapshots=(snap,)), *o.workloads[1:]))


def all_asks(o: MpsObs, **changes) -> MpsObs:
    return replace(o, asks={k: replace(a, **changes) for k, a in o.asks.items()})


def first_wl(o: MpsObs, **changes) -> MpsObs:
    return replace(o, workloads=(replace(o.workloads[0], **changes), *o.workloads[1:]))


def pinned(o: MpsObs, mib: int) -> MpsObs:
    """The daemon's first card pinned at `mib` per client."""
    assert o.daemon is not None
    return replace(o, daemon=(f"set_default_device_pinned_mem_limit 0 {mib}M", *o.daemon[1:]))


def other_tenant(o: MpsObs) -> str:
    return "team-b" if o.asks[o.pods[0].name].tenant == "team-a" else "team-a"


BREAKS = (
    Break("node_shares_one_card_by_mps", "count", "a four-card instance claimed as one card",
          lambda o: label(o, "node.kubernetes.io/instance-type", "g6e.12xlarge")),
    Break("node_shares_one_card_by_mps", "count", "two cards where the claim is one",
          lambda o: replace(label(o, "nvidia.com/gpu.count", "2"), cards=2)),
    Break("node_shares_one_card_by_mps", "time", "the node never seen Ready", lambda o: node(o, ready_at=None)),
    Break("node_shares_one_card_by_mps", "state", "time-sliced, not MPS",
          lambda o: label(o, "nvidia.com/gpu.sharing-strategy", "time-slicing")),
    Break("node_shares_one_card_by_mps", "state", "GFD says the node is not MPS-capable",
          lambda o: label(o, "nvidia.com/mps.capable", "false")),
    Break("node_shares_one_card_by_mps", "count", "GFD's replicas not the config's",
          lambda o: label(o, "nvidia.com/gpu.replicas", str(o.replicas * 2))),
    Break("node_shares_one_card_by_mps", "count", "one client fewer allocatable",
          lambda o: node(o, allocatable_shared=o.node.allocatable_shared - 1)),
    Break("node_shares_one_card_by_mps", "count", "a whole card advertised beside the clients",
          lambda o: node(o, capacity_gpu=1, allocatable_gpu=1)),
    Break("node_shares_one_card_by_mps", "count", "MIG slices advertised beside the clients",
          lambda o: node(o, mig_capacity={"nvidia.com/mig-1g.10gb": 1})),
    Break("node_shares_one_card_by_mps", "ownership", "a node of the time-sliced pool",
          lambda o: node(o, labels={**o.node.labels, "karpenter.sh/nodepool": "gpu-shared"}, nodeclaim_nodepool="gpu-shared")),
    Break("node_shares_one_card_by_mps", "ownership", "the MPS pool's node without its taint",
          lambda o: node(o, taints=("nvidia.com/gpu:NoSchedule",))),
    Break("the_control_daemon_limits_each_client_to_its_share", "state", "no MPS control daemon",
          lambda o: replace(o, daemon=None)),
    Break("the_control_daemon_limits_each_client_to_its_share", "count", "each client pinned at twice its share",
          lambda o: pinned(o, int(o.node.labels["nvidia.com/gpu.memory"]) * 2 // o.replicas)),
    Break("the_control_daemon_limits_each_client_to_its_share", "count", "pinned one MiB over its share",
          lambda o: pinned(o, int(o.node.labels["nvidia.com/gpu.memory"]) // o.replicas + 1)),
    Break("the_control_daemon_limits_each_client_to_its_share", "count", "the whole card's SMs for every client",
          lambda o: replace(o, daemon=(*o.daemon[:-1], "set_default_active_thread_percentage 100"))),
    Break("the_control_daemon_limits_each_client_to_its_share", "count", "no memory limit at all",
          lambda o: replace(o, daemon=o.daemon[-1:])),
    Break("the_control_daemon_limits_each_client_to_its_share", "identity", "a limit for a card the node has not",
          lambda o: replace(o, daemon=(*o.daemon, "set_default_device_pinned_mem_limit 1 1M"))),
    Break("the_control_daemon_limits_each_client_to_its_share", "count", "a limit set twice",
          lambda o: replace(o, daemon=(o.daemon[0], *o.daemon))),
    Break("the_control_daemon_limits_each_client_to_its_share", "provenance", "no card memory from GFD",
          lambda o: node(o, labels={k: v for k, v in o.node.labels.items() if k != "nvidia.com/gpu.memory"})),
    Break("the_control_daemon_limits_each_client_to_its_share", "provenance", "GFD's memory not the card the daemon divided",
          lambda o: label(o, "nvidia.com/gpu.memory", str(int(o.node.labels["nvidia.com/gpu.memory"]) * 2))),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "tenancy", "one tenant only",
          lambda o: all_asks(o, tenant="team-a", namespace="ns-team-a")),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "tenancy", "two tenants in one namespace",
          lambda o: all_asks(o, namespace="ns-shared")),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "count", "more clients asked than the card holds",
          lambda o: replace(o, replicas=1)),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "ownership", "a Workload of another tenant owns the pod",
          lambda o: first_wl(o, tenant="team-c")),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "ownership", "admitted by the other tenant's ClusterQueue",
          lambda o: first_snap(o, cluster_queue=other_tenant(o))),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "state", "admitted on the time-sliced flavor",
          lambda o: first_snap(o, admitted=(("nvidia.com/gpu.shared", "gpu-shared"),), flavors=("gpu-shared",))),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "identity", "charged a whole card",
          lambda o: first_snap(o, admitted=(("nvidia.com/gpu", "gpu-mps"),))),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "identity", "two Workloads with one uid",
          lambda o: replace(o, workloads=(o.workloads[0], replace(o.workloads[1], snapshots=tuple(replace(sn, uid=o.workloads[0].snapshots[0].uid) for sn in o.workloads[1].snapshots)), *o.workloads[2:]))),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "time", "Running before its Workload was admitted", admitted_late),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "time", "its Job never seen unsuspended",
          lambda o: first_snap(o, job_suspended=True)),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "count", "a Job whose pod was never observed",
          lambda o: replace(o, jobs=o.jobs + 1)),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "count", "one Workload missing",
          lambda o: replace(o, workloads=o.workloads[1:])),
    Break("all_pods_on_that_node", "identity", "a pod on another node", lambda o: first_pod(o, node="gpu-other")),
    Break("all_pods_on_that_node", "time", "the node deleted before the pods ended",
          lambda o: node(o, deleted_at=o.pods[0].running.start + (o.pods[0].running.end - o.pods[0].running.start) / 2)),
    Break("all_ran_at_once", "time", "one pod ended before the last started",
          lambda o: first_pod(o, running=Interval(o.pods[0].running.start, o.pods[0].running.start))),
    Break("each_pod_a_client_of_its_own_on_that_card", "count", "one client given to two pods",
          lambda o: first_pod(o, devices=o.pods[1].devices)),
    Break("each_pod_a_client_of_its_own_on_that_card", "identity", "a whole card's id, not a client's",
          lambda o: first_pod(o, devices=(CARD,))),
    Break("each_pod_a_client_of_its_own_on_that_card", "identity", "a client index the card does not have",
          lambda o: first_pod(o, devices=(f"{CARD}::{o.replicas}",))),
    Break("each_pod_a_client_of_its_own_on_that_card", "identity", "clients of two different cards",
          lambda o: first_series(first_pod(o, devices=("GPU-2222::0",)), card="GPU-2222")),
    Break("each_pod_a_client_of_its_own_on_that_card", "identity", "DCGM's series on another card than the kubelet's id",
          lambda o: first_series(o, card="GPU-2222")),
    Break("each_pod_a_client_of_its_own_on_that_card", "identity", "DCGM's series on another client than the kubelet's id",
          lambda o: first_series(o, vgpu=o.series[1].vgpu)),
    Break("each_pod_a_client_of_its_own_on_that_card", "identity", "the pod reports another card",
          lambda o: first_pod(o, gpu_uuid="GPU-2222")),
    Break("each_pod_a_client_of_its_own_on_that_card", "provenance", "no DCGM series for a pod",
          lambda o: replace(o, series=o.series[1:])),
    Break("each_pod_a_client_of_its_own_on_that_card", "ownership", "a series names another namespace",
          lambda o: first_series(o, namespace="ns-else")),
    Break("each_pod_a_client_of_its_own_on_that_card", "identity", "a series from another node's exporter",
          lambda o: first_series(o, hostname="gpu-other")),
    Break("each_pod_a_client_of_its_own_on_that_card", "ownership", "a series of a pod the act did not run",
          lambda o: replace(o, series=(*o.series, replace(o.series[0], pod="stranger")))),
    Break("each_pod_a_client_of_its_own_on_that_card", "count", "two devices for one pod",
          lambda o: first_pod(o, devices=(*o.pods[0].devices, f"{CARD}::{o.replicas - 1}"))),
    Break("each_tenant_billed_its_clients_share_of_the_card", "count", "shares summing to more than the card",
          lambda o: shift_bill(o, Fraction(1, o.replicas) * o.bill.seconds)),
    Break("each_tenant_billed_its_clients_share_of_the_card", "ownership", "a tenant billed for another's clients", swap_tenants),
    Break("each_tenant_billed_its_clients_share_of_the_card", "ownership", "one tenant's dollars on another's row", swap_usd),
    Break("each_tenant_billed_its_clients_share_of_the_card", "count", "dollars off the card's by a micro-dollar",
          lambda o: shift_bill(o, Fraction(0), Decimal("0.000001"))),
    Break("each_tenant_billed_its_clients_share_of_the_card", "provenance", "no rows from the collector",
          lambda o: rows(o, ())),
    Break("each_tenant_billed_its_clients_share_of_the_card", "provenance", "the card's dollars not its rate x seconds",
          lambda o: rows(o, tuple(replace(b, usd=b.usd * 2) for b in o.bill.rows), card_usd=o.bill.card_usd * 2)),
    Break("each_tenant_billed_its_clients_share_of_the_card", "time", "billed past the first pod's end",
          lambda o: replace(o, bill=replace(o.bill, start=o.pods[0].running.end - (o.bill.end - o.bill.start) / 2,
                                            end=o.pods[0].running.end + (o.bill.end - o.bill.start) / 2))),
    Break("each_tenant_billed_its_clients_share_of_the_card", "count", "billed as whole cards",
          lambda o: rows(o, tuple(replace(b, gpu_seconds=b.gpu_seconds * o.replicas) for b in o.bill.rows if b.tenant != "unallocated"))),
    Break("each_ran_to_success", "state", "one pod failed", lambda o: first_pod(o, phase="Failed", exit_code=1)),
    Break("each_ran_to_success", "state", "a disrupted pod counted as a run",
          lambda o: first_pod(o, evicted=True, disruption="EvictionByEvictionAPI")),
    Break("each_ran_to_success", "state", "an OOM-killed pod with exit 0 counted as a run",
          lambda o: first_pod(o, reason="OOMKilled")),
    Break("node_shares_one_card_by_mps", "time", "the node Ready only after the pods ran",
          lambda o: node(o, ready_at=max(p.running.end for p in o.pods))),
    Break("node_shares_one_card_by_mps", "time", "the node Ready before it was created",
          lambda o: node(o, ready_at=o.node.created - (o.pods[0].running.start - o.node.created))),
    Break("node_shares_one_card_by_mps", "time", "the node's NodeClaim launched after the pods started",
          lambda o: node(o, nodeclaim_launched_at=max(p.running.start for p in o.pods))),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "identity", "an asked pod also counted as disrupted and replaced",
          lambda o: replace(o, replaced={o.pods[0].name: "EvictionByEvictionAPI"})),
    Break("node_shares_one_card_by_mps", "ownership", "the node's NodeClaim of another pool",
          lambda o: node(o, nodeclaim_nodepool="gpu-shared",
                         labels={k: v for k, v in o.node.labels.items() if k != "karpenter.sh/nodepool"})),
    Break("node_shares_one_card_by_mps", "count", "more clients per card than MPS serves",
          lambda o: replace(o, replicas=64)),
    Break("node_shares_one_card_by_mps", "count", "labels of a four-card type on one card",
          lambda o: label(o, "karpenter.k8s.aws/instance-gpu-count", "4")),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "tenancy", "pods of no named tenant",
          lambda o: all_asks(o, tenant="")),
    Break("each_pod_admitted_by_kueue_on_the_mps_flavor", "ownership", "an evicted pod of a Workload still running on a client",
          lambda o: first_wl(o, pods=(*o.workloads[0].pods, replace(o.workloads[0].pods[0], name="mps-x", evicted=True,
                                                                    disruption="EvictionByEvictionAPI", devices=o.pods[1].devices)))),
    Break("each_tenant_billed_its_clients_share_of_the_card", "provenance", "the card priced at another rate than the catalog's",
          lambda o: rows(o, tuple(replace(b, usd=b.usd * 2) for b in o.bill.rows), card_usd=o.bill.card_usd * 2,
                         usd_per_hour=o.bill.usd_per_hour * 2)),
)  # fmt: skip
