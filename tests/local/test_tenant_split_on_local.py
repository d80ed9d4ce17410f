"""Two tenants share one time-sliced card on the local target; the real collector records who held it; the
FOCUS export splits each node-interval between them exactly, and the FOCUS project's validator accepts it.

On the real local stack (kube-apiserver, kwok, Karpenter, the simulated device plugin and DCGM exporter, a
real Prometheus): a team-a pod and a team-b pod each hold one replica (nvidia.com/gpu.shared) of the same
card on a gpu-shared node. The collector (gpu_finops.cost.collector, holdings read from the Kubernetes API and the
kubelet pod-resources answer) runs a cycle per 10 s interval. Then team-a's pod is deleted, and `gpu-finops
cost export --format parquet` writes the dataset from the store alone. The test computes each tenant's
GPU-seconds itself from the pods' own timestamps and checks the rows against them."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

import pyarrow.parquet as pq
import pytest

from gpu_finops.facts import timeouts
from gpu_finops.facts.kube_keys import LABEL_GPU_REPLICAS, LABEL_NODEPOOL, LABEL_QUEUE_NAME, LABEL_TENANT
from gpu_finops.facts.kube_keys import SHARED_GPU_RESOURCE as SHARED
from gpu_finops.facts.timestamps import iso
from harness.waits import eventually

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(900)]
INTERVAL = 10  # seconds per cost record (the in-cluster collector's default is 60)
A_SECONDS, B_SECONDS = 35, 30  # how long kwok keeps each pod Running before it Succeeds
SM = {"team-a": 0.6, "team-b": 0.2}  # the load the DCGM simulator reports for each tenant's replica
QUANTUM = Decimal("0.000001")


def shared_job(target, name: str, ns: str, run: str, seconds: int, sm: float, node: str | None) -> dict:
    """A one-replica Job outside Kueue. The config gives team-b no shared quota (gpu_finops/facts/config.yaml:
    shared_gpu_quota 0), so through its LocalQueue a replica would never be admitted; who held the card is
    what the split is about, not who was admitted, so both Jobs carry no queue label and are not
    suspended: Kueue (manageJobsWithoutQueueName off) leaves them alone and the scheduler places them. A
    Job, not a bare pod, because kwok completes only Jobs' pods, which gives each pod a real finish time."""
    from acts.jobs import gpu_job

    job = gpu_job(target, name, ns, "", run, seconds=seconds, sm_active=sm, resource=SHARED)
    del job["metadata"]["labels"][LABEL_QUEUE_NAME]
    job["spec"]["suspend"] = False
    # the second pod goes to the first's node by name (kwok nodes' hostname label is not their name)
    term = (
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        if node
        else {"matchExpressions": [{"key": LABEL_NODEPOOL, "operator": "In", "values": ["gpu-shared"]}]}
    )
    job["spec"]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    return job


def job_pod(kube, ns: str, job: str):
    pods = kube.core.list_namespaced_pod(ns, label_selector=f"job-name={job}").items
    return pods[0] if len(pods) == 1 else None


def running(pod) -> bool:
    return (
        pod is not None and pod.status.phase in ("Running", "Succeeded") and pod.status.start_time is not None
    )


def held_span(pod) -> tuple[datetime, datetime]:
    """[startTime, last container's finishedAt): read by the test from the pod, as the API reports it."""
    (status,) = pod.status.container_statuses
    return pod.status.start_time.astimezone(UTC), status.state.terminated.finished_at.astimezone(UTC)


def overlap(span: tuple[datetime, datetime], start: datetime, end: datetime) -> Fraction:
    lo, hi = max(span[0], start), min(span[1], end)
    return Fraction(int((hi - lo).total_seconds() * 10**6), 10**6) if hi > lo else Fraction(0)


def wait_until(t: datetime) -> None:
    eventually(
        lambda: datetime.now(UTC), lambda now: now >= t, timeout=120, interval=0.25, what=f"clock {iso(t)}"
    )


