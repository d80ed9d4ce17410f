"""`pip install gpu-finops` gives the product without the harness: the wheel holds one top-level package,
`gpu_finops`, and none of the harness's folders (infra, local, report's output ...); the distribution's own
requirements hold no CDK Terrain, jsii or pytest (those are the `[infra]` and `[acts]` extras), the runtime
lock holds none either, the Dockerfile installs from that lock, and the product's commands run from the
wheel alone, with those libraries made unimportable, while a harness command says where the harness is."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESS_ONLY = ("cdktn", "cdktn-provider-", "constructs", "jsii", "pytest", "cryptography", "moto", "checkov")
PRODUCT_COMMANDS = (
    "collect",
    "cost",
    "ledger",
    "diagnose",
    "gpus",
    "reap",
    "report",
    "dcgm-csv",
    "check-metrics-csv",
)


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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel `pip install .` would install, built from the checkout as it is (a `reports/` folder of a
    demo run beside the packages included: it must not be carried)."""
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (path,) = out.glob("gpu_finops-*.whl")
    return path


def test_the_wheel_holds_exactly_one_top_level_package(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        tops = {n.split("/")[0] for n in names}
        (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert z.read(top_level).decode().split() == ["gpu_finops"]
    assert {t for t in tops if not t.endswith(".dist-info")} == {"gpu_finops"}, sorted(tops)
    # the product's data files travel with it
    for data in (
        "gpu_finops/facts/config.yaml",
        "gpu_finops/ledger/rules.yaml",
        "gpu_finops/dcgm/dcgm_field_names.json",
    ):
        assert data in names, f"{data} is not in the wheel"


FROM_WHEEL = """
import sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
""" + BLOCKER.replace("sys.argv[1:]", "sys.argv[3:]")


def _run_from_wheel(wheel: Path, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    """The wheel unpacked alone on the path with the libraries, without the checkout or the dev venv's .pth
    files (`-S`: no site processing), from a folder that is not the checkout."""
    unpacked = tmp_path / "site"
    if not unpacked.is_dir():
        with zipfile.ZipFile(wheel) as z:
            z.extractall(unpacked)
    libraries = sysconfig.get_paths()["purelib"]
    return subprocess.run(
        [sys.executable, "-S", "-c", FROM_WHEEL, str(unpacked), libraries, *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )


def test_the_product_commands_run_from_the_wheel_alone_and_the_harness_names_do_not_import(wheel, tmp_path):
    for command in PRODUCT_COMMANDS:
        out = _run_from_wheel(wheel, tmp_path, command, "--help")
        assert out.returncode == 0, f"{command}: {out.stdout}{out.stderr}"
    for name in ("report", "local", "facts", "infra", "acts", "twin", "harness", "tools", "iam", "nightly"):
        probe = subprocess.run(
            [
                sys.executable,
                "-S",
                "-c",
                f"import sys; sys.path[:0] = [{str(tmp_path / 'site')!r}]; import {name}",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=60,
        )
        assert probe.returncode != 0 and f"No module named '{name}'" in probe.stderr, (name, probe.stderr)


def test_a_harness_command_from_the_wheel_says_it_needs_a_checkout(wheel, tmp_path):
    out = _run_from_wheel(wheel, tmp_path, "local", "status")
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.strip() == (
        "gpu-finops local: `gpu-finops local` is part of the harness (local/ in a checkout of the gpu-finops "
        "repository), which installing the gpu-finops package does not install: run it from a checkout after "
        "`make setup`, which makes that checkout's harness importable in its .venv"
    )


def test_a_missing_library_inside_a_harness_module_is_not_called_a_missing_harness(monkeypatch):
    """Only the harness's own top-level name missing is the harness missing; any other missing module
    inside it is what it is."""
    import gpu_finops.cli as cli

    def fake_import(name):
        raise ModuleNotFoundError("No module named 'cdktn'", name="cdktn")

    monkeypatch.setattr(cli.importlib, "import_module", fake_import)
    with pytest.raises(ModuleNotFoundError, match="cdktn"):
        cli.command_parser("infra")
