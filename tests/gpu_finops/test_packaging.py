"""`pip install gpu-finops` gives the product without the harness (issue 25, item 5): the distribution's
own requirements hold no CDK Terrain, jsii or pytest (those are the `[infra]` and `[acts]` extras), the
runtime lock holds none either, the Dockerfile installs from that lock, and the product's commands run with
those libraries made unimportable. (A fresh venv with `pip install .` was run by hand too: the report of the
branch that added this file.)"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESS_ONLY = ("cdktn", "cdktn-provider-", "constructs", "jsii", "pytest", "cryptography", "moto", "checkov")
PRODUCT_COMMANDS = ("collect", "cost", "ledger", "diagnose", "gpus", "reap", "report", "dcgm-csv")


def _name(req: str) -> str:
    return re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].lower()


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_distribution_requires_no_harness_library():
    deps = [_name(r) for r in _project()["dependencies"]]
    assert [d for d in deps if d.startswith(HARNESS_ONLY)] == [], deps
    extras = _project()["optional-dependencies"]
    assert {"cdktn", "constructs"} <= {_name(r) for r in extras["infra"]}
    assert {"pytest", "cryptography"} <= {_name(r) for r in extras["acts"]}
    assert "gpu-finops[infra]" in extras["acts"] and "gpu-finops[infra,acts]" in extras["test"]


def test_the_runtime_lock_is_the_product_and_pins_every_requirement_with_hashes():
    text = (ROOT / "requirements" / "runtime.txt").read_text()
    pinned = {m.group(1).lower() for m in re.finditer(r"^([A-Za-z0-9_.-]+)==", text, re.M)}
    assert [p for p in pinned if p.startswith(HARNESS_ONLY)] == []
    wanted = {_name(r).replace("_", "-") for r in _project()["dependencies"]}
    assert wanted <= {p.replace("_", "-") for p in pinned}, sorted(wanted - pinned)
    assert all("--hash=sha256:" in block for block in re.split(r"\n(?=[A-Za-z])", text) if "==" in block)


def test_the_dockerfile_installs_the_product_from_the_lock():
    text = (ROOT / "Dockerfile").read_text()
    assert "COPY requirements/runtime.txt" in text
    assert "--require-hashes --no-deps -r requirements/runtime.txt" in text
    assert not re.search(r'pip install[^\n]*"[a-zA-Z-]+[<>=]', text), "a hand-written requirement is back"


BLOCKER = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("cdktn", "cdktn_provider_aws", "cdktn_provider_helm", "constructs", "jsii",
                                  "pytest", "cryptography"):
            raise ImportError(f"{name} is not installed (blocked: the product must not need it)")
sys.meta_path.insert(0, Block())
from gpu_finops.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.exit(code)
"""


@pytest.mark.parametrize("command", PRODUCT_COMMANDS)
def test_each_product_command_runs_without_the_harness_libraries(command):
    out = subprocess.run(
        [sys.executable, "-c", BLOCKER, command, "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "usage: gpu-finops" in out.stdout


def test_version_is_the_distributions():
    out = subprocess.run(
        [sys.executable, "-c", BLOCKER, "--version"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"gpu-finops {_project()['version']}"
