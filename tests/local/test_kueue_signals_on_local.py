"""`gpu-finops diagnose` quotes Kueue's own reason and queue position for a pending GPU workload on the local
target (Kueue v0.19.2 with VisibilityOnDemand and UnadmittedWorkloadsObservability on, its visibility API
through kube-apiserver's aggregation layer), and with both gates off says `fallback:` and derives the rest
itself.

The world (tests/gpu_finops/diagnose/record_kueue_signals.build_world): a ClusterQueue of one GPU, one Job holding it,
two Jobs waiting for it (positions 1 and 2; the first WaitingForQuota, the second without a condition, as Kueue
leaves a workload equivalent to one that just failed), one asking two GPUs (ExceedsMaxQuota)."""

from __future__ import annotations

import json
import secrets

import pytest

from gpu_finops.cli import main
from gpu_finops.diagnose.model import ADMISSION
from local.cluster.processes import PORTS
from tests.gpu_finops.diagnose.record_kueue_signals import build_world, delete_world

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def world(local_cluster):
    kube = local_cluster.kube()
    name = f"kueue-signals-{secrets.token_hex(3)}"
    try:
        yield name, build_world(kube, name)
    finally:
        delete_world(kube, name)


def diagnose(capsys, cluster, namespace: str, workload: str) -> tuple[int, dict]:
    code = main(
        [
            "diagnose",
            "--workload",
            workload,
            "-n",
            namespace,
            "--json",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--prometheus-url",
            f"http://127.0.0.1:{PORTS['prometheus']}",
            "--prometheus-retry",
            "5",
        ]
    )
    out = capsys.readouterr()
    assert out.out, out.err
    (d,) = json.loads(out.out)["diagnoses"]
    return code, next(f for f in d["findings"] if f["check"] == ADMISSION)


def test_diagnose_quotes_kueues_position_and_reason_for_a_job_over_quota(local_cluster, world, capsys):
    namespace, workloads = world
    _, second = diagnose(capsys, local_cluster, namespace, workloads["second"])
    assert second["explains"] is True
    assert second["summary"].startswith(
        f"Kueue: position 1 in ClusterQueue {namespace} (0 ahead of it), 1 in LocalQueue main, priority 0 "
        "(visibility.kueue.x-k8s.io/v1beta2); Kueue: reason WaitingForQuota: "
    ), second["summary"]
    assert {f"kueue-position:{namespace}:1", "kueue-reason:WaitingForQuota"} <= set(second["key_evidence"])
    _, third = diagnose(capsys, local_cluster, namespace, workloads["third"])
    assert third["summary"].startswith(
        f"Kueue: position 2 in ClusterQueue {namespace} (1 ahead of it), 2 in LocalQueue main"
    ), third["summary"]
    _, big = diagnose(capsys, local_cluster, namespace, workloads["too-big"])
    assert "Kueue: reason ExceedsMaxQuota" in big["summary"], big["summary"]
    assert big["summary"].startswith("Kueue: position "), big["summary"]


def test_with_the_gates_off_diagnose_says_fallback_and_derives_it_itself(local_cluster, world, capsys):
    from harness.waits import eventually
    from infra.objects.kueue import KUEUE_FEATURE_GATES

    namespace, workloads = world
    local_cluster.restart_kueue({gate: False for gate in KUEUE_FEATURE_GATES})
    try:

        def admission():
            return diagnose(capsys, local_cluster, namespace, workloads["second"])[1]

        f = eventually(
            admission,
            lambda f: "legacy 'Pending'" in f["summary"],
            timeout=120,
            interval=2,
            what="Kueue's legacy reason after the restart with its gates off",
        )
        assert f["summary"].startswith(
            "fallback: no queue position from Kueue: visibility.kueue.x-k8s.io/v1beta2 is registered but its "
            "server does not answer (503"
        ), f["summary"]
        assert "UnadmittedWorkloadsObservability feature gate off" in f["summary"]
        assert f"Kueue has not admitted workload {namespace}/{workloads['second']}" in f["summary"]
        assert {"kueue-fallback:position", "kueue-fallback:reason", "QuotaReserved=False"} <= set(
            f["key_evidence"]
        )
    finally:
        local_cluster.restart_kueue(dict(KUEUE_FEATURE_GATES))
