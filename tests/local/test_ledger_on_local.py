"""The ledger, live, on the local target: real kube-state-metrics (built from its Go module) and the GPU
simulator, scraped by a real Prometheus that evaluates the ledger's rules; `gpu-finops ledger` reads that
Prometheus, and its GPU-hours agree with the GPU-hours this test computes from the Kubernetes objects'
own timestamps.

The fleet, created directly as kwok nodes (the simulated device plugin advertises their GPUs):
  a    g6e.12xlarge, 4 cards: train-0 (2, training-stepping) until a restart replaces it with train-1
       (2, training-restart); serve-0 (1, serving-traffic, serving-busy)
  b    g6e.12xlarge, 4 cards: head-0 (1, serving-headroom, serving-idle); stall-0 (1, training-stepping
       class but the training-stalled behaviour: busy by the metric, idle by physics)
  c    g6e.xlarge, cordoned, reason repair-queue
  d    g6e.xlarge, cordoned, reason driver-rollout
  e    g6e.xlarge time-sliced into 4 replicas (nvidia.com/gpu.shared): shared-0 holds one, 0.25 card

Expected GPU-hours per bucket: for each pod, its cards x the overlap of [status.startTime, end) with the
window, where end is the deletionTimestamp of a deleted pod (deleted with a 1 s grace period: kwok removes
the object then) and the window's end otherwise; the cordoned nodes' cards x the window; free placeable is
the schedulable cards x the window less every allocation. Exact for installed (constant through the window).

Tolerance, per bucket: every pod start or end inside the window is seen by the ledger late by at most
LATENCY_S = scrape interval (2 s) + rule evaluation interval (5 s) + 2 s (kube-state-metrics' watch, the
simulator's 1 s refresh, and the Kubernetes timestamps' truncation to whole seconds); so a bucket may differ
by the sum over its transitions of cards x LATENCY_S / 3600 GPU-hours, free placeable by the sum over all
transitions (it is the complement), plus any unobserved GPU-hours (an evaluation Prometheus missed is
estimated at the mean installed count, and its samples are missing from every bucket).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from gpu_finops.facts.kube_keys import GPU_RESOURCE, SHARED_GPU_RESOURCE
from gpu_finops.ledger import rules
from gpu_finops.ledger.conventions import BUCKETS, Conventions
from gpu_finops.ledger.measures import dense_peak, mfu
from harness.waits import eventually
from tests.local.kwok_nodes import kwok_node

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(900)]

SCRAPE_S, STEP_S = 2, 5
LATENCY_S = SCRAPE_S + STEP_S + 2
PHASE_S = 60  # each half of the observation: before and after the restart
NS = "ledger-live"
C = Conventions(interval=f"{STEP_S}s")


@pytest.fixture(scope="module")
def ledger_target(local_cluster, tmp_path_factory):
    """The local target, plus the GPU simulator and a Prometheus scraping it and kube-state-metrics and
    evaluating the ledger's rules every STEP_S seconds."""
    from gpu_finops.dcgm.metrics_csv import exported_fields, render
    from local.cluster import kube_state_metrics
    from local.cluster.prometheus_server import PrometheusServer
    from local.sim.gpu_sim import ClusterGpuSimulator

    cluster = local_cluster  # the session's target (tests/local/conftest.py): this module must not stop it
    work = tmp_path_factory.mktemp("ledger-live")
    rules_file = work / "rules.yaml"
    rules_file.write_text(rules.render(C))
    sim = ClusterGpuSimulator(
        cluster.kube(),
        exported_fields(render()),
        pod_resources_url=json.loads(cluster.describe().read_text())["pod_resources_url"],
    )
    port = sim.start()
    prom = PrometheusServer(
        work / "prom",
        [f"127.0.0.1:{port}"],
        scrape_interval=f"{SCRAPE_S}s",
        rule_files=[rules_file],
        jobs={"kube-state-metrics": [kube_state_metrics.url().removeprefix("http://")]},
    )
    try:
        prom.start()
        yield cluster, prom
    finally:
        prom.stop()
        sim.stop()
        remove_fleet(cluster.kube())


NODES = ("ledger-a", "ledger-b", "ledger-c", "ledger-d", "ledger-e")


def remove_fleet(kube) -> None:
    """What this module made, gone before the next module starts: its pods hold GPUs on its kwok nodes
    (bare pods, never completed), and a later module on the session's target would find 11 more GPUs."""
    from kubernetes.client.exceptions import ApiException

    def quietly(call, *args, **kw) -> None:
        try:
            call(*args, **kw)
        except ApiException as exc:
            if exc.status != 404:
                raise

    # the namespace first, while the nodes are there for kwok to finish its pods; then the nodes
    quietly(kube.core.delete_namespace, NS, propagation_policy="Background")
    eventually(
        lambda: [p.metadata.name for p in kube.core.list_namespaced_pod(NS).items],
        lambda left: not left,
        timeout=120,
        what=f"the pods of {NS} gone",
    )
    for name in NODES:
        quietly(kube.core.delete_node, name)
    eventually(
        lambda: sorted({n.metadata.name for n in kube.core.list_node().items} & set(NODES)),
        lambda left: not left,
        timeout=60,
        what=f"the ledger module's nodes {list(NODES)} gone",
    )


