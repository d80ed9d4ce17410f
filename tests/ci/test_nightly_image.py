"""The nightly builds the collector image before `make up`, under the name the collector release pulls
(`make up` pushes it once the cluster stack has created the repository: infra/deploy.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"


def steps() -> list[dict]:
    wf = yaml.safe_load(WORKFLOW.read_text())
    return next(iter(wf["jobs"].values()))["steps"]


def test_the_collector_image_is_built_before_make_up():
    runs = [str(s.get("run", "")) for s in steps()]
    build = [i for i, r in enumerate(runs) if "docker build" in r]
    up = [i for i, r in enumerate(runs) if r.rstrip().endswith("-- make up")]
    assert len(build) == 1 and len(up) == 1, (build, up)
    assert build[0] < up[0], "the image must be built before `make up` pushes it"
    assert 'docker build --pull -t "$ref" .' in runs[build[0]]


def test_the_build_steps_name_is_the_ref_the_addons_stack_pulls():
    """The step's Python one-liner, run as written, prints infra.preflight.collector_image_ref."""
    (run,) = [str(s["run"]) for s in steps() if "docker build" in str(s.get("run", ""))]
    line = next(x for x in run.splitlines() if x.startswith('ref="$(.venv/bin/python -c '))
    code = line.split("-c '", 1)[1].split('\' "$account"', 1)[0]
    out = subprocess.run([sys.executable, "-c", code, "123456789012"], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=True)  # fmt: skip
    from gpu_finops.facts.config import load_config
    from infra.preflight import collector_image_ref

    assert out.stdout.strip() == collector_image_ref(load_config(), "123456789012")
    assert out.stdout.strip().endswith(f"/gpu-finops/collector:{load_config().versions.collector_image_tag}")
