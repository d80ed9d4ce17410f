"""A card held five ways on the local target, each read back through the held-GPU model: whole, time-sliced,
MPS clients, MIG single and MIG mixed. Every node's devices sum to its physical cards, every pod holds what the
kubelet gave it at its share, and a node-interval's cost split over its holders and its unallocated rest sums
to the node's cost.

On the real local stack (kube-apiserver, the real scheduler, kwok, the simulated device plugin, GFD and MIG
manager reading the device plugin's ConfigMap as the addons stack ships it): one kwok node per mode, labelled
with the named config it asks for (and, for MIG, the layout `nvidia.com/mig.config`), pods of two tenants
placed by the scheduler on each. The holdings are read by the collector's own reader (`gpu_holdings` and the
kubelet pod-resources answer), the split by the collector's `allocation.shares`; and the same nodes through the
CLI a user runs (`gpus`, `diagnose --all`, `cost report` and `cost export` over the local target's own
collector)."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from fractions import Fraction

import pytest

from gpu_finops.facts.kube_keys import LABEL_DEVICE_PLUGIN_CONFIG, LABEL_MIG_CONFIG, LABEL_TENANT
from gpu_finops.model import holding
from harness.waits import eventually

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(600)]

# node mode -> (instance type, device plugin config, MIG layout, [(tenant, resource, devices)], expected:
# cards, each pod's cards' worth)
MODES = {
    "whole": ("g6e.12xlarge", "default", None, [("team-a", "nvidia.com/gpu", 1), ("team-b", "nvidia.com/gpu", 2)],
              4, [Fraction(1), Fraction(2)]),
    "timesliced": ("g6e.xlarge", "timeslice-4", None,
                   [("team-a", "nvidia.com/gpu.shared", 1), ("team-b", "nvidia.com/gpu.shared", 1)],
                   1, [Fraction(1, 4), Fraction(1, 4)]),
    "mps": ("g6e.xlarge", "mps", None, [("team-a", "nvidia.com/gpu.shared", 1), ("team-b", "nvidia.com/gpu.shared", 1)],
            1, [Fraction(1, 4), Fraction(1, 4)]),
    "migsingle": ("p5.48xlarge", "mig-single", "all-1g.10gb", [("team-a", "nvidia.com/gpu", 2), ("team-b", "nvidia.com/gpu", 3)],
                  8, [Fraction(2, 7), Fraction(3, 7)]),
    "migmixed": ("p5.48xlarge", "mig-mixed", "all-balanced",
                 [("team-a", "nvidia.com/mig-3g.40gb", 1), ("team-b", "nvidia.com/mig-1g.10gb", 2)],
                 8, [Fraction(3, 7), Fraction(2, 7)]),
}  # fmt: skip
KINDS = {"whole": holding.Kind.WHOLE, "timesliced": holding.Kind.REPLICA, "mps": holding.Kind.MPS_CLIENT,
         "migsingle": holding.Kind.MIG_SLICE, "migmixed": holding.Kind.MIG_SLICE}  # fmt: skip


def kwok_node(name: str, itype: str, config: str, layout: str | None) -> dict:
    labels = {"kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": itype, "type": "kwok",
              "karpenter.sh/capacity-type": "spot",
              LABEL_DEVICE_PLUGIN_CONFIG: config} | ({LABEL_MIG_CONFIG: layout} if layout else {})  # fmt: skip
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"}, "labels": labels}}  # fmt: skip


def pod(name: str, ns: str, node: str, resource: str, n: int) -> dict:
    """A bare pod the real scheduler places on `node` (by its hostname label), asking `n` of `resource`."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "annotations": {"gpu-finops.io/gpu-profile": "busy-trainer"},
        },
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": "fake", "resources": {"limits": {resource: str(n)}}}],
        },
    }


