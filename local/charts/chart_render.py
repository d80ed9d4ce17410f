"""The charts at their pinned versions from the Go module cache, the CRDs they ship, and `helm template` of
every release as the addons stack installs it (moved from validate_charts.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpu_finops.facts.config import Config
from local.charts.chart_inputs import (
    RECORDED_VALUES_KEYS,
    Release,
    ValidationError,
    recorded_values_keys,
    release_values,
    releases,
    unknown_values_keys,
)
from local.charts.dry_run import Report

LOCAL_SOURCE = "local target (local/charts/render.all_objects)"


@dataclass(frozen=True)
class ChartSource:
    module: str
    path: str
    # The release pipeline writes Chart.yaml's version at packaging time (hack/release/common.sh,
    # publishHelmChart: `yq e -i ".version = \"${version}\""`), so the tag's source still says the previous
    # minor; we stamp a copy the same way, and only when that script says so.
    stamped_at_release: str | None = None


CHART_SOURCES = {
    "karpenter": ChartSource(
        "github.com/aws/karpenter-provider-aws", "charts/karpenter", "hack/release/common.sh"
    ),
    # The CRDs, installed by their own release before Karpenter's (which skips its crds/ folder); the same
    # release script stamps both charts (publishHelmChart "karpenter-crd").
    "karpenter-crd": ChartSource(
        "github.com/aws/karpenter-provider-aws", "charts/karpenter-crd", "hack/release/common.sh"
    ),
    "kueue": ChartSource("sigs.k8s.io/kueue", "charts/kueue"),
}


def pinned_chart_versions(c: Config) -> dict[str, str]:
    v = c.versions
    return {"karpenter-crd": v.karpenter_chart, "karpenter": v.karpenter_chart, "kueue": v.kueue_chart}


# --- sources: Go modules, charts, CRDs -------------------------------------------------------------------
def module_dir(module_at_version: str) -> Path:
    """A module's folder in the Go module cache (downloaded once; offline afterwards)."""
    from local.build import binaries as build

    build.CACHE.mkdir(parents=True, exist_ok=True)
    try:
        return Path(build.module_info(module_at_version, build.CACHE)["Dir"])
    except build.BuildError as exc:
        raise ValidationError(str(exc)) from None


