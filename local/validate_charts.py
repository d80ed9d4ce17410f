"""What `make up` would apply, checked here by the real components before any apply (docs/infra.md):

- Helm (local/helm.py, pinned, from the Go module proxy) renders the Karpenter and Kueue charts from their
  modules' `charts/` folders at the versions the addons stack pins, with the values and `set` entries read
  from the synthesized addons stack, and renders our CR chart the same way.
- A throwaway kube-apiserver (local/validation_server.py) with the CRDs Karpenter (core and AWS) and Kueue
  ship dry-runs every rendered object with `dryRun=All` and `fieldValidation=Strict`: OpenAPI schemas,
  CEL rules, enums and unknown fields are judged by the server's own code.

Terraform references in the releases' inputs (`${...}`, known only at apply) are replaced by plausible
literals (`stand_ins`), and the report lists each replacement.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from facts.config import Config

FIELD_MANAGER = "gpu-finops-validate"
CRDS_ESTABLISHED = 60.0  # seconds the server may take to serve freshly created CRDs
TF_REF = re.compile(r"\$\{([^}]*)\}")
LOCAL_SOURCE = "local target (local/render.all_objects)"


class ValidationError(RuntimeError):
    """The check itself could not run (a chart or module missing, helm failing): not a rejection."""


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


# --- the releases' inputs, from the synthesized stack ----------------------------------------------------
def stand_ins(c: Config) -> dict[tuple[str, str], str]:
    """(Terraform resource type, attribute) -> a plausible literal for a value known only at apply."""
    account = "123456789012"
    return {
        ("aws_sqs_queue", "name"): f"{c.cluster_name}-interruption",
        ("aws_eks_cluster", "endpoint"): (
            f"https://0123456789ABCDEF0123456789ABCDEF.gr7.{c.region}.eks.amazonaws.com"
        ),
        ("aws_ecr_repository", "repository_url"): (
            f"{account}.dkr.ecr.{c.region}.amazonaws.com/{c.cluster_name}-collector"
        ),
        ("aws_dynamodb_table", "name"): f"{c.cluster_name}-costs",
    }


def substitute(text: str, c: Config, used: list[str] | None = None) -> str:
    """Replace each `${...}` with its stand-in; an unknown reference is an error naming it."""
    table = stand_ins(c)

    def one(m: re.Match[str]) -> str:
        ref = m.group(1)
        # cross-stack outputs read `...outputs.cross-stack-output-<type><id><attr>`; direct ones `<type>.<id>.<attr>`
        tail = ref.rsplit("outputs.", 1)[-1].removeprefix("cross-stack-output-")
        for (rtype, attr), literal in table.items():
            if tail.startswith(rtype) and tail.endswith(attr):
                if used is not None:
                    used.append(f"${{{ref}}} -> {literal}")
                return literal
        raise ValidationError(f"no stand-in for the Terraform reference ${{{ref}}}: add one to stand_ins()")

    return TF_REF.sub(one, text)


@dataclass(frozen=True)
class Release:
    name: str
    chart: str
    version: str | None
    namespace: str
    values: tuple[str, ...]
    sets: tuple[tuple[str, str], ...]


def releases(addons: dict[str, Any], c: Config, used: list[str] | None = None) -> dict[str, Release]:
    """The addons stack's helm_release resources, Terraform references replaced by stand-ins."""
    out = {}
    for rid, r in addons["resource"]["helm_release"].items():
        out[rid] = Release(
            name=r["name"],
            chart=r["chart"],
            version=r.get("version"),
            namespace=r.get("namespace", "default"),
            values=tuple(substitute(v, c, used) for v in r.get("values", [])),
            sets=tuple((s["name"], substitute(str(s["value"]), c, used)) for s in r.get("set", [])),
        )
    return out


# --- values keys: ours against the chart's ---------------------------------------------------------------
RECORDED_VALUES_KEYS = Path(__file__).with_name("chart_values_keys.yaml")


def release_values(release: Release) -> dict[str, Any]:
    """The release's values files merged, with each `set` entry as the nested key helm makes of it."""
    merged: dict[str, Any] = {}
    for text in release.values:
        merged.update(yaml.safe_load(text) or {})
    for name, value in release.sets:
        node = merged
        *parents, leaf = name.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return merged