def test_each_way_of_holding_a_card_sums_to_the_cards_and_splits_the_cost_exactly(local_cluster, tmp_path):
    from acts.conftest import cleanup_namespaces
    from gpu_finops.cost.allocation import UNALLOCATED, shares
    from gpu_finops.cost.allocation import split as allocation_split
    from gpu_finops.cost.gpu_holdings import gpu_holdings, read_node_gpus, with_devices

    kube = local_cluster.kube()
    pod_resources = json.loads(local_cluster.describe().read_text())["pod_resources_url"]
    run = uuid.uuid4().hex[:6]
    ns = {t: f"shared-{run}-{t}" for t in ("team-a", "team-b")}
    nodes = {mode: f"shared-{run}-{mode}" for mode in MODES}
    kube.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": {LABEL_TENANT: t}}}
                for t, n in ns.items()])  # fmt: skip
    try:
        kube.apply(
            [kwok_node(nodes[m], itype, config, layout) for m, (itype, config, layout, *_) in MODES.items()]
        )

        def advertised() -> dict[str, holding.NodeGpus | str]:
            out: dict[str, holding.NodeGpus | str] = {}
            for mode, name in nodes.items():
                try:
                    out[mode] = read_node_gpus(kube.core.read_node(name))
                except holding.NodeGpusError as exc:
                    out[mode] = str(exc)
            return out

        read = eventually(
            advertised,
            lambda got: all(isinstance(g, holding.NodeGpus) and g.offers and g.advertised == MODES[m][4]
                            for m, g in got.items()),
            timeout=90, interval=1, what="every node advertising its cards' worth of devices",
        )  # fmt: skip
        mps_daemons(pod_resources, nodes)
        for mode, node in read.items():
            assert node.cards == MODES[mode][4], (mode, node)
            assert {o.kind for o in node.offers.values()} == {KINDS[mode]}, (mode, node.offers)
        mixed = read["migmixed"].offers
        assert {r: (o.count, o.share) for r, o in mixed.items()} == {
            "nvidia.com/mig-1g.10gb": (16, Fraction(1, 7)),
            "nvidia.com/mig-2g.20gb": (8, Fraction(2, 7)),
            "nvidia.com/mig-3g.40gb": (8, Fraction(3, 7)),
        }

        pods = []
        for mode, (_, _, _, asks, _, _) in MODES.items():
            for i, (tenant, resource, n) in enumerate(asks):
                pods.append(pod(f"{mode}-{i}", ns[tenant], nodes[mode], resource, n))
        kube.apply(pods)
        names = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}

        def holdings():
            return [
                h for h in with_devices(gpu_holdings(kube), pod_resources) if (h.namespace, h.pod) in names
            ]

        held = eventually(
            holdings,
            lambda hs: len(hs) == len(names) and all(len(h.devices) == h.gpus for h in hs),
            timeout=90, interval=1, what="every pod Running with the devices the kubelet gave it",
        )  # fmt: skip
        shares_and_diagnosis(kube, ns["team-a"], nodes)
        ledger_in_cards(nodes, ns)
        cli_figures(local_cluster, nodes, ns, max(h.start for h in held), tmp_path)
    finally:
        cleanup_namespaces(kube, list(ns.values()))
        for name in nodes.values():
            kube.core.delete_node(name)

    by_pod = {h.pod: h for h in held}
    start = max(h.start for h in held)
    end = start + timedelta(seconds=60)
    for mode, (_, _, _, asks, cards, worth) in MODES.items():
        node = read[mode]
        mine = [by_pod[f"{mode}-{i}"] for i in range(len(asks))]
        assert [h.physical_gpus for h in mine] == worth, (mode, [(h.pod, h.physical_gpus) for h in mine])
        assert {h.node for h in mine} == {nodes[mode]}, "placed by the scheduler where the selector asked"
        for h, (tenant, resource, _) in zip(mine, asks, strict=True):
            assert h.tenant == tenant and h.resources == ((resource, h.gpus),), (mode, h)
            # the ids the kubelet gave it are what the node's offer says one of them is, each its share
            got = holding.held(
                holding.Holder(h.namespace, h.pod, h.tenant), list(h.devices), node.offer(resource)
            )
            assert sum(g.share for g in got) == h.physical_gpus and {g.kind for g in got} == {KINDS[mode]}
        ids = [d for h in mine for d in h.devices]
        assert len(ids) == len(set(ids)), f"{mode}: a device given twice: {ids}"
        # one minute of the node at $55.04 a card-hour: the holders' and the unallocated rows sum to it exactly,
        # each within a micro-dollar of its exact share
        ended = [h if h.end is not None else replace(h, end=end) for h in mine]
        split = shares(nodes[mode], start, end, cards * Fraction(60), ended)
        assert {s.tenant: s.gpu_seconds for s in split} == {
            **{t: w * 60 for (t, _, _), w in zip(asks, worth, strict=True)},
            UNALLOCATED: (cards - sum(worth)) * 60,
        }, mode
        cost = (Decimal("55.04") * cards / 60).quantize(Decimal("0.000001"))
        money = allocation_split(cost, [s.weight for s in split])
        assert sum(money) == cost, (mode, money)
        for amount, s in zip(money, split, strict=True):
            assert abs(Fraction(amount) - Fraction(cost) * s.weight) < Fraction(1, 10**6), (mode, s)