def gpu_pod(
    name: str, node: str, cards: int, klass: str, behaviour: str, *, shared: bool = False, **ann: str
):
    resource = SHARED_GPU_RESOURCE if shared else GPU_RESOURCE
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {C.class_label: klass},
            "annotations": {"gpu-finops.io/gpu-profile": behaviour, **ann},
        },
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": "main", "image": "fake", "resources": {"limits": {resource: str(cards)}}}
            ],
        },
    }


@dataclass
class Held:
    pod: str
    bucket: str
    cards: Decimal
    start: datetime | None = None
    end: datetime | None = None


def prom_value(prom, expr: str) -> list[tuple[dict, float]]:
    from gpu_finops.clients.promql import PrometheusClient

    return [(s.labels, s.value) for s in PrometheusClient(prom.url).query(expr)]


def rung(prom, name: str) -> float | None:
    rows = prom_value(prom, f'{rules.RUNG}{{rung="{name}"}}')
    return rows[0][1] if rows else None


def aligned(t: datetime) -> datetime:
    """The next instant at a whole multiple of the step (so the window is whole steps)."""
    epoch = int(t.timestamp())
    return datetime.fromtimestamp(epoch - epoch % STEP_S + STEP_S, UTC)


def sleep_until(t: datetime) -> None:
    time.sleep(max((t - datetime.now(UTC)).total_seconds(), 0))


def overlap_hours(cards: Decimal, start: datetime, end: datetime, w0: datetime, w1: datetime) -> Decimal:
    lo, hi = max(start, w0), min(end, w1)
    return cards * Decimal(max((hi - lo).total_seconds(), 0)) / 3600


