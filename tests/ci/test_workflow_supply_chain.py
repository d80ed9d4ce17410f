"""Every action the workflows use is pinned by full commit SHA (the version in a comment), Terraform is
pinned to one release, and zizmor (GitHub Actions static analysis) finds nothing. Each rule is shown to
fire on the near miss it exists for."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
# `uses: owner/repo[/path]@<40 hex>  # vX.Y.Z`: a tag or branch can be moved, a commit cannot.
PINNED = re.compile(
    r"^\s*(?:-\s+)?uses:\s+(?P<action>[\w.-]+/[\w.-]+(?:/[\w./-]+)?)@(?P<sha>[0-9a-f]{40})\s+#\s+(?P<version>v\d+\.\d+\.\d+)\s*$"
)
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)")


def pin_problems(text: str, where: str = "workflow") -> list[str]:
    """One line per `uses:` that is not `owner/repo@<40-hex commit>  # vX.Y.Z`."""
    problems = []
    for n, line in enumerate(text.splitlines(), 1):
        used = USES.match(line)
        if not used:
            continue
        ref = used["ref"]
        if ref.startswith(("./", "docker://")):
            problems.append(
                f"{where}:{n}: {ref}: local and docker actions are not used here; pin a repository"
            )
        elif not PINNED.match(line):
            problems.append(
                f"{where}:{n}: {ref!r} is not pinned as owner/repo@<40-hex commit> # vX.Y.Z "
                "(resolve the release tag to its commit: git rev-parse 'vX.Y.Z^{commit}')"
            )
    return problems


def test_the_workflows_exist():
    assert WORKFLOWS, "no workflow under .github/workflows"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_by_commit_with_its_version(path):
    text = path.read_text()
    assert sum(1 for line in text.splitlines() if USES.match(line)) >= 1
    assert pin_problems(text, path.name) == []


@pytest.mark.parametrize(
    "line, why",
    [
        ("      - uses: actions/checkout@v7", "is not pinned"),
        ("      - uses: actions/checkout@v7.0.1 # v7.0.1", "is not pinned"),
        # a short SHA is ambiguous and can be made to collide
        ("      - uses: actions/checkout@3d3c42e # v7.0.1", "is not pinned"),
        # pinned, but nobody can tell which release it is
        ("      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1", "is not pinned"),
        ("      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # latest", "is not pinned"),
        ("        uses: ./.github/actions/mine", "local and docker actions"),
        ("        uses: docker://alpine:3", "local and docker actions"),
    ],
)
def test_each_unpinned_form_is_caught(line, why):
    (problem,) = pin_problems(line)
    assert why in problem


def test_a_pinned_line_passes():
    assert (
        pin_problems("      - uses: actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1") == []
    )


def test_the_nightlys_opentofu_is_the_release_the_stacks_are_tested_with():
    from local.build import versions

    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "nightly.yml").read_text())
    steps = [s for j in wf["jobs"].values() for s in j["steps"]]
    assert not [s for s in steps if "setup-terraform" in s.get("uses", "")], "one Terraform: OpenTofu"
    (setup,) = [s for s in steps if "setup-opentofu" in s.get("uses", "")]
    version = setup["with"]["tofu_version"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", str(version)), f"tofu_version {version!r}: pin one release"
    assert f"v{version}" == versions.OPENTOFU, (
        f"the nightly installs OpenTofu {version}; make test validates and applies with {versions.OPENTOFU} "
        "(local/build/versions.py): move both together"
    )
    assert setup["with"]["tofu_wrapper"] is False  # the wrapper would swallow the -json UI infra reads


def zizmor() -> str:
    found = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which("zizmor")
    if not found:
        pytest.fail("zizmor is not installed: `make setup` installs it (the test extra pins zizmor==1.32.0)")
    return found


def run_zizmor(*paths: Path) -> subprocess.CompletedProcess[str]:
    # --offline: no GitHub API (the online audits need a token); the auditor persona reports everything.
    return subprocess.run(
        [zizmor(), "--offline", "--persona", "auditor", "--no-progress", *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_zizmor_finds_nothing():
    result = run_zizmor(ROOT / ".github" / "workflows")
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_catches_the_workflow_as_it_was(tmp_path):
    """The same run over the old shape (tag pins, workflow-level id-token, persisted credentials) fails."""
    old = tmp_path / ".github" / "workflows" / "old.yml"
    old.parent.mkdir(parents=True)
    old.write_text(
        "name: old\non: workflow_dispatch\npermissions:\n  id-token: write\n  contents: read\n"
        "jobs:\n  j:\n    runs-on: ubuntu-24.04\n    steps:\n      - uses: actions/checkout@v4\n"
        "      - run: echo ${{ github.event.inputs.x }}\n"
    )
    result = run_zizmor(old)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    for audit in ("unpinned-uses", "artipacked", "excessive-permissions", "template-injection"):
        assert audit in out, f"zizmor did not report {audit}: {out[-2000:]}"
