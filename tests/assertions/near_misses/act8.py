"""Act 8 (MIG): holding worlds and their near-misses."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

from hypothesis import strategies as st

from assertions.mig import Ask, Billed, MigObs, SliceSeries
from assertions.observed import Interval, NodeObs, PodObs, WorkloadObs
from gpu_finops.cost.allocation import split
from tests.assertions.near_misses import Break
from tests.assertions.tables import admitted_snap, t

LAYOUTS = {
    "all-balanced": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    "all-1g.10gb": {"1g.10gb": 7},
    "all-3g.40gb": {"3g.40gb": 2},
}
RATE = Decimal("3.44")  # $ per hour, a p5.4xlarge spot (the catalog's)


def world(layout: str, asks: list[tuple[str, str]], interval: int, starts: list[int]) -> MigObs:
    """`asks`: (tenant, profile) per pod, in slice order; pod i on GPU instance i + 1 of card GPU-1111."""
    cut = LAYOUTS[layout]
    labels = {"nvidia.com/gpu.count": "1", "nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": layout,
              "nvidia.com/mig.config.state": "success", "node.kubernetes.io/instance-type": "p5.4xlarge",
              "karpenter.sh/capacity-type": "spot"}  # fmt: skip
    cap = {f"nvidia.com/mig-{p}": n for p, n in cut.items()}
    node = NodeObs("gpu-mig", t(0), labels, mig_capacity=cap, mig_allocatable=dict(cap), ready_at=t(2))
    end = max(starts) + interval + 20
    pods, wls, slices, by = [], [], [], {}
    for i, (tenant, profile) in enumerate(asks):
        ns = f"ns-{tenant}"
        pod = PodObs(f"mig-{i}", "gpu-mig", "Succeeded", Interval(t(starts[i]), t(end + i)), exit_code=0,
                     devices=(f"MIG-{i:032x}",))  # fmt: skip
        snap = replace(admitted_snap(5, cq=tenant, flavors=("gpu-mig",), uid=f"uid-{i}"),
                       admitted=((f"nvidia.com/mig-{profile}", "gpu-mig"),))  # fmt: skip
        pods.append(pod)
        wls.append(WorkloadObs(f"job-mig-{i}", tenant, snapshots=(snap,), pods=(pod,)))
        slices.append(SliceSeries(ns, pod.name, "GPU-1111", str(i + 1), profile, "gpu-mig"))
        g = int(profile[0])  # a slice's worth: its compute slices over those of every slice cut (the model's)
        total = sum(int(q[0]) * n for q, n in cut.items())
        by[(tenant, ns)] = by.get((tenant, ns), Fraction(0)) + Fraction(g, total) * interval
    rest = interval - sum(by.values(), Fraction(0))
    rows = [(k, s) for k, s in by.items()] + ([(("unallocated", None), rest)] if rest else [])
    card = (RATE * interval / 3600).quantize(Decimal("0.000001"))
    money = split(
        card, [s / interval for _, s in rows]
    )  # the collector's own split: exact sum, each within a quantum
    billed = tuple(Billed(k[0], k[1], s, m) for (k, s), m in zip(rows, money, strict=True))
    return MigObs(
        node, cut, 1, {p.name: Ask(a[0], f"ns-{a[0]}", a[1]) for p, a in zip(pods, asks, strict=True)},
        tuple(pods), tuple(wls), tuple(slices), billed, t(max(starts) + 1), t(max(starts) + 1 + interval), card,
        RATE, layout_name=layout, observed_at=t(end + 30), jobs=len(asks),
    )  # fmt: skip


@st.composite
def holding(draw: st.DrawFn) -> MigObs:
    layout = draw(st.sampled_from(sorted(LAYOUTS)))
    profiles = [p for p, n in LAYOUTS[layout].items() for _ in range(n)]
    k = draw(st.integers(2, len(profiles)))
    chosen = profiles[:k]
    tenants = ["team-a", "team-b"] + [draw(st.sampled_from(["team-a", "team-b"])) for _ in chosen[2:]]
    starts = [draw(st.integers(10, 30)) for _ in chosen]
    return world(layout, list(zip(tenants, chosen, strict=True)), draw(st.sampled_from([10, 60])), starts)


def node(o: MigObs, **changes) -> MigObs:
    return replace(o, node=replace(o.node, **changes))


def label(o: MigObs, key: str, value: str) -> MigObs:
    return node(o, labels={**o.node.labels, key: value})


def legacy_ids(o: MigObs, gi, ci=lambda i: "0") -> MigObs:
    """Every pod given the card-named id MIG-<card>/<gi>/<ci> (the device plugin's before driver R470), its GPU
    instance `gi(i, slice)` and compute instance `ci(i)`."""
    series = {s.pod: s for s in o.slices}
    pods = tuple(replace(p, devices=(f"MIG-{series[p.name].card}/{gi(i, series[p.name])}/{ci(i)}",))
                 for i, p in enumerate(o.pods))  # fmt: skip
    mine = {p.name: p for p in pods}
    return replace(o, pods=pods, workloads=tuple(replace(w, pods=tuple(mine.get(q.name, q) for q in w.pods))
                                                 for w in o.workloads))  # fmt: skip


def first_pod(o: MigObs, **changes) -> MigObs:
    changed = replace(o.pods[0], **changes)
    return replace(
        o, pods=(changed, *o.pods[1:]), workloads=(replace(o.workloads[0], pods=(changed,)), *o.workloads[1:])
    )


def first_snap(o: MigObs, **changes) -> MigObs:
    w = o.workloads[0]
    return replace(
        o, workloads=(replace(w, snapshots=(replace(w.snapshots[0], **changes),)), *o.workloads[1:])
    )


def first_slice(o: MigObs, **changes) -> MigObs:
    return replace(o, slices=(replace(o.slices[0], **changes), *o.slices[1:]))


def other_profile(o: MigObs) -> str:
    mine = o.asks[o.pods[0].name].profile
    return next(p for p in ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb") if p != mine)


def shift_bill(o: MigObs, seconds: Fraction, usd: Decimal = Decimal(0)) -> MigObs:
    b = o.billed[0]
    return replace(
        o, billed=(replace(b, gpu_seconds=b.gpu_seconds + seconds, usd=b.usd + usd), *o.billed[1:])
    )


def swap_tenants(o: MigObs) -> MigObs:
    """The second tenant's row names the first: one tenant billed for another's slices."""
    a, b = o.billed[0], o.billed[1]
    return replace(o, billed=(a, replace(b, tenant=a.tenant, namespace=a.namespace), *o.billed[2:]))


def admitted_late(o: MigObs) -> MigObs:
    w, pod = o.workloads[0], o.pods[0]
    late = (pod.running.start - t(0)).total_seconds() + 3
    snap = replace(
        admitted_snap(late, cq=w.snapshots[0].cluster_queue, flavors=("gpu-mig",), uid=w.snapshots[0].uid),
        admitted=w.snapshots[0].admitted,
    )
    return replace(o, workloads=(replace(w, snapshots=(snap,)), *o.workloads[1:]))


def all_asks(o: MigObs, **changes) -> MigObs:
    """Every ask changed alike (and the slices, Workloads and bill left as they were)."""
    return replace(o, asks={k: replace(a, **changes) for k, a in o.asks.items()})


def first_wl(o: MigObs, **changes) -> MigObs:
    return replace(o, workloads=(replace(o.workloads[0], **changes), *o.workloads[1:]))


def swap_usd(o: MigObs) -> MigObs:
    """Dollars moved between the first two rows (their seconds kept): one pays for another's slices. Rows of
    equal seconds swap to about the same dollars, so three quanta move instead."""
    a, b = o.billed[0], o.billed[1]
    if abs(a.usd - b.usd) <= Decimal("0.000002"):
        q = Decimal("0.000003")
        return replace(o, billed=(replace(a, usd=a.usd + q), replace(b, usd=b.usd - q), *o.billed[2:]))
    return replace(o, billed=(replace(a, usd=b.usd), replace(b, usd=a.usd), *o.billed[2:]))


BREAKS = (
    Break("node_cuts_one_card_by_the_layout", "count", "an eight-card instance claimed as one card",
          lambda o: label(o, "node.kubernetes.io/instance-type", "p5.48xlarge")),
    Break("node_cuts_one_card_by_the_layout", "count", "two cards where the claim is one",
          lambda o: replace(label(o, "nvidia.com/gpu.count", "2"), cards=2)),
    Break("node_cuts_one_card_by_the_layout", "time", "the node never seen Ready", lambda o: node(o, ready_at=None)),
    Break("node_cuts_one_card_by_the_layout", "count", "replicas allocatable beside the slices",
          lambda o: node(o, allocatable_shared=4)),
    Break("each_pod_admitted_by_kueue_for_its_profile", "count", "more slices of a profile asked than the card has",
          lambda o: all_asks(o, profile="7g.80gb")),
    Break("each_pod_admitted_by_kueue_for_its_profile", "tenancy", "one tenant only",
          lambda o: all_asks(o, tenant="team-a", namespace="ns-team-a")),
    Break("each_pod_admitted_by_kueue_for_its_profile", "tenancy", "two tenants in one namespace",
          lambda o: all_asks(o, namespace="ns-shared")),
    Break("each_pod_admitted_by_kueue_for_its_profile", "ownership", "a Workload of another tenant owns the pod",
          lambda o: first_wl(o, tenant="team-c")),
    Break("each_pod_admitted_by_kueue_for_its_profile", "identity", "two Workloads with one uid",
          lambda o: replace(o, workloads=(o.workloads[0], replace(o.workloads[1], snapshots=tuple(replace(sn, uid=o.workloads[0].snapshots[0].uid) for sn in o.workloads[1].snapshots)), *o.workloads[2:]))),
    Break("each_pod_admitted_by_kueue_for_its_profile", "time", "its Job never seen unsuspended", lambda o: first_snap(o, job_suspended=True)),
    Break("each_pod_admitted_by_kueue_for_its_profile", "provenance", "admitted with no status.admission",
          lambda o: first_snap(o, has_admission=False)),
    Break("each_pod_admitted_by_kueue_for_its_profile", "identity", "the Workload's copy of the pod disagrees",
          lambda o: first_wl(o, pods=(replace(o.workloads[0].pods[0], node="gpu-other"),))),
    Break("each_pod_admitted_by_kueue_for_its_profile", "ownership", "a Workload also ran a pod the act did not ask",
          lambda o: first_wl(o, pods=(*o.workloads[0].pods, replace(o.workloads[0].pods[0], name="mig-x", devices=("MIG-" + "f" * 32,))))),
    Break("all_pods_on_that_node", "time", "the node deleted before the pods ended",
          lambda o: node(o, deleted_at=o.pods[0].running.start + (o.pods[0].running.end - o.pods[0].running.start) / 2)),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "identity", "two pods on replicas of one slice",
          lambda o: first_pod(o, devices=(o.pods[0].devices[0] + "::1",))),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "identity", "the pod reports another card than DCGM",
          lambda o: first_pod(o, gpu_uuid="GPU-2222")),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "identity", "a GPU instance id written with a leading zero",
          lambda o: first_slice(o, instance="0" + o.slices[0].instance)),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "provenance", "a GPU instance id in superscript digits",
          lambda o: first_slice(o, instance="\u00b9")),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "provenance", "series with no card UUID",
          lambda o: replace(o, slices=tuple(replace(x, card="") for x in o.slices))),
    Break("each_tenant_billed_its_slices_share_of_the_card", "time", "billed past the first pod's end",
          lambda o: replace(o, billed_from=o.pods[0].running.end - (o.billed_to - o.billed_from) / 2,
                            billed_to=o.pods[0].running.end + (o.billed_to - o.billed_from) / 2)),
    Break("each_tenant_billed_its_slices_share_of_the_card", "ownership", "one tenant's dollars on another's row", swap_usd),
    Break("each_tenant_billed_its_slices_share_of_the_card", "provenance", "the card's dollars not its rate x seconds",
          lambda o: replace(o, card_usd=o.card_usd * 2, billed=tuple(replace(b, usd=b.usd * 2) for b in o.billed))),
    Break("each_tenant_billed_its_slices_share_of_the_card", "count", "a negative row beside a doubled one",
          lambda o: replace(o, billed=(replace(o.billed[0], gpu_seconds=o.billed[0].gpu_seconds * 2, usd=o.billed[0].usd * 2),
                                       Billed(o.billed[0].tenant + "-x", None, -o.billed[0].gpu_seconds, -o.billed[0].usd), *o.billed[1:]))),
    Break("each_ran_to_success", "state", "a disrupted pod counted as a run",
          lambda o: first_pod(o, evicted=True, disruption="EvictionByEvictionAPI")),
    Break("node_cuts_one_card_by_the_layout", "count", "two physical cards", lambda o: label(o, "nvidia.com/gpu.count", "2")),
    Break("node_cuts_one_card_by_the_layout", "state", "MIG strategy none (no strategy label)",
          lambda o: node(o, labels={k: v for k, v in o.node.labels.items() if k != "nvidia.com/mig.strategy"})),
    Break("node_cuts_one_card_by_the_layout", "state", "the MIG manager still pending",
          lambda o: label(o, "nvidia.com/mig.config.state", "pending")),
    Break("node_cuts_one_card_by_the_layout", "count", "one slice fewer in capacity",
          lambda o: node(o, mig_capacity={k: v - (k == min(o.node.mig_capacity)) for k, v in o.node.mig_capacity.items()})),
    Break("node_cuts_one_card_by_the_layout", "count", "a whole card advertised beside the slices",
          lambda o: node(o, capacity_gpu=1, allocatable_gpu=1)),
    Break("each_pod_admitted_by_kueue_for_its_profile", "ownership", "admitted by the other tenant's ClusterQueue",
          lambda o: first_snap(o, cluster_queue="team-b" if o.asks[o.pods[0].name].tenant == "team-a" else "team-a")),
    Break("each_pod_admitted_by_kueue_for_its_profile", "identity", "charged another profile than its pod asked",
          lambda o: first_snap(o, admitted=((f"nvidia.com/mig-{other_profile(o)}", "gpu-mig"),))),
    Break("each_pod_admitted_by_kueue_for_its_profile", "state", "on the whole-card flavor",
          lambda o: first_snap(o, admitted=((f"nvidia.com/mig-{o.asks[o.pods[0].name].profile}", "gpu-spot"),))),
    Break("each_pod_admitted_by_kueue_for_its_profile", "identity", "its Workload re-created (two uids)",
          lambda o: replace(o, workloads=(replace(o.workloads[0], snapshots=(*o.workloads[0].snapshots, replace(o.workloads[0].snapshots[0], uid="uid-new"))), *o.workloads[1:]))),
    Break("each_pod_admitted_by_kueue_for_its_profile", "time", "Running before its Workload was admitted", admitted_late),
    Break("each_pod_admitted_by_kueue_for_its_profile", "count", "one Workload missing",
          lambda o: replace(o, workloads=o.workloads[1:])),
    Break("each_pod_admitted_by_kueue_for_its_profile", "count", "a Job whose pod was never observed",
          lambda o: replace(o, jobs=o.jobs + 1)),
    Break("all_pods_on_that_node", "identity", "a pod on another node", lambda o: first_pod(o, node="gpu-other")),
    Break("all_ran_at_once", "time", "one pod ended before the last started",
          lambda o: first_pod(o, running=Interval(o.pods[0].running.start, o.pods[0].running.start))),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "identity", "slices of two different cards",
          lambda o: first_slice(o, card="GPU-2222")),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "identity", "a slice series from another node's exporter",
          lambda o: first_slice(o, hostname="gpu-other")),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "identity", "a pod on a slice of another profile",
          lambda o: first_slice(o, profile=other_profile(o))),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "count", "one GPU instance held by two pods",
          lambda o: first_slice(o, instance=o.slices[1].instance)),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "provenance", "no DCGM series for a pod",
          lambda o: replace(o, slices=o.slices[1:])),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "ownership", "a slice's series name another namespace",
          lambda o: first_slice(o, namespace="ns-else")),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "count", "one device id given to two pods",
          lambda o: first_pod(o, devices=o.pods[1].devices)),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "identity",
          "the kubelet's card-named id puts the pod on another GPU instance than DCGM",
          lambda o: legacy_ids(o, lambda i, s: str(int(s.instance) + 8))),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "count",
          "the kubelet's card-named ids put two pods on one GPU instance (two compute instances of it)",
          lambda o: legacy_ids(o, lambda i, s: o.slices[0].instance, ci=lambda i: str(i))),
    Break("each_pod_on_its_own_slice_of_the_profile_it_asked", "identity", "a whole card's id, not a slice's",
          lambda o: first_pod(o, devices=("GPU-1111",))),
    Break("each_tenant_billed_its_slices_share_of_the_card", "count", "shares summing to more than the card",
          lambda o: shift_bill(o, Fraction(1, 7) * o.interval_s)),
    Break("each_tenant_billed_its_slices_share_of_the_card", "ownership", "a tenant billed for another's slices", swap_tenants),
    Break("each_tenant_billed_its_slices_share_of_the_card", "count", "dollars off the card's by a micro-dollar",
          lambda o: shift_bill(o, Fraction(0), Decimal("0.000001"))),
    Break("each_tenant_billed_its_slices_share_of_the_card", "provenance", "no rows from the collector",
          lambda o: replace(o, billed=())),
    Break("each_ran_to_success", "state", "one pod failed", lambda o: first_pod(o, phase="Failed", exit_code=1)),
    Break("node_cuts_one_card_by_the_layout", "time", "the node Ready only after the pods ran",
          lambda o: node(o, ready_at=max(p.running.end for p in o.pods))),
    Break("each_pod_admitted_by_kueue_for_its_profile", "ownership", "an evicted pod of a Workload still running on a slice",
          lambda o: first_wl(o, pods=(*o.workloads[0].pods, replace(o.workloads[0].pods[0], name="mig-x", evicted=True,
                                                                    disruption="EvictionByEvictionAPI")))),
    Break("each_tenant_billed_its_slices_share_of_the_card", "provenance", "the card priced at another rate than the catalog's",
          lambda o: replace(o, card_usd=o.card_usd * 2, usd_per_hour=o.usd_per_hour * 2,
                            billed=tuple(replace(b, usd=b.usd * 2) for b in o.billed))),
)  # fmt: skip
