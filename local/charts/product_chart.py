"""The gpu-finops chart (charts/gpu-finops) through the pinned Helm (local/charts/helm.py): lint, render, and
install on the local target. Helm runs with a private home (never the user's config, cache or repositories)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from gpu_finops.facts.names import MONITORING_NS, PROJECT
from local.charts.chart_inputs import ValidationError
from tools.chart_files import CHART

RELEASE = PROJECT
LINT_VALUES = CHART / "ci" / "default-values.yaml"  # the two required values (chart-testing's ci/ folder)


def _env(work: Path, kubeconfig: Path | None = None) -> dict[str, str]:
    home = work / "helm-home"
    env = {
        **os.environ,
        **{k: str(home / k) for k in ("HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME")},
    }
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    return env


def helm(args: Sequence[str], work: Path, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    from local.charts.helm import ensure_helm

    work.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [str(ensure_helm()), *args], capture_output=True, text=True, env=_env(work, kubeconfig), check=False
    )


def values_args(values: Sequence[dict[str, Any]], work: Path) -> list[str]:
    work.mkdir(parents=True, exist_ok=True)
    out = []
    for i, v in enumerate(values):
        path = work / f"values-{i}.yaml"
        path.write_text(yaml.safe_dump(v))
        out += ["--values", str(path)]
    return out


def template(
    values: Sequence[dict[str, Any]] = (),
    *,
    work: Path,
    api_versions: Sequence[str] = (),
    namespace: str = MONITORING_NS,
    chart: Path = CHART,
    lint_values: bool = True,
) -> list[dict[str, Any]]:
    """`helm template` of the chart; `lint_values` puts ci/default-values.yaml first (the two required
    values). A failure raises ValidationError with helm's own message."""
    work.mkdir(parents=True, exist_ok=True)
    args = ["template", RELEASE, str(chart), "--namespace", namespace]
    args += ["--values", str(LINT_VALUES)] if lint_values else []
    args += values_args(values, work)
    for api in api_versions:
        args += ["--api-versions", api]
    out = helm(args, work)
    if out.returncode != 0:
        raise ValidationError(f"helm template {chart.name} failed: {out.stderr.strip()[-2000:]}")
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def lint(work: Path, chart: Path = CHART) -> subprocess.CompletedProcess[str]:
    """`helm lint --strict` with the ci values (warnings fail too)."""
    return helm(["lint", "--strict", str(chart), "--values", str(LINT_VALUES)], work)
