"""The server's verdict: server-side dry-run (dryRun=All, fieldValidation=Strict) of every rendered object
against real CRDs, and the report of what was rejected (moved from validate_charts.py)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from local.charts.chart_inputs import ValidationError

FIELD_MANAGER = "gpu-finops-validate"
CRDS_ESTABLISHED = 60.0  # seconds the server may take to serve freshly created CRDs


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
