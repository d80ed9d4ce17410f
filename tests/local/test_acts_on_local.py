"""The acts, for real, on the local rehearsal target — and proof that they can fail there.

Brings the local target up once (binaries cached outside the clone), runs the act suite as a user does
(`pytest acts --target=local`), then breaks the two things the acts exist to catch: the exporter's default
CSV (no SM_ACTIVE) must fail act 6 with the collector's message, and quota two per tenant must fail act 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.metrics_csv import EXPORTER_DEFAULT_METRICS, render

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def local_cluster():
    from local.cluster import LocalCluster, LocalError

    cluster = LocalCluster()
    try:
        cluster.up()
    except LocalError as exc:
        pytest.fail(f"the local target did not come up: {exc}")
    yield cluster
    cluster.down()
    assert not any(cluster.status().values()), "local down left processes running"


def run_acts(tmp_path: Path, *select: str, env: dict[str, str] | None = None) -> tuple[int, dict, str]:
    reports = tmp_path / "reports"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *(select or ("acts",)),
        "--target=local",
        "-p",
        "no:cacheprovider",
        "-rs",
        "--tb=short",
        f"--junitxml={reports / 'acts.junit.xml'}",
    ]
    result = subprocess.run(
        cmd,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {}), "GPU_FINOPS_REPORT_DIR": str(reports)},
    )
    data = json.loads((reports / "acts.json").read_text()) if (reports / "acts.json").exists() else {}
    return result.returncode, {a["act"]: a for a in data.get("acts", [])}, result.stdout + result.stderr


def test_acts_1_2_3_6_pass_and_4_5_are_skipped_with_reasons(local_cluster, tmp_path):
    code, acts, out = run_acts(tmp_path)
    assert code == 0, out[-8000:]
    outcomes = {name.split("::")[-1]: a["outcome"] for name, a in acts.items()}
    assert outcomes == {
        "test_cold_start": "passed",
        "test_two_of_twelve_admitted_one_per_tenant_running_at_once": "passed",
        "test_high_priority_preempts_low_which_is_requeued": "passed",
        "test_one_gpu_four_replicas_four_pods_one_uuid": "skipped",
        "test_spot_interruption_is_a_graceful_drain": "skipped",
        "test_every_record_has_gpu_util_sm_active_cost_and_idle_share": "passed",
    }, out[-8000:]
    assert "cannot prove it" in acts["test_one_gpu_four_replicas_four_pods_one_uuid"]["message"]
    assert "cannot prove it" in acts["test_spot_interruption_is_a_graceful_drain"]["message"]
    cold = acts["test_cold_start"]["verdict"]
    assert cold["holds"] and cold["evidence"]["timings"]["node_ready_s"] is not None
    assert (tmp_path / "reports" / "acts-timeline.png").exists() and (
        tmp_path / "reports" / "acts.junit.xml"
    ).exists()


def test_act_6_fails_with_the_exporters_default_csv(local_cluster, tmp_path):
    csv = tmp_path / "default-counters.csv"
    csv.write_text(render(EXPORTER_DEFAULT_METRICS))
    code, acts, out = run_acts(
        tmp_path, "acts/test_06_cost_collection.py", env={"GPU_FINOPS_DCGM_CSV": str(csv)}
    )
    assert code != 0, out[-4000:]
    (act,) = acts.values()
    assert act["outcome"] == "failed"
    assert "SM_ACTIVE missing (the collector said: missing-sm-active" in act["message"], act["message"][
        -3000:
    ]


def test_act_2_fails_when_quota_is_two_per_tenant(local_cluster, tmp_path):
    kube = local_cluster.kube()
    patch = {
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "gpu-spot",
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 2, "borrowingLimit": 0}],
                        }
                    ],
                }
            ]
        }
    }
    names = [t.name for t in local_cluster.config.tenants]
    for n in names:
        kube.custom.patch_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", n, patch)
    try:
        code, acts, out = run_acts(tmp_path, "acts/test_02_quota_admission.py")
    finally:
        from local import render

        kube.apply([o for o in render.all_objects(local_cluster.config) if o["kind"] == "ClusterQueue"])
    assert code != 0, out[-4000:]
    (act,) = acts.values()
    assert act["outcome"] == "failed" and "admitted" in act["message"], act["message"][-3000:]