def chart_dir(name: str, release: Release, work: Path) -> Path:
    """The chart at exactly the release's version; its Chart.yaml version must say so."""
    src = CHART_SOURCES[name]
    root = module_dir(f"{src.module}@v{release.version}")
    chart = root / src.path
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    if str(meta["version"]) == release.version:
        return chart
    stamp_line = '.version = \\"${version}\\"'
    script = root / src.stamped_at_release if src.stamped_at_release else None
    if script is None or stamp_line not in script.read_text():
        raise ValidationError(
            f"{src.module}@v{release.version} {src.path}/Chart.yaml says version {meta['version']}, "
            f"the addons stack pins {release.version}"
        )
    copy = work / "charts" / name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(chart, copy)
    meta.update(version=release.version, appVersion=release.version)
    (copy / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return copy


def crd_files(c: Config) -> list[Path]:
    """The CRDs Karpenter core (with the kwok node class the local target uses), its AWS provider and Kueue
    ship, at the pinned chart versions."""
    karpenter, kueue = c.versions.karpenter_chart, c.versions.kueue_chart
    core = module_dir(f"sigs.k8s.io/karpenter@v{karpenter}")
    aws = module_dir(f"github.com/aws/karpenter-provider-aws@v{karpenter}")
    kq = module_dir(f"sigs.k8s.io/kueue@v{kueue}")
    files = sorted((core / "pkg/apis/crds").glob("*.yaml"))
    files += sorted((core / "kwok/apis/crds").glob("*.yaml"))
    files += sorted((aws / "pkg/apis/crds").glob("karpenter.k8s.aws_*.yaml"))
    files += sorted((kq / "config/components/crd/bases").glob("*.yaml"))
    return files + operator_crd_files()


def operator_crd_files() -> list[Path]:
    """prometheus-operator's CRDs the gpu-finops chart may render (PrometheusRule, ServiceMonitor), from its
    Go module at the pinned version (example/prometheus-operator-crd/, the files its bundle is built from)."""
    from local.build import versions

    root = module_dir(f"github.com/prometheus-operator/prometheus-operator@{versions.PROMETHEUS_OPERATOR}")
    folder = root / "example" / "prometheus-operator-crd"
    return [folder / f"monitoring.coreos.com_{plural}.yaml" for plural in OPERATOR_PLURALS]


# The monitoring.coreos.com kinds the gpu-finops chart renders, and the API versions a cluster with the
# operator serves for them (helm's --api-versions, as .Capabilities.APIVersions.Has sees them).
OPERATOR_PLURALS = ("prometheusrules", "servicemonitors")
OPERATOR_API_VERSIONS = (
    "monitoring.coreos.com/v1",
    "monitoring.coreos.com/v1/PrometheusRule",
    "monitoring.coreos.com/v1/ServiceMonitor",
)
OPERATOR_VARIANT = "with prometheus-operator"


# --- rendering -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Manifests:
    source: str
    namespace: str
    docs: list[dict[str, Any]]


def helm_template(
    helm: Path, chart: Path, release: Release, kube_version: str, work: Path, api_versions: Sequence[str] = ()
) -> list[dict]:
    """`helm template` with the release's values files and `set` entries (helm's --set, as the provider);
    `api_versions`: what the cluster serves besides the built-in APIs (helm's --api-versions)."""
    work.mkdir(parents=True, exist_ok=True)
    cmd = [str(helm), "template", release.name, str(chart), "--namespace", release.namespace]
    cmd += ["--kube-version", kube_version]
    for api in api_versions:
        cmd += ["--api-versions", api]
    for i, values in enumerate(release.values):
        path = work / f"{release.name}-values-{i}.yaml"
        path.write_text(values)
        cmd += ["--values", str(path)]
    for name, value in release.sets:
        cmd += ["--set", f"{name}={value}"]
    home = work / "helm-home"  # never the user's helm config, cache or repositories
    env = {
        **os.environ,
        **{k: str(home / k) for k in ("HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME")},
    }
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise ValidationError(f"helm template {release.name} failed: {out.stderr.strip()[-2000:]}")
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def render_all(c: Config, outdir: Path, work: Path, report: Report | None = None) -> list[Manifests]:
    """Both pinned charts and our CR chart rendered by helm as the stack would install them, plus the local
    target's objects. Into `report`: the stand-ins used, and values keys the charts do not have (helm
    ignores those silently), checked against the real values.yaml or, for charts not served here, the
    recorded keys."""
    from local.charts import render
    from local.charts.helm import ensure_helm

    report = report if report is not None else Report()
    helm = ensure_helm()
    addons = json.loads((outdir / "stacks" / "addons" / "cdk.tf.json").read_text())
    rel = releases(addons, c, report.stand_ins)
    kube_version = f"v{c.versions.kubernetes}.0"
    out = []
    for name, pin in pinned_chart_versions(c).items():
        if rel[name].version != pin:
            raise ValidationError(f"the addons stack installs {name} {rel[name].version}, config pins {pin}")
        chart = chart_dir(name, rel[name], work)
        defaults = yaml.safe_load((chart / "values.yaml").read_text()) or {}
        report.unknown_values += [
            f"{name} {pin}: {k} (not in its values.yaml)"
            for k in unknown_values_keys(release_values(rel[name]), defaults)
        ]
        docs = helm_template(helm, chart, rel[name], kube_version, work)
        out.append(Manifests(f"{name} chart {pin}", rel[name].namespace, docs))
    for name, recorded in recorded_values_keys().items():
        if name not in rel:  # a chart this configuration does not install (the DRA driver without a DRA pool)
            continue
        if rel[name].version != str(recorded["version"]):
            report.unknown_values.append(
                f"{name}: keys recorded for {recorded['version']}, the stack pins {rel[name].version}"
            )
        report.unknown_values += [
            f"{name} {rel[name].version}: {k} (not among the recorded keys, {RECORDED_VALUES_KEYS.name})"
            for k in unknown_values_keys(release_values(rel[name]), recorded["keys"])
        ]
    # our charts: the releases whose chart is a path, resolved from the stack's folder as Terraform does
    for r in rel.values():
        local_chart = outdir / "stacks" / "addons" / r.chart
        if r.chart.startswith(".") and local_chart.is_dir():
            docs = helm_template(helm, local_chart.resolve(), r, kube_version, work)
            out.append(Manifests(f"{r.name} chart", r.namespace, docs))
            if (
                local_chart / "values.schema.json"
            ).is_file():  # the product chart, as an operator user has it
                docs = helm_template(
                    helm, local_chart.resolve(), with_operator(r), kube_version, work, OPERATOR_API_VERSIONS
                )
                out.append(Manifests(f"{r.name} chart {OPERATOR_VARIANT}", r.namespace, docs))
    out.append(Manifests(LOCAL_SOURCE, "default", render.all_objects(c)))
    return out


def with_operator(release: Release) -> Release:
    """The product chart's release as a prometheus-operator cluster would install it: rules as a
    PrometheusRule (mode auto, the CRD served) and the collector's ServiceMonitor on."""
    extra = yaml.safe_dump({"rules": {"mode": "auto"}, "serviceMonitor": {"enabled": True}})
    return Release(
        release.name,
        release.chart,
        release.version,
        release.namespace,
        (*release.values, extra),
        release.sets,
    )


def namespaces_of(sets: Sequence[Manifests]) -> set[str]:
    names = {m.namespace for m in sets}
    names |= {
        d["metadata"]["namespace"] for m in sets for d in m.docs if d.get("metadata", {}).get("namespace")
    }
    return names
