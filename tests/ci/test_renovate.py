"""renovate.json covers every pin: a version added anywhere the scanner looks, outside what a Renovate manager
reads, fails here by name. And the config itself passes `renovate-config-validator` (the npm package, run
with the project's Node).

What counts as a pin (the scanner, one rule per kind of file):
- Python: an assignment of a string literal that is a version (`v1.2.3`, `1.36`, `go1.26.11`,
  `4.6.0-4.8.3-ubuntu22.04`, `al2023@v20261003`): `NAME = "..."` or `name: Type = "..."`, in
  gpu_finops/facts/config.py and local/build/versions.py, and module constants named `*VERSION*`, `*_TAG` or `*_CHART`
  in every tracked Python file outside tests/.
- Makefile: a variable whose name holds VERSION or MAJOR assigned a literal; any literal `==<digit>` or
  `@v<digit>`.
- Workflows: a `...version...:` input with a literal value, and every `uses: owner/repo@ref`.
- pyproject.toml: every requirement (build-system, dependencies, optional extras).
- requirements/*.txt (the lock files): every `name==version` line.
- Dockerfile: every `FROM image:tag`.

Covered means: a custom regex manager whose file pattern matches the file has a `currentValue` match
inside the pin's value, or a built-in manager that is enabled reads the file (pep621, pip-compile,
github-actions, dockerfile).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = json.loads((ROOT / "renovate.json").read_text())

VERSION = re.compile(r"(?:v|go|al2023@v)?\d+(?:\.\d+)*(?:-[\w.-]+)?")
PY_ASSIGN = re.compile(r'^\s*(?P<name>\w+)(?:\s*:\s*\w+)?\s*=\s*"(?P<value>[^"]*)"', re.M)
PY_CONSTANT_NAME = re.compile(r"^[A-Z_]*(?:VERSION|_TAG|_CHART)[A-Z_]*$")
PY_PIN_FILES = {"gpu_finops/facts/config.py", "local/build/versions.py"}
MAKE_ASSIGN = re.compile(r"^(?P<name>[A-Z_]*(?:VERSION|MAJOR)[A-Z_]*)\s*:?=\s*(?P<value>\S+)\s*$", re.M)
MAKE_INLINE = re.compile(r"(?:==|@v)(?P<value>\d[\w.-]*)")
WORKFLOW_VERSION = re.compile(r"^\s*(?P<name>[\w-]*version[\w-]*):\s*\"?(?P<value>[\w.-]+)\"?\s*$", re.M)
WORKFLOW_USES = re.compile(r"uses:\s*(?P<value>[\w.-]+/[\w./-]+@\S+)")
LOCK_LINE = re.compile(r"^(?P<name>[A-Za-z0-9_.\[\],-]+)==(?P<value>[^\s\\;]+)", re.M)
DOCKER_FROM = re.compile(r"^FROM\s+(?P<value>\S+:\S+)", re.M)

# Version-like values that are not dependencies, each with why no bot should move it.
NOT_DEPENDENCIES = {
    (
        "gpu_finops/facts/config.py",
        "collector_image_tag",
    ): "our own collector image, built and tagged by `make up`",
    ("gpu_finops/cost/focus.py", "FOCUS_VERSION"): "the FOCUS specification version the export implements",
    ("tools/refresh_dcgm_fields.py", "EXPORTER_TAG"): (
        "records what gpu_finops/dcgm/dcgm_field_names.json was generated from; changes only by regenerating it"
    ),
    ("tools/refresh_dcgm_fields.py", "GO_DCGM_VERSION"): "the same: the generated list's provenance",
}

# Renovate's default file patterns of the built-in managers we enable (its docs, per manager).
BUILTIN_PATTERNS = {
    "pep621": r"(^|/)pyproject\.toml$",
    "github-actions": r"(^|/)\.github/workflows/[^/]+\.ya?ml$",
    "dockerfile": r"(^|/|\.)([Dd]ocker|[Cc]ontainer)file$",
}


@dataclass(frozen=True)
class Pin:
    path: str
    name: str
    value: str
    start: int  # offset of the value in the file
    builtin: str | None = None  # the built-in manager that reads this kind of pin, if any


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.split()


def pins_in(path: str, text: str) -> Iterator[Pin]:
    """Every pin in one file, by the rules in the module docstring."""
    name = Path(path).name
    if path.endswith(".py") and not path.startswith("tests/"):
        for m in PY_ASSIGN.finditer(text):
            if not VERSION.fullmatch(m["value"]):
                continue
            if path in PY_PIN_FILES or PY_CONSTANT_NAME.match(m["name"]):
                yield Pin(path, m["name"], m["value"], m.start("value"))
    elif name == "Makefile":
        for m in MAKE_ASSIGN.finditer(text):
            yield Pin(path, m["name"], m["value"], m.start("value"))
        for m in MAKE_INLINE.finditer(text):
            yield Pin(path, "inline", m["value"], m.start("value"))
    elif re.match(r"\.github/workflows/[^/]+\.ya?ml$", path):
        for m in WORKFLOW_VERSION.finditer(text):
            yield Pin(path, m["name"], m["value"], m.start("value"))
        for m in WORKFLOW_USES.finditer(text):
            yield Pin(path, "uses", m["value"], m.start("value"), builtin="github-actions")
    elif name == "pyproject.toml":
        data = tomllib.loads(text)
        reqs = list(data.get("build-system", {}).get("requires", []))
        reqs += data.get("project", {}).get("dependencies", [])
        for extra in data.get("project", {}).get("optional-dependencies", {}).values():
            reqs += extra
        for req in reqs:
            yield Pin(path, "requirement", req, text.index(req), builtin="pep621")
    elif re.match(r"requirements/[^/]+\.txt$", path):
        for m in LOCK_LINE.finditer(text):
            yield Pin(path, m["name"], m["value"], m.start("value"), builtin="pip-compile")
    elif name == "Dockerfile":
        for m in DOCKER_FROM.finditer(text):
            yield Pin(path, "FROM", m["value"], m.start("value"), builtin="dockerfile")


def _file_pattern(pattern: str) -> re.Pattern[str]:
    """Renovate writes regex file patterns as /.../; anything else is a glob, which we do not use."""
    assert pattern.startswith("/") and pattern.endswith("/"), f"not a /regex/ pattern: {pattern}"
    return re.compile(pattern[1:-1])


def _js_regex(source: str) -> re.Pattern[str]:
    return re.compile(source.replace("(?<", "(?P<").replace("(?P<=", "(?<=").replace("(?P<!", "(?<!"))


def builtin_reads(manager: str, path: str, config: dict) -> bool:
    if manager not in config.get("enabledManagers", [manager]):
        return False
    patterns = [p for p in config.get(manager, {}).get("managerFilePatterns", [])]
    if any(_file_pattern(p).search(path) for p in patterns):
        return True
    default = BUILTIN_PATTERNS.get(manager)
    return bool(default and re.search(default, path))


def covered_spans(path: str, text: str, config: dict) -> list[tuple[int, int]]:
    """The currentValue spans the custom regex managers find in this file."""
    if "custom.regex" not in config.get("enabledManagers", ["custom.regex"]):
        return []
    spans = []
    for manager in config.get("customManagers", []):
        if not any(_file_pattern(p).search(path) for p in manager["managerFilePatterns"]):
            continue
        for source in manager["matchStrings"]:
            for m in _js_regex(source).finditer(text):
                spans.append(m.span("currentValue"))
    return spans


def uncovered(path: str, text: str, config: dict = CONFIG) -> list[str]:
    """The pins of one file that no manager of `config` covers, named."""
    spans = covered_spans(path, text, config)
    out = []
    for pin in pins_in(path, text):
        if (path, pin.name) in NOT_DEPENDENCIES:
            continue
        end = pin.start + len(pin.value)
        if pin.builtin and builtin_reads(pin.builtin, path, config):
            continue
        if any(pin.start <= a < b <= end for a, b in spans):
            continue
        out.append(f"{path}: {pin.name} = {pin.value!r}")
    return out


# --- the repository ---------------------------------------------------------------------------------------
def test_every_pin_in_the_repository_is_covered_by_a_renovate_manager():
    found, missing = 0, []
    for path in tracked_files():
        if not (ROOT / path).is_file():
            continue
        text = (ROOT / path).read_text(errors="replace")
        found += sum(1 for _ in pins_in(path, text))
        missing += uncovered(path, text)
    assert missing == [], "pins no renovate.json manager covers:\n" + "\n".join(missing)
    assert found > 100, f"the scanner found only {found} pins: is it reading the files?"


def test_the_scanner_finds_the_pins_we_know_of():
    """Held: each kind of pin is found where it lives (so the coverage test above is not vacuous)."""
    by_file: dict[str, set[str]] = {}
    for path in (
        "gpu_finops/facts/config.py",
        "local/build/versions.py",
        "Makefile",
        "pyproject.toml",
        "Dockerfile",
    ):
        by_file[path] = {p.name for p in pins_in(path, (ROOT / path).read_text())}
    assert {
        "kubernetes",
        "karpenter_chart",
        "dcgm_exporter_image",
        "node_ami_alias",
        "addon_kube_proxy",
    } <= by_file["gpu_finops/facts/config.py"]
    assert {"KUBERNETES", "ETCD", "GO_TOOLCHAIN", "HELM", "KARPENTER_AWS"} <= by_file[
        "local/build/versions.py"
    ]
    assert {
        "NODE_MAJOR",
        "CHECKOV_VERSION",
        "ACTIONLINT_VERSION",
        "UV_VERSION",
        "RENOVATE_VERSION",
    } <= by_file["Makefile"]
    assert by_file["pyproject.toml"] == {"requirement"} and by_file["Dockerfile"] == {"FROM"}
    workflows = sorted(p for p in tracked_files() if p.startswith(".github/workflows/"))
    assert ".github/workflows/nightly.yml" in workflows, workflows
    for workflow, pins in ((".github/workflows/nightly.yml", {"uses", "tofu_version"}),
                           *((w, {"uses"}) for w in workflows)):  # fmt: skip
        assert pins <= {p.name for p in pins_in(workflow, (ROOT / workflow).read_text())}, workflow


# --- near misses: a pin outside coverage fails, by name ------------------------------------------------------
def test_a_new_unannotated_pin_in_the_versions_class_fails_by_name():
    text = (ROOT / "gpu_finops/facts/config.py").read_text()
    added = text.replace(
        '    collector_image_tag: Version = "0.1.0"',
        '    gpu_operator_chart: Version = "25.10.1"\n    collector_image_tag: Version = "0.1.0"',
    )
    assert added != text
    assert uncovered("gpu_finops/facts/config.py", added) == [
        "gpu_finops/facts/config.py: gpu_operator_chart = '25.10.1'"
    ]


def test_an_annotation_that_names_no_datasource_does_not_count():
    text = (ROOT / "local/build/versions.py").read_text()
    broken = text.replace(
        "# renovate: datasource=go depName=sigs.k8s.io/kwok\n", "# renovate: sigs.k8s.io/kwok\n"
    )
    assert broken != text
    assert uncovered("local/build/versions.py", broken) == ["local/build/versions.py: KWOK = 'v0.8.0'"]


def test_a_tool_version_added_to_the_makefile_without_an_annotation_fails():
    text = (ROOT / "Makefile").read_text()
    added = text.replace("TARGET     ?= local", "SHELLCHECK_VERSION := 0.11.0\nTARGET     ?= local")
    assert uncovered("Makefile", added) == ["Makefile: SHELLCHECK_VERSION = '0.11.0'"]


def test_a_version_constant_in_a_new_module_fails():
    text = '"""A new helper."""\n\nTRIVY_VERSION = "0.67.2"\n'
    assert uncovered("infra/scanner.py", text) == ["infra/scanner.py: TRIVY_VERSION = '0.67.2'"]


def test_actions_are_uncovered_when_the_github_actions_manager_is_off():
    workflow = next(p for p in tracked_files() if p.startswith(".github/workflows/"))
    text = (ROOT / workflow).read_text()
    config = {**CONFIG, "enabledManagers": [m for m in CONFIG["enabledManagers"] if m != "github-actions"]}
    missing = uncovered(workflow, text, config)
    assert missing and all(": uses = " in m for m in missing), missing


def test_the_lock_files_are_uncovered_without_the_pip_compile_manager():
    config = {k: v for k, v in CONFIG.items() if k != "pip-compile"}
    text = (ROOT / "requirements/test.txt").read_text()
    assert uncovered("requirements/test.txt", text) == []
    assert uncovered("requirements/test.txt", text, config) != []


# --- the config itself, judged by Renovate's own validator ---------------------------------------------------
def _validator() -> Path:
    out = subprocess.run(
        ["make", "-s", "print-renovate-validator"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip())


def _validate(folder: Path) -> subprocess.CompletedProcess[str]:
    """renovate-config-validator --strict on the folder's renovate.json, validated as repository config
    (no file argument: a named file is validated as self-hosted global config)."""
    validator = _validator()
    if not validator.exists():
        pytest.fail(f"{validator} is missing: `make test` and `make lint` install it first (make setup test)")
    node = ROOT / ".node" / "node_modules" / ".bin"
    system_node = shutil.which("node")
    env_path = f"{node}:{Path(system_node).parent if system_node else '/usr/bin'}:/usr/bin:/bin"
    return subprocess.run(
        [str(validator), "--strict"],
        cwd=folder,
        capture_output=True,
        text=True,
        env={"PATH": env_path, "HOME": str(Path.home())},
        timeout=300,
    )


def test_renovate_config_validator_accepts_the_config():
    out = _validate(ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "Validating renovate.json" in out.stdout + out.stderr
    assert "Config validated successfully" in out.stdout + out.stderr


def test_renovate_config_validator_refuses_a_misspelled_option(tmp_path):
    """Near miss: valid JSON, one key misspelled: the validator names it and exits non-zero."""
    bad = json.loads(json.dumps(CONFIG))
    bad["customManagers"][0]["matchStringz"] = bad["customManagers"][0].pop("matchStrings")
    (tmp_path / "renovate.json").write_text(json.dumps(bad, indent=2))
    out = _validate(tmp_path)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text[-3000:]
    assert "Configuration Error" in text and "matchStringz" in text, text[-3000:]
