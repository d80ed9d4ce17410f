"""The diagnosis exporter's gauge: counts by cause where the diagnosis holds, a zero only when the pending
pods were listed, and no count at all (healthy 0, the reason on /healthz) where it could not run."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import replace

import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gpu_finops.diagnose.exporter import CAUSES, NOT_CHECKED, DiagnosisMetrics, read_once
from gpu_finops.diagnose.model import ALLOCATION, APPLICATION, PLACEMENT, PodFacts
from gpu_finops.facts import collector_metrics as names
from tests.gpu_finops.diagnose.diagnose_fixtures import (
    NS,
    allocation_situation,
    application_situation,
    memory_situation,
    pending,
    placement_situation,
)

NOW = 1_800_000_000.0


def scrape(metrics: DiagnosisMetrics) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """name -> sorted labels -> value, as Prometheus would parse the exposition."""
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def pending_series(metrics: DiagnosisMetrics) -> dict[tuple[str, str], float]:
    found = scrape(metrics).get(names.PENDING_GPU_PODS, {})
    return {(dict(k)["cause"], dict(k)["namespace"]): v for k, v in found.items()}


def never(*_):
    raise AssertionError("the cluster read must not run when no GPU pod waits")


def cycle(list_pending, read_cluster) -> DiagnosisMetrics:
    metrics = DiagnosisMetrics()
    metrics.reading = read_once(list_pending, read_cluster, now=lambda: NOW)
    return metrics


def test_pending_gpu_pods_are_counted_by_first_cause_and_namespace():
    pod_a, alloc = allocation_situation()
    other = replace(pending("waiting-2"), namespace="team-b")
    metrics = cycle(lambda: [pod_a, other], lambda: ([pod_a, other], alloc))
    series = pending_series(metrics)
    assert series[(ALLOCATION, NS)] == 1 and series[(ALLOCATION, "team-b")] == 1, series
    assert {c for c, ns in series if ns == ""} == set(CAUSES), "each cause has its fleet-wide zero"
    assert all(v == 0 for (c, ns), v in series.items() if ns == "")
    assert sum(series.values()) == 2
    got = scrape(metrics)
    assert got[names.DIAGNOSIS_HEALTHY] == {(): 1.0}
    assert got[names.DIAGNOSIS_LAST_RUN] == {(): NOW}


@pytest.mark.parametrize(
    ("situation", "cause"),
    [
        (allocation_situation, ALLOCATION),
        (placement_situation, PLACEMENT),
        (application_situation, APPLICATION),
    ],
)
def test_the_cause_is_the_diagnosis_first_cause(situation, cause):
    pod, cluster = situation()
    series = pending_series(cycle(lambda: [pod], lambda: ([pod], cluster)))
    assert {k: v for k, v in series.items() if v} == {(cause, NS): 1}


def test_nothing_pending_is_a_zero_per_cause_only_because_the_list_was_read():
    running = PodFacts(NS, "trainer", phase="Running", node_name="gpu-a", gpu_requests={"nvidia.com/gpu": 1})
    cpu_only = PodFacts(NS, "web")  # pending, asks for no GPU: not this gauge's
    metrics = cycle(lambda: [running, cpu_only], never)
    assert pending_series(metrics) == {(c, ""): 0 for c in CAUSES}
    assert scrape(metrics)[names.DIAGNOSIS_HEALTHY] == {(): 1.0}
    assert metrics.problems == []


def test_pods_that_cannot_be_listed_give_no_count_and_say_why():
    def refused():
        raise ConnectionError("https://10.0.0.1:443 refused")

    metrics = cycle(refused, never)
    got = scrape(metrics)
    assert names.PENDING_GPU_PODS not in got, "no zero when nothing was read"
    assert names.DIAGNOSIS_LAST_RUN not in got
    assert got[names.DIAGNOSIS_HEALTHY] == {(): 0.0}
    assert metrics.problems == [
        "the pending pods could not be listed from Kubernetes: https://10.0.0.1:443 refused"
    ]


def test_a_failed_cluster_read_gives_no_count_and_says_why():
    pod, _ = allocation_situation()

    def forbidden():
        raise PermissionError("events.k8s.io events is forbidden")

    metrics = cycle(lambda: [pod], forbidden)
    assert pending_series(metrics) == {}
    assert scrape(metrics)[names.DIAGNOSIS_HEALTHY] == {(): 0.0}
    assert metrics.problems == [
        "1 pending pod(s) listed, but the cluster read failed: events.k8s.io events is forbidden"
    ]


def test_without_dcgm_the_counts_stand_and_health_says_what_was_not_checked():
    pod, cluster = memory_situation()  # free replicas on a VRAM-full card: only DCGM could say memory
    blind = replace(cluster, stats=None, stats_unavailable="Prometheus at http://prom:9090 unreachable")
    metrics = cycle(lambda: [pod], lambda: ([pod], blind))
    assert {k: v for k, v in pending_series(metrics).items() if v} == {(NOT_CHECKED, NS): 1}
    assert scrape(metrics)[names.DIAGNOSIS_HEALTHY] == {(): 0.0}
    assert metrics.problems == [
        "DCGM not read (Prometheus at http://prom:9090 unreachable): memory and application not checked "
        "for 1 pending GPU pod(s)"
    ]


def test_before_the_first_cycle_there_is_no_count_and_healthz_is_503():
    from gpu_finops.clients.metrics_http import serve

    metrics = DiagnosisMetrics()
    assert pending_series(metrics) == {}
    server = serve(metrics.registry, lambda: metrics.problems, 0, host="127.0.0.1")
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{url}/healthz", timeout=5)
        assert err.value.code == 503
        assert json.load(err.value) == {
            "healthy": False,
            "problems": ["no diagnosis cycle has completed yet"],
        }
        metrics.reading = read_once(lambda: [], never, now=lambda: NOW)
        with urllib.request.urlopen(f"{url}/healthz", timeout=5) as ok:
            assert json.load(ok) == {"healthy": True, "problems": []}
    finally:
        server.shutdown()