def mps_daemons(pod_resources: str, nodes: dict[str, str]) -> None:
    """The MPS node's control daemon limits each of its 4 clients to a quarter of the L40S's 46068 MiB and of
    its SMs; no other mode's node runs one."""
    import urllib.error
    import urllib.request

    def daemon(node: str):
        with urllib.request.urlopen(f"{pod_resources}/v1/nodes/{node}/mps-control-daemon", timeout=10) as r:
            return json.loads(r.read())

    def mps_node() -> dict:
        try:
            return daemon(nodes["mps"])
        except urllib.error.HTTPError as exc:  # not reconciled yet
            return {"error": exc.code}

    got = eventually(mps_node, lambda d: bool(d.get("commands")), timeout=30, interval=1,
                     what="the MPS node's control daemon set")  # fmt: skip
    assert got["commands"] == [
        "set_default_device_pinned_mem_limit 0 11517M",
        "set_default_active_thread_percentage 25",
    ]
    for mode in ("whole", "timesliced", "migmixed"):
        with pytest.raises(urllib.error.HTTPError) as err:
            daemon(nodes[mode])
        assert err.value.code == 404, mode


def shares_and_diagnosis(kube, ns: str, nodes: dict[str, str]) -> None:
    """`gpu-finops gpus`' shares and `diagnose`'s reading of the same live nodes: each node's holders and its
    unheld rest sum to its cards; a pod asking a profile the mixed node does not offer is told what it offers."""
    from gpu_finops.diagnose.engine import diagnose_pod
    from gpu_finops.diagnose.gpus import node_shares
    from gpu_finops.diagnose.kube_observer import KubeObserver, holders
    from gpu_finops.diagnose.model import ALLOCATION
    from gpu_finops.diagnose.read import read_cluster

    observer = KubeObserver(kube)
    listed = node_shares(
        tuple(observer.nodes()), tuple(holders(kube.core.list_pod_for_all_namespaces().items))
    )
    mine = {n.node: n for n in listed if n.node in nodes.values()}
    for mode, name in nodes.items():
        n, (*_, cards, worth) = mine[name], MODES[mode]
        assert (n.cards, n.problem) == (cards, None), (mode, n)
        assert sorted(w for *_, w in n.held) == sorted(worth), (mode, n.held)
        assert sum(w for *_, w in n.held) + n.unheld == cards, (mode, n)
    kube.apply([pod("wants-4g", ns, nodes["migmixed"], "nvidia.com/mig-4g.40gb", 1)])
    eventually(lambda: kube.core.read_namespaced_pod("wants-4g", ns),
               lambda p: any(c.reason == "Unschedulable" for c in (p.status.conditions or ())),
               timeout=60, interval=1, what="the 4g.40gb pod unschedulable")  # fmt: skip
    pods, cluster = read_cluster(observer, "http://127.0.0.1:9", 60, retry_for=0, namespace=ns)
    (waiting,) = [p for p in pods if p.name == "wants-4g"]
    finding = diagnose_pod(waiting, cluster).finding(ALLOCATION)
    assert finding.explains is True, finding
    assert finding.summary.startswith("asks 4g.40gb; no Ready, schedulable node offers it: "), finding.summary
    assert f"{nodes['migmixed']} offers 16 x 1g.10gb, 8 x 2g.20gb, 8 x 3g.40gb (MIG layout all-balanced)" in (
        finding.summary
    ), finding.summary
    assert f"offers:{nodes['migmixed']}:3g.40gb" in finding.key_evidence


def ledger_in_cards(nodes: dict[str, str], ns: dict[str, str]) -> None:
    """The ledger's rules on the target's Prometheus (kube-state-metrics' series, joined on the collector's
    `gpu_finops_device_share`): every node's installed GPUs are its cards, whatever its devices are, and every
    pod's request is its cards' worth."""
    from gpu_finops.clients.promql import PrometheusClient
    from local.cluster.product import prometheus_url

    prom = PrometheusClient(prometheus_url())
    names = "|".join(nodes.values())
    namespaces = "|".join(ns.values())

    def read() -> tuple[dict[str, float], dict[str, float]]:
        installed = {
            s.labels["node"]: s.value
            for s in prom.query(f'node:ledger_gpus_installed:sum{{node=~"{names}"}}')
        }
        requested = {
            s.labels["pod"]: s.value
            for s in prom.query(f'pod:ledger_gpus_requested:sum{{namespace=~"{namespaces}"}}')
        }
        return installed, requested

    def settled(got: tuple[dict[str, float], dict[str, float]]) -> bool:
        installed, requested = got
        return all(
            abs(installed.get(nodes[m], -1) - cards) < 1e-9
            and all(abs(requested.get(f"{m}-{i}", -1) - float(w)) < 1e-9 for i, w in enumerate(worth))
            for m, (*_, cards, worth) in MODES.items()
        )

    # the collector exports the shares once a cycle (60 s), the rules run once a minute
    eventually(
        read, settled, timeout=240, interval=5, what="the ledger counting every node's cards and pods' worth"
    )