def ledger_cli(*argv: str) -> tuple[int, dict, str]:
    result = subprocess.run(
        [sys.executable, "-m", "gpu_finops.cli", "ledger", *argv, "--json", "--step", f"{STEP_S}s"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.returncode, json.loads(result.stdout or "{}"), result.stderr


def test_the_ledger_agrees_with_gpu_hours_computed_from_the_kubernetes_objects(ledger_target):
    cluster, prom = ledger_target
    kube = cluster.kube()
    reason = C.reason_label
    kube.apply(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            kwok_node("ledger-a", "g6e.12xlarge"),
            kwok_node("ledger-b", "g6e.12xlarge"),
            kwok_node("ledger-c", "g6e.xlarge", cordon=True, labels={reason: "repair-queue"}),
            kwok_node("ledger-d", "g6e.xlarge", cordon=True, labels={reason: "driver-rollout"}),
            kwok_node(
                "ledger-e",
                "g6e.xlarge",
                labels={"nvidia.com/device-plugin.config": cluster.config.shared_device_config},
            ),
        ]
    )
    # settled: the ledger sees 11 cards installed (4 + 4 + 1 + 1, and the shared node's 4 replicas as 1
    # card), 9 schedulable, nothing allocated
    eventually(
        lambda: tuple(rung(prom, r) for r in ("installed", "schedulable", "allocated")),
        lambda seen: seen == (11, 9, 0),
        timeout=180,
        what="the ledger's rungs for the empty fleet: installed, schedulable, allocated = 11, 9, 0",
    )
    w0 = aligned(datetime.now(UTC))
    sleep_until(w0)
    kube.apply([p for p, _ in PODS])
    held = {p["metadata"]["name"]: Held(p["metadata"]["name"], bucket, cards_of(p)) for p, bucket in PODS}
    time.sleep(PHASE_S)
    # the restart: the rank is replaced, and the new one reloads its checkpoint (class training-restart)
    gone = kube.core.delete_namespaced_pod("train-0", NS, grace_period_seconds=1)
    assert gone.status.phase == "Running", f"train-0 was {gone.status.phase} when the restart began"
    held["train-0"].start, held["train-0"].end = gone.status.start_time, gone.metadata.deletion_timestamp
    kube.apply([TRAIN_1])
    held["train-1"] = Held("train-1", "allocated_training_restart", Decimal(2))
    time.sleep(PHASE_S)
    w1 = aligned(datetime.now(UTC))
    sleep_until(w1 + timedelta(seconds=2 * STEP_S))  # the window's last evaluations are recorded
    for h in held.values():
        if h.start is None:
            got = kube.core.read_namespaced_pod(h.pod, NS)
            assert got.status.phase == "Running" and got.status.start_time, (h.pod, got.status.phase)
            h.start = got.status.start_time
        h.end = h.end or w1

    expected, tolerance = expected_hours(held, w0, w1)
    for h in held.values():  # the tolerance is narrower than every pod's bucket: an empty one cannot pass
        assert expected[h.bucket] > tolerance[h.bucket], (h.bucket, expected[h.bucket], tolerance[h.bucket])
    code, report, err = ledger_cli("month", "--from", w0.isoformat(), "--to", w1.isoformat(),
                                   "--prometheus-url", prom.url)  # fmt: skip
    assert code == 0, err
    assert "no series in the window" not in err, f"an input is missing: {err}"
    lines = {line["line"]: Decimal(line["gpu_hours"]) for line in report["lines"]}
    window_h = Decimal((w1 - w0).total_seconds()) / 3600
    assert abs(Decimal(report["installed_gpu_hours"]) - 11 * window_h) < Decimal("1e-9"), report
    assert abs(lines["unattributed"]) < Decimal("1e-9"), report
    unobserved = lines["unobserved"]
    assert unobserved <= Decimal("0.02") * 11 * window_h, f"{unobserved} GPU-hours unobserved: {report}"
    off = {
        b: (str(lines[b]), str(expected[b]), str(tolerance[b] + unobserved))
        for b in BUCKETS
        if abs(lines[b] - expected[b]) > tolerance[b] + unobserved
    }
    assert not off, f"bucket: (ledger, from the objects, tolerance) GPU-hours: {off}"
    for b in BUCKETS:
        print(
            f"{b:32} ledger {lines[b]:.6f}  objects {expected[b]:.6f}  tolerance {tolerance[b] + unobserved:.6f}"
        )

    # the ladder at the window's end: every rung exact, in cards (the shared replica is a quarter card;
    # busy: train-1's 2, serve-0, stall-0 and the shared card; live: all of those but stall-0)
    code, ladder, err = ledger_cli("ladder", "--at", w1.isoformat(), "--window", f"{STEP_S * 12}s",
                                   "--prometheus-url", prom.url)  # fmt: skip
    assert code == 0, err
    now = {r["rung"]: r["now"] and float(r["now"]) for r in ladder["rungs"]}
    assert now == {
        "installed": 11,
        "schedulable": 9,
        "allocated": 5.25,
        "busy_by_metric": 5,
        "live_by_physics": 4,
        # run r1 on train-1's 2 devices: MFU x world size, from the simulated run's own annotations
        "useful_training": pytest.approx(2 * mfu(7e9, 4096, 2.0, 2, dense_peak("l40s").flops), rel=1e-9),
    }, ladder
    assert ladder["largest_placeable"] == "2", ladder  # node b: 4 cards, 2 held


RUN = {
    "gpu-finops.io/training-run": "r1",
    "gpu-finops.io/model-parameters": "7e9",
    "gpu-finops.io/tokens-per-step": "4096",
    "gpu-finops.io/step-seconds": "2.0",
}
MODEL = {"gpu-finops.io/serving-model": "m1", "gpu-finops.io/tokens-per-second": "150"}
PODS = [
    (gpu_pod("train-0", "ledger-a", 2, "training-stepping", "training-stepping", **RUN), "allocated_training_stepping"),
    (gpu_pod("serve-0", "ledger-a", 1, "serving-traffic", "serving-busy", **MODEL), "allocated_serving_traffic"),
    (gpu_pod("head-0", "ledger-b", 1, "serving-headroom", "serving-idle", **MODEL), "allocated_serving_headroom"),
    (gpu_pod("stall-0", "ledger-b", 1, "training-stepping", "training-stalled"), "busy_by_metric_idle_by_physics"),
    (gpu_pod("shared-0", "ledger-e", 1, "serving-traffic", "serving-busy", shared=True), "allocated_serving_traffic"),
]  # fmt: skip
TRAIN_1 = gpu_pod("train-1", "ledger-a", 2, "training-restart", "training-stepping", **RUN)


def cards_of(pod: dict) -> Decimal:
    """A pod's GPUs in cards: a replica of the shared node (4 replicas a card) is a quarter."""
    ((resource, qty),) = pod["spec"]["containers"][0]["resources"]["limits"].items()
    return Decimal(qty) / (4 if resource == SHARED_GPU_RESOURCE else 1)


def expected_hours(held: dict[str, Held], w0: datetime, w1: datetime) -> tuple[dict, dict]:
    """GPU-hours per bucket from the objects' timestamps, and each bucket's tolerance (module docstring)."""
    window_h = Decimal((w1 - w0).total_seconds()) / 3600
    expected = dict.fromkeys(BUCKETS, Decimal(0))
    tolerance = dict.fromkeys(BUCKETS, Decimal(0))
    expected["unschedulable_repair_queue"] = expected["unschedulable_driver_rollout"] = window_h
    allocated = Decimal(0)
    for h in held.values():
        assert h.start and h.end
        hours = overlap_hours(h.cards, h.start, h.end, w0, w1)
        expected[h.bucket] += hours
        allocated += hours
        transitions = sum(1 for t in (h.start, h.end) if w0 < t < w1)
        tolerance[h.bucket] += h.cards * transitions * LATENCY_S / 3600
    expected["free_placeable"] = 9 * window_h - allocated
    tolerance["free_placeable"] = sum(tolerance.values())
    return expected, tolerance
