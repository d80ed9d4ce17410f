"""Running the acts as a user does against the local target, and putting the target back as shipped
between test modules (shared by tests/local's modules; the target itself is tests/local/conftest.py's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


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
    written_as_read(reports)
    return result.returncode, {a["act"]: a for a in data.get("acts", [])}, result.stdout + result.stderr


def written_as_read(reports: Path) -> None:
    """What the acts wrote is what `gpu-finops report` reads: acts.json and act 7's diagnosis, where written,
    pass their schemas (gpu_finops/report/schemas.py), or the run fails naming the place."""
    from gpu_finops.facts.file_schema import validate
    from gpu_finops.report.schemas import ActsReportFile, DiagnosisFile

    for name, model in (("acts.json", ActsReportFile), ("act-7-diagnose.json", DiagnosisFile)):
        if (reports / name).exists():
            validate(model, json.loads((reports / name).read_text()), str(reports / name), name)


def restore_target(cluster: Any) -> list[str]:
    """What a module's acts and mutations may leave behind, undone so the next module starts as `local up`
    left the target: act 7's maintenance taint, a cordon, our objects (NodePools, ClusterQueues, the device
    plugin's config) as rendered, and the acts' own namespaces (their Jobs' Workloads released through
    Kueue first). Returns what it changed, in words."""
    from kubernetes.client import ApiClient

    from acts.namespaces import cleanup_namespaces
    from gpu_finops.facts.kube_keys import LABEL_ACT_RUN, TAINT_ACT7_MAINTENANCE
    from local.charts import render

    kube = cluster.kube()
    done = []
    for node in kube.core.list_node().items:
        name, taints = node.metadata.name, node.spec.taints or []
        kept = [t for t in taints if t.key != TAINT_ACT7_MAINTENANCE]
        spec: dict[str, Any] = {}
        if len(kept) != len(taints):
            spec["taints"] = [ApiClient().sanitize_for_serialization(t) for t in kept]
            done.append(f"taint {TAINT_ACT7_MAINTENANCE} removed from {name}")
        if node.spec.unschedulable:  # Karpenter v1 taints what it disrupts; a cordon is someone's leftover
            spec["unschedulable"] = False
            done.append(f"{name} uncordoned")
        if spec:
            kube.core.patch_node(name, {"spec": spec})
    kube.apply(render.all_objects(cluster.config))
    left = [
        ns.metadata.name
        for ns in kube.core.list_namespace(label_selector=LABEL_ACT_RUN).items
        if ns.status.phase != "Terminating"
    ]
    if left:
        cleanup_namespaces(kube, left)
        done.append(f"act namespaces deleted: {left}")
    return done