def unknown_values_keys(ours: dict[str, Any], allowed: dict[str, Any], prefix: str = "") -> list[str]:
    """Keys we set that the chart does not have. `allowed` is the chart's values.yaml (or a recorded tree):
    below a key whose default is not a non-empty map (a list, a scalar, `{}`), anything goes."""
    out = []
    for key, value in ours.items():
        path = f"{prefix}{key}"
        if key not in allowed:
            out.append(path)
        elif isinstance(value, dict) and isinstance(allowed[key], dict) and allowed[key]:
            out += unknown_values_keys(value, allowed[key], f"{path}.")
    return out


def recorded_values_keys() -> dict[str, dict[str, Any]]:
    """The recorded keys of the charts not served here (name -> version, source, keys)."""
    return yaml.safe_load(RECORDED_VALUES_KEYS.read_text())


# --- sources: Go modules, charts, CRDs -------------------------------------------------------------------
def module_dir(module_at_version: str) -> Path:
    """A module's folder in the Go module cache (downloaded once; offline afterwards)."""
    from local import build

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
    return files


# --- rendering -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Manifests:
    source: str
    namespace: str
    docs: list[dict[str, Any]]


def helm_template(helm: Path, chart: Path, release: Release, kube_version: str, work: Path) -> list[dict]:
    """`helm template` with the release's values files and `set` entries (helm's --set, as the provider)."""
    work.mkdir(parents=True, exist_ok=True)
    cmd = [str(helm), "template", release.name, str(chart), "--namespace", release.namespace]
    cmd += ["--kube-version", kube_version]
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
    from local import render
    from local.helm import ensure_helm

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
        if rel[name].version != str(recorded["version"]):
            report.unknown_values.append(
                f"{name}: keys recorded for {recorded['version']}, the stack pins {rel[name].version}"
            )
        report.unknown_values += [
            f"{name} {rel[name].version}: {k} (not among the recorded keys, {RECORDED_VALUES_KEYS.name})"
            for k in unknown_values_keys(release_values(rel[name]), recorded["keys"])
        ]
    # our CR chart: the release whose chart is a path, resolved from the stack's folder as Terraform does
    for r in rel.values():
        local_chart = outdir / "stacks" / "addons" / r.chart
        if r.chart.startswith(".") and local_chart.is_dir():
            docs = helm_template(helm, local_chart.resolve(), r, kube_version, work)
            out.append(Manifests(f"{r.name} chart", r.namespace, docs))
    out.append(Manifests(LOCAL_SOURCE, "default", render.all_objects(c)))
    return out


# --- the server's verdict --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rejection:
    source: str
    kind: str
    name: str
    namespace: str | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.source}: {self.kind} {where}: field {self.field}: {self.message}"


def _field(body: dict[str, Any]) -> str:
    causes = (body.get("details") or {}).get("causes") or []
    fields = sorted({c["field"] for c in causes if c.get("field") not in (None, "", "<nil>")})
    if fields:
        return ", ".join(fields)
    msg = body.get("message", "")
    m = re.search(r'unknown field "([^"]+)"', msg) or re.search(
        r"(\.[\w.\[\]\"=-]+): field not declared", msg
    )
    return m.group(1) if m else "-"


