"""Synthesize once per test module, with the project's Node.js 22 first on PATH (as `make` sets it)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NODE_BIN = ROOT / ".node" / "node_modules" / ".bin"


@pytest.fixture(scope="session", autouse=True)
def supported_node():
    if NODE_BIN.is_dir() and str(NODE_BIN) not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}"


class Synth:
    def __init__(self, outdir: Path):
        self.outdir = outdir

    def stack(self, name: str) -> dict:
        return json.loads((self.outdir / "stacks" / name / "cdk.tf.json").read_text())

    def chart_docs(self, filename: str) -> list[dict]:
        path = self.outdir / "charts" / "gpu-finops-crs" / "templates" / filename
        return [d for d in yaml.safe_load_all(path.read_text()) if d]

    def product_chart_docs(self) -> list[dict]:
        """The gpu-finops chart rendered by the pinned Helm with the stack's release values (stand-ins for
        what only apply knows), as Terraform's helm provider would install it."""
        from gpu_finops.facts.config import load_config
        from local.charts import chart_inputs, chart_render
        from local.charts.helm import ensure_helm

        c = load_config()
        release = chart_inputs.releases(self.stack("addons"), c)["gpu-finops"]
        chart = (self.outdir / "stacks" / "addons" / release.chart).resolve()
        kube = f"v{c.versions.kubernetes}.0"
        return chart_render.helm_template(ensure_helm(), chart, release, kube, self.outdir / "helm-work")

    def manifest(self) -> dict:
        return json.loads((self.outdir / "manifest.json").read_text())


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory, supported_node) -> Synth:
    from gpu_finops.facts.config import load_config
    from infra.app import synth

    out = tmp_path_factory.mktemp("cdktf.out")
    synth(load_config(), out)
    return Synth(out)


CI_CONFIG = {
    "allowed_accounts": ["123456789012"],
    "state_backend": "s3",
    "github_repository": "acme/gpu-finops",
    "admin_principal_arns": ["arn:aws:iam::123456789012:role/platform-admin"],
}


@pytest.fixture(scope="module")
def synthesized_with_ci(tmp_path_factory, supported_node) -> Synth:
    """Every optional part on: the ci-role stack and admin access entries."""
    from gpu_finops.facts.config import load_config
    from infra.app import synth

    out = tmp_path_factory.mktemp("cdktf.out")
    path = out / "config.yaml"
    path.write_text(yaml.safe_dump(CI_CONFIG))
    synth(load_config(path), out)
    return Synth(out)


@dataclass(frozen=True)
class Tofu:
    """OpenTofu and the providers as built on this machine (local/build/terraform.py): `env(stacks)` is the
    environment that finds them for the stacks synthesized under `stacks` (their pins in the mirror `tofu init`
    reads); calling it runs tofu in a stack's folder with that environment and `env` added."""

    binaries: dict[str, Path]

    def env(self, stacks: Path) -> dict[str, str]:
        from local.build import terraform

        return terraform.environment(self.binaries, terraform.pinned_providers(stacks))

    def __call__(
        self, stack_dir: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 900
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tofu", f"-chdir={stack_dir}", *args],
            env={**os.environ, **self.env(stack_dir.parent), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@pytest.fixture(scope="session")
def tofu() -> Tofu:
    """Builds them where this machine's cache lacks them (minutes, once; `make test` starts the build in the
    background), or waits for the build already running."""
    from local.build import terraform
    from local.build.binaries import BuildError

    try:
        return Tofu(terraform.build_all())
    except BuildError as exc:
        pytest.fail(f"OpenTofu or a provider could not be built: {exc}")
