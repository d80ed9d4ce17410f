"""The tree's shape (docs/architecture.md): each shared literal written once, in gpu_finops/facts/.

The literal rule: every string constant defined at module level in gpu_finops/facts/kube_keys.py and gpu_finops/facts/names.py
is a shared literal. Outside gpu_finops/facts/, no Python string (an f-string's literal parts included) may equal one,
nor start with `gpu-finops.io/` (our own key namespace: every key of ours is defined in gpu_finops/facts/). Allowed:
tests/ (recorded shapes and expected values are written out on purpose, so a changed fact shows in a
test), prose that mentions a key inside a longer string (docstrings, messages), and files that are not
Python (docs, YAML, the generated ledger rules)."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FACT_FILES = ("gpu_finops/facts/kube_keys.py", "gpu_finops/facts/names.py")
OUR_KEYS = "gpu-finops.io/"
ALLOWED_DIRS = ("gpu_finops/facts/", "tests/")


def python_files(root: Path = ROOT) -> list[Path]:
    """The repository's Python files: tracked, plus new ones git does not ignore (not .venv, not .local)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.py"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.fail(f"the tree's shape needs git to list the repository's files in {root}: {exc}")
    return [root / p for p in out.splitlines() if (root / p).is_file()]


def shared_literals(root: Path = ROOT) -> dict[str, str]:
    """Each shared literal -> where it is defined (`gpu_finops/facts/kube_keys.py:GPU_RESOURCE`)."""
    homes = {}
    for rel in FACT_FILES:
        for node in ast.parse((root / rel).read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant):
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                if isinstance(node.value.value, str) and isinstance(target, ast.Name):
                    homes[node.value.value] = f"{rel}:{target.id}"
    return homes


def literal_copies(paths: list[Path], homes: dict[str, str], root: Path = ROOT) -> list[str]:
    """Each string constant outside gpu_finops/facts/ and tests/ that copies a shared literal or is one of our keys."""
    found = []
    for path in sorted(paths):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(ALLOWED_DIRS):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            if node.value in homes:
                found.append(f"{rel}:{node.lineno}: {node.value!r} is {homes[node.value]}: import it")
            elif node.value.startswith(OUR_KEYS):
                found.append(
                    f"{rel}:{node.lineno}: {node.value!r} is one of our keys: define it in gpu_finops/facts/kube_keys.py "
                    "or gpu_finops/facts/names.py and import it"
                )
    return found


def test_the_shared_literals_are_the_facts_keys_and_names():
    homes = shared_literals()
    assert homes["nvidia.com/gpu"] == "gpu_finops/facts/kube_keys.py:GPU_RESOURCE"
    assert homes["gpu-finops.io/project"] == "gpu_finops/facts/names.py:TAG_PROJECT"
    assert homes["gpu-finops.io/gpu-profile"] == "gpu_finops/facts/kube_keys.py:ANNOTATION_GPU_PROFILE"
    assert len(homes) > 30, sorted(homes)


def test_each_shared_literal_is_written_once_in_facts():
    copies = literal_copies(python_files(), shared_literals())
    assert not copies, "\n".join(copies)


def test_a_copied_literal_or_key_of_ours_is_named_and_an_import_or_a_mention_is_not(tmp_path):
    homes = {"nvidia.com/gpu": "gpu_finops/facts/kube_keys.py:GPU_RESOURCE"}
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    fine = tmp_path / "pkg" / "fine.py"
    fine.write_text(
        '"""Reads nvidia.com/gpu and gpu-finops.io/tenant."""\n'
        "from gpu_finops.facts.kube_keys import GPU_RESOURCE\n"
        'PRODUCT = "nvidia.com/gpu.product"\n'
        'msg = f"asks for {GPU_RESOURCE}: no gpu-finops.io/tenant label"\n'
    )
    in_tests = tmp_path / "tests" / "shape.py"
    in_tests.write_text('LIMITS = {"nvidia.com/gpu": "1"}\nKEY = "gpu-finops.io/x"\n')
    assert literal_copies([fine, in_tests], homes, root=tmp_path) == []
    copied = tmp_path / "pkg" / "copied.py"
    copied.write_text('GPU = "nvidia.com/gpu"\nkey = f"gpu-finops.io/{1}"\n')
    assert literal_copies([fine, copied], homes, root=tmp_path) == [
        "pkg/copied.py:1: 'nvidia.com/gpu' is gpu_finops/facts/kube_keys.py:GPU_RESOURCE: import it",
        "pkg/copied.py:2: 'gpu-finops.io/' is one of our keys: define it in gpu_finops/facts/kube_keys.py or "
        "gpu_finops/facts/names.py and import it",
    ]