class DryRun:
    """Server-side dry-run (dryRun=All, fieldValidation=Strict) of plain dicts: a create, as Helm installs;
    an object the server already holds (a CRD, a namespace) is checked as a server-side apply instead."""

    def __init__(self, api_client: Any):
        from kubernetes.dynamic import DynamicClient

        self.api = api_client
        self.dyn = DynamicClient(api_client)

    def _call(self, method: str, path: str, body: Any, query: list[tuple[str, str]], ctype: str) -> None:
        self.api.call_api(
            path,
            method,
            query_params=query,
            header_params={"Content-Type": ctype, "Accept": "application/json"},
            body=body,
            auth_settings=[],
            _preload_content=False,
            _return_http_data_only=True,
        )

    def _resource(self, api_version: str, kind: str) -> Any:
        from kubernetes.dynamic.exceptions import ResourceNotFoundError

        try:
            return self.dyn.resources.get(api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            self.dyn.resources.invalidate_cache()  # CRDs created after this client's first discovery
            return self.dyn.resources.get(api_version=api_version, kind=kind)

    def check(self, doc: dict[str, Any], source: str, namespace: str = "default") -> Rejection | None:
        from kubernetes.client.exceptions import ApiException
        from kubernetes.dynamic.exceptions import ResourceNotFoundError

        kind, name = doc.get("kind", "?"), doc.get("metadata", {}).get("name", "?")
        try:
            res = self._resource(doc["apiVersion"], kind)
        except ResourceNotFoundError:
            return Rejection(
                source, kind, name, None, "apiVersion", f"the server serves no {kind} in {doc['apiVersion']}"
            )
        ns = None
        if res.namespaced:
            ns = doc["metadata"].get("namespace") or namespace
            doc = {**doc, "metadata": {**doc["metadata"], "namespace": ns}}
        strict = [("dryRun", "All"), ("fieldValidation", "Strict")]
        try:
            try:
                self._call("POST", res.path(namespace=ns), doc, strict, "application/json")
            except ApiException as exc:
                if exc.status != 409:
                    raise
                query = [*strict, ("fieldManager", FIELD_MANAGER), ("force", "true")]
                path = res.path(name=name, namespace=ns)
                self._call("PATCH", path, doc, query, "application/apply-patch+yaml")  # JSON is YAML
        except ApiException as exc:
            try:
                body = json.loads(exc.body)
            except (TypeError, ValueError):
                body = {"message": str(exc.body or exc.reason)}
            return Rejection(source, kind, name, ns, _field(body), body.get("message", ""))
        return None

    def check_all(self, docs: Iterable[dict[str, Any]], source: str, namespace: str) -> list[Rejection]:
        return [r for d in docs if (r := self.check(d, source, namespace)) is not None]

    def create_namespaces(self, names: Iterable[str]) -> None:
        """Namespaces are created for real: a namespaced dry-run needs its namespace to exist."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        core = client.CoreV1Api(self.api)
        for n in sorted(set(names)):
            try:
                core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}})
            except ApiException as exc:
                if exc.status != 409:
                    raise


def namespaces_of(sets: Sequence[Manifests]) -> set[str]:
    names = {m.namespace for m in sets}
    names |= {
        d["metadata"]["namespace"] for m in sets for d in m.docs if d.get("metadata", {}).get("namespace")
    }
    return names


def install_crds(api_client: Any, files: Sequence[Path]) -> list[str]:
    """Create the CRDs for real and wait until each is Established; returns their names."""
    from kubernetes import client

    ext = client.ApiextensionsV1Api(api_client)
    docs = [d for f in files for d in yaml.safe_load_all(f.read_text()) if d]
    for d in docs:
        ext.create_custom_resource_definition(d)
    names = [d["metadata"]["name"] for d in docs]
    deadline = time.monotonic() + CRDS_ESTABLISHED
    waiting = list(names)
    while waiting:
        waiting = [
            n
            for n in waiting
            if not any(
                c.type == "Established" and c.status == "True"
                for c in (ext.read_custom_resource_definition(n).status.conditions or [])
            )
        ]
        if waiting and time.monotonic() > deadline:
            raise ValidationError(f"CRDs not Established after {CRDS_ESTABLISHED:.0f}s: {waiting}")
        if waiting:
            time.sleep(0.2)
    return names


@dataclass
class Report:
    rendered: dict[str, int] = field(default_factory=dict)
    crds: list[str] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    stand_ins: list[str] = field(default_factory=list)
    unknown_values: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.rejections and not self.unknown_values

    def summary(self) -> str:
        parts = ", ".join(f"{src}: {n}" for src, n in self.rendered.items())
        head = f"{sum(self.rendered.values())} objects dry-run against {len(self.crds)} CRDs ({parts})"
        lines = [f"    {r}" for r in self.rejections] + [f"    values key: {k}" for k in self.unknown_values]
        if self.ok:
            return head + ", none rejected; every values key known to its chart"
        return (
            head
            + f"; {len(self.rejections)} rejected, {len(self.unknown_values)} values findings:\n"
            + "\n".join(lines)
        )


def validate_on(api_client: Any, c: Config, outdir: Path, work: Path) -> Report:
    """Install the CRDs on a fresh server, render everything, dry-run every object."""
    report = Report()
    sets = render_all(c, outdir, work, report)
    report.crds = install_crds(api_client, crd_files(c))
    dry = DryRun(api_client)
    dry.create_namespaces(namespaces_of(sets))
    for m in sets:
        report.rendered[m.source] = len(m.docs)
        report.rejections += dry.check_all(m.docs, m.source, m.namespace)
    return report


def validate(c: Config, outdir: Path) -> Report:
    """The whole check on its own throwaway API server (what `make up` runs before any apply)."""
    from local.validation_server import ValidationServer

    with (
        tempfile.TemporaryDirectory(prefix="gpu-finops-validate-") as tmp,
        ValidationServer(Path(tmp) / "server") as server,
    ):
        return validate_on(server.api_client(), c, outdir, Path(tmp) / "work")