def test_two_tenants_on_one_time_sliced_card_split_exactly_and_the_export_passes_focus_validator(
    local_cluster, tmp_path
):
    from acts.conftest import cleanup_namespaces
    from acts.targets import local_target

    kube, config, target = local_cluster.kube(), local_cluster.config, local_target()
    assert config.timeslicing_replicas == 4
    pod_resources = json.loads(local_cluster.describe().read_text())["pod_resources_url"]
    run = uuid.uuid4().hex[:6]
    ns = {t: f"split-{run}-{t}" for t in ("team-a", "team-b")}
    kube.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": {LABEL_TENANT: t}}}
                for t, n in ns.items()])  # fmt: skip
    try:
        split_and_validate(kube, target, ns, run, pod_resources, tmp_path)
    finally:
        cleanup_namespaces(kube, list(ns.values()))


def split_and_validate(kube, target, ns, run, pod_resources, tmp_path) -> None:
    from gpu_finops.cli import main
    from gpu_finops.clients.nodes import KubeNodeSource
    from gpu_finops.clients.promql import PrometheusClient
    from gpu_finops.cost.collector import Collector, align
    from gpu_finops.cost.holdings_record import kube_reader
    from gpu_finops.cost.pricing import CatalogRates
    from gpu_finops.cost.store import SqliteCostStore
    from gpu_finops.dcgm.metrics_csv import exported_fields, render
    from gpu_finops.facts.catalog import prices
    from local.cluster.prometheus_server import PrometheusServer
    from local.sim.gpu_sim import ClusterGpuSimulator
    from tests.gpu_finops.cost.focus_validator import assert_accepted

    store_path = tmp_path / "cost.sqlite"
    sim = ClusterGpuSimulator(kube, exported_fields(render()), pod_resources_url=pod_resources)
    port = sim.start()
    try:
        with PrometheusServer(tmp_path / "prom", [f"127.0.0.1:{port}"], scrape_interval="1s") as prom:
            kube.batch.create_namespaced_job(
                ns["team-a"], shared_job(target, "a", ns["team-a"], run, A_SECONDS, SM["team-a"], None)
            )
            pod_a = eventually(lambda: job_pod(kube, ns["team-a"], "a"), running,
                               timeout=timeouts.NODE_READY + timeouts.POD_RUNNING, interval=1, what="team-a's pod Running")  # fmt: skip
            node = pod_a.spec.node_name
            node_obj = kube.core.read_node(node)
            assert node_obj.metadata.labels[LABEL_GPU_REPLICAS] == "4", node_obj.metadata.labels
            collector = Collector(KubeNodeSource(kube.core), PrometheusClient(prom.url), CatalogRates(prices()),
                                  SqliteCostStore(store_path), interval=INTERVAL, grace_seconds=INTERVAL,
                                  holdings=kube_reader(kube, pod_resources))  # fmt: skip
            first = align(pod_a.status.start_time.astimezone(UTC), INTERVAL)
            ends = [first + timedelta(seconds=INTERVAL * (i + 1)) for i in range(7)]
            for i, end in enumerate(ends):
                if i == 2:  # team-b joins after one whole interval team-a held alone
                    wait_until(ends[1] + timedelta(seconds=1))
                    kube.batch.create_namespaced_job(
                        ns["team-b"],
                        shared_job(target, "b", ns["team-b"], run, B_SECONDS, SM["team-b"], node),
                    )
                wait_until(end + timedelta(seconds=2))
                collector.cycle(end - timedelta(seconds=INTERVAL), end)
            pods = {t: eventually(lambda t=t: job_pod(kube, ns[t], t[-1]), lambda p: p is not None and p.status.phase == "Succeeded",
                                  timeout=60, interval=1, what=f"{t}'s pod Succeeded") for t in ns}  # fmt: skip
        assert pods["team-b"].spec.node_name == node
        spans = {t: held_span(p) for t, p in pods.items()}
        assert spans["team-b"][1] <= ends[-1], f"team-b held past the last collected interval: {spans}"
        # team-a's Job and pod are deleted before the export: what was recorded still attributes them
        kube.batch.delete_namespaced_job("a", ns["team-a"], propagation_policy="Background")
        eventually(lambda: job_pod(kube, ns["team-a"], "a"), lambda p: p is None, timeout=60, interval=1,
                   what="team-a's pod deleted")  # fmt: skip
    finally:
        sim.stop()

    out = tmp_path / "export"
    assert main(["cost", "export", "--format", "parquet", "--out", str(out), "--store", f"sqlite:{store_path}",
                 "--since", iso(first), "--billing-account-id", "123456789012"]) == 0  # fmt: skip
    files = sorted(out.glob("billing_period=*/focus.parquet"))
    rows = [r for f in files for r in pq.read_table(f).to_pylist() if r["ResourceName"] == node]
    created = node_obj.metadata.creation_timestamp.astimezone(UTC)
    by_interval: dict[datetime, list[dict]] = {}
    for r in rows:
        by_interval.setdefault(r["ChargePeriodStart"].astimezone(UTC), []).append(r)
    assert sorted(by_interval) == [e - timedelta(seconds=INTERVAL) for e in ends], sorted(by_interval)

    money = lambda v: Decimal(repr(v))  # noqa: E731 — the double on the quantum, back to its decimal
    total = {t: Fraction(0) for t in ns}
    for start, got in sorted(by_interval.items()):
        end = start + timedelta(seconds=INTERVAL)
        # The node's rows sum EXACTLY to its interval cost, in every money column.
        node_cost = money(got[0]["x_NodeEffectiveCost"])
        assert sum((money(r["EffectiveCost"]) for r in got), Decimal(0)) == node_cost, got
        assert all(r["x_Status"] != "no-holdings" for r in got), [(r["x_Tenant"], r["x_Status"]) for r in got]
        capacity = overlap((created, end), start, end)  # one physical card x the seconds the node existed
        held = {t: overlap(spans[t], start, end) / 4 for t in ns}  # a replica is a quarter of the card
        tenants = {r["x_Tenant"]: r for r in got}
        assert set(tenants) == {t for t, s in held.items() if s > 0} | {"unallocated"}, (
            start,
            sorted(tenants),
        )
        for t, seconds in held.items():
            if seconds == 0:
                continue
            total[t] += seconds
            # GPU-seconds: the test's own figure from the pods' timestamps (whole seconds both sides), to 1 us
            assert abs(Fraction(tenants[t]["x_GpuSeconds"]) - seconds) < Fraction(1, 10**6), (
                start,
                t,
                tenants[t],
            )
            assert tenants[t]["x_Pods"] == json.dumps([pods[t].metadata.name]), tenants[t]["x_Pods"]
            # money: within one quantum (one micro-dollar) of the exact share, by the largest-remainder split
            exact = Fraction(node_cost) * seconds / capacity
            assert abs(Fraction(money(tenants[t]["EffectiveCost"])) - exact) < Fraction(QUANTUM), (start, t)
        unheld = capacity - sum(held.values())
        assert abs(Fraction(tenants["unallocated"]["x_GpuSeconds"]) - unheld) < Fraction(1, 10**6), (
            start,
            got,
        )
    assert by_interval[ends[1] - timedelta(seconds=INTERVAL)] and "team-b" not in {
        r["x_Tenant"] for r in by_interval[ends[1] - timedelta(seconds=INTERVAL)]
    }  # the interval team-a held alone has no team-b row
    assert total["team-a"] > 0 and total["team-b"] > 0, total

    # The FOCUS project's validator accepts this local export (the same overrides as the fixture test).
    for f in files:
        assert_accepted(f, tmp_path)
