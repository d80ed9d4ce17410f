"""What `make up` would apply, checked here by the real components before any apply (docs/infra.md):

- Helm (local/charts/helm.py, pinned, from the Go module proxy) renders the Karpenter and Kueue charts from their
  modules' `charts/` folders at the versions the addons stack pins, with the values and `set` entries read
  from the synthesized addons stack, and renders our CR chart the same way.
- A throwaway kube-apiserver (local/charts/validation_server.py) with the CRDs Karpenter (core and AWS) and Kueue
  ship dry-runs every rendered object with `dryRun=All` and `fieldValidation=Strict`: OpenAPI schemas,
  CEL rules, enums and unknown fields are judged by the server's own code.

Terraform references in the releases' inputs (`${...}`, known only at apply) are replaced by plausible
literals (`stand_ins`), and the report lists each replacement.

The parts: `chart_inputs` (the releases' inputs and values keys), `chart_render` (charts, CRDs, helm
template) and `dry_run` (the server's verdict and the report).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from gpu_finops.facts.config import Config
from local.charts.chart_inputs import ValidationError
from local.charts.chart_render import crd_files, namespaces_of, render_all
from local.charts.dry_run import DryRun, Report, install_crds

__all__ = ["Report", "ValidationError", "validate", "validate_on"]


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
    from local.charts.validation_server import ValidationServer

    with (
        tempfile.TemporaryDirectory(prefix="gpu-finops-validate-") as tmp,
        ValidationServer(Path(tmp) / "server") as server,
    ):
        return validate_on(server.api_client(), c, outdir, Path(tmp) / "work")
