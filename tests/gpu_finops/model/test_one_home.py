"""The Workload's and the NodeClaim's condition types are read in one place, gpu_finops/model/: outside it no
Python string of ours equals one of them. Tests may write them out (recorded shapes are written on purpose).

Allowed, each for its reason: a pod's `status.reason` "Evicted" (the kubelet's and the Eviction API's word
for a pod, not a Workload's condition) where the acts' observer reads a pod, and where a checker refuses a pod
that ended so as a run."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gpu_finops.model import nodeclaim, workload
from tests.test_architecture import python_files

ROOT = Path(__file__).resolve().parents[3]
HOME = "gpu_finops/model/"
# Node and pod conditions share the word Ready with a NodeClaim's: only the claim's own lifecycle words count.
TYPES = {t: "workload" for t in workload.CONDITION_TYPES} | {t: "nodeclaim" for t in nodeclaim.LIFECYCLE}
ALLOWED = {
    ("harness/observe.py", "Evicted"): "a pod's status.reason, not a Workload condition",
    ("assertions/observed.py", "Evicted"): "a pod's terminated or status reason, not a Workload condition",
}


def literals_outside_the_model(paths: list[str], root: Path = ROOT) -> list[str]:
    """Each string constant outside the model (and tests) that is a Workload or NodeClaim condition type."""
    found = []
    for rel in sorted(paths):
        if rel.startswith((HOME, "tests/")):
            continue
        tree = ast.parse((root / rel).read_text(encoding="utf-8"), filename=rel)
        for node in sorted(
            (n for n in ast.walk(tree) if isinstance(n, ast.Constant)), key=lambda n: (n.lineno, n.col_offset)
        ):
            if isinstance(node, ast.Constant) and node.value in TYPES and (rel, node.value) not in ALLOWED:
                found.append(
                    f"{rel}:{node.lineno}: {node.value!r} is a {TYPES[node.value]} condition type: use "
                    f"gpu_finops.model.{TYPES[node.value]}"
                )
    return found


def test_condition_types_are_read_only_in_the_model():
    files = [p.relative_to(ROOT).as_posix() for p in python_files()]
    assert len(files) > 100, f"expected the repository's Python files, git listed {len(files)}"
    found = literals_outside_the_model(files)
    assert not found, "\n".join(found)


def test_a_condition_literal_outside_the_model_is_named_and_the_model_itself_is_not(tmp_path):
    (tmp_path / "gpu_finops" / "model").mkdir(parents=True)
    (tmp_path / "room").mkdir()
    (tmp_path / "gpu_finops" / "model" / "w.py").write_text('ADMITTED = "Admitted"\n')
    (tmp_path / "room" / "fine.py").write_text(
        '"""Reads whether a Workload was Admitted."""\nfrom gpu_finops.model.workload import ADMITTED\n'
        'msg = f"not Admitted yet: {ADMITTED}"\n'
    )
    (tmp_path / "room" / "copied.py").write_text(
        'if c["type"] == "QuotaReserved":\n    pass\nx = "Launched"\n'
    )
    paths = ["gpu_finops/model/w.py", "room/fine.py", "room/copied.py"]
    assert literals_outside_the_model(paths, root=tmp_path) == [
        "room/copied.py:1: 'QuotaReserved' is a workload condition type: use gpu_finops.model.workload",
        "room/copied.py:3: 'Launched' is a nodeclaim condition type: use gpu_finops.model.nodeclaim",
    ]


@pytest.mark.parametrize("rel, literal", sorted(ALLOWED))
def test_each_allowed_literal_is_still_there(rel, literal):
    """An exception nobody needs any more is removed, not kept as a hole."""
    tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
    assert any(isinstance(n, ast.Constant) and n.value == literal for n in ast.walk(tree)), (
        f"{rel} no longer holds {literal!r}: remove it from ALLOWED"
    )