def cli_figures(cluster, nodes: dict[str, str], ns: dict[str, str], all_held, tmp_path) -> None:
    """The same live nodes through the CLI: `gpus --json` gives each node its cards and each pod its cards'
    worth, the unheld rest summing to the cards; `ledger ladder --json` counts them among the fleet's installed
    and allocated cards; `diagnose --all --json` names the 4g.40gb pod's cause and the
    mixed node's offer; and over the local target's own collector (60-second intervals), for an interval every
    pod held whole, `cost export`'s FOCUS rows of each node (its tenants' and the unallocated rest) sum to the
    node's cost in `cost report --json`, each tenant's row its pods' share of the cards."""
    import pyarrow.parquet as pq

    from gpu_finops.facts.timestamps import iso
    from tests.local.product_cli import cli

    got = cli(cluster, "gpus", "--json")
    assert got.returncode == 0, got.stderr
    listed = {n["node"]: n for n in json.loads(got.stdout)["shares"] if n["node"] in nodes.values()}
    for mode, (*_, cards, worth) in MODES.items():
        n = listed[nodes[mode]]
        held = sorted(Fraction(h["cards"]) for h in n["held"])
        assert (n["cards"], n["problem"], held) == (cards, None, sorted(worth)), (mode, n)
        assert sum(held) + Fraction(n["unheld_cards"]) == cards, (mode, n)

    got = cli(cluster, "ledger", "ladder", "--window", "5m", "--json")
    assert got.returncode == 0, got.stderr
    now = {r["rung"]: r["now"] for r in json.loads(got.stdout)["rungs"]}
    # the fleet's rungs (other modules' nodes too): at least these nodes' cards and these pods' worth, in cards
    cards = sum(cards for *_, cards, _ in MODES.values())
    held = sum(sum(worth) for *_, worth in MODES.values())
    assert Fraction(now["installed"]) >= cards and Fraction(now["allocated"]) >= held, now

    got = cli(cluster, "diagnose", "--all", "-n", ns["team-a"], "--json")
    assert got.returncode == 0, got.stderr
    (waiting,) = [d for d in json.loads(got.stdout)["diagnoses"] if d["target"].endswith("/wants-4g")]
    assert waiting["first_cause"] == "allocation", waiting
    (finding,) = [f for f in waiting["findings"] if f["check"] == "allocation"]
    assert f"{nodes['migmixed']} offers 16 x 1g.10gb, 8 x 2g.20gb, 8 x 3g.40gb" in finding["summary"], finding

    since = iso(all_held.replace(microsecond=0) + timedelta(seconds=1))  # intervals every pod held throughout

    def exported():
        out = tmp_path / f"focus-{uuid.uuid4().hex[:6]}"
        done = cli(cluster, "cost", "export", "--out", str(out), "--since", since)
        assert done.returncode == 0, done.stderr
        rows = [r for f in sorted(out.rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]
        return [r for r in rows if r["ResourceName"] in nodes.values()]

    def one_interval_each(rows) -> bool:
        return {r["ResourceName"] for r in rows} == set(nodes.values())

    rows = eventually(exported, one_interval_each, timeout=300, interval=10,
                      what="the local collector's first interval of every node with every pod holding")  # fmt: skip
    report = tmp_path / "report.json"
    until = iso(max(r["ChargePeriodEnd"] for r in rows))
    got = cli(cluster, "cost", "report", "--since", since, "--until", until, "--json", str(report))
    assert got.returncode == 0, got.stderr
    cost = {n["node"]: n["cost"] for n in json.loads(report.read_text())}
    tenant_of = {n: t for t, n in ns.items()}
    for mode, (_, _, _, asks, cards, worth) in MODES.items():
        mine = [r for r in rows if r["ResourceName"] == nodes[mode]]
        assert abs(sum(r["EffectiveCost"] for r in mine) - cost[nodes[mode]]) < 1e-6, (mode, mine, cost)
        for start in {r["ChargePeriodStart"] for r in mine}:
            per = {(r["x_Tenant"], tenant_of.get(r["x_Namespace"])): r["x_AllocationShare"] for r in mine
                   if r["ChargePeriodStart"] == start}  # fmt: skip
            want: dict = {}
            for (tenant, _, _), w in zip(asks, worth, strict=True):
                want[(tenant, tenant)] = want.get((tenant, tenant), 0) + float(w / cards)
            if sum(worth) < cards:
                want[("unallocated", None)] = float(1 - sum(worth) / cards)
            assert per.keys() == want.keys() and all(abs(per[k] - want[k]) < 1e-9 for k in want), (
                mode,
                per,
                want,
            )
