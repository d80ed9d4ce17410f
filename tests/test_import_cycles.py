"""The rooms' shape beyond the floors (docs/architecture.md): no import circle between any two modules of
ours, and no room holding more than a quarter of the code (a room: a top-level package of the harness, or one
of the product package's subpackages).

import-linter keeps the floors, but two modules on one floor, or a package and its own modules, may still
lean on each other; such a circle usually hides in a function body or under `TYPE_CHECKING`. This test reads
every import statement wherever it stands (module level, inside functions, under `if TYPE_CHECKING:`), as
text with `ast`, so nothing is executed and nothing hides. An import names the deepest module of ours it
reaches: `from a.b import c` is an edge to `a.b.c` when that is a module, else to `a.b`. A package's
`__init__` that a submodule's import runs implicitly is not an edge (Python's own doing, not a dependency
written by us); an explicit `from pkg import name` of a name defined in `pkg/__init__.py` is.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARE = 0.25  # no room may hold more than this share of the code's lines
PRODUCT = "gpu_finops"  # the one installed package: its subpackages are its rooms


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    where: str  # file:line of the import statement


def our_packages(root: Path = ROOT) -> list[str]:
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    return list(pyproject["tool"]["importlinter"]["root_packages"])


def modules(root: Path, packages: list[str]) -> dict[str, Path]:
    """Every module of ours: dotted name -> file (a package is its __init__.py)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _deepest(name: str, known: dict[str, Path]) -> str | None:
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def edges(root: Path, known: dict[str, Path]) -> list[Edge]:
    out: list[Edge] = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = _package_of(module, path).split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for name in targets:
                target = _deepest(name, known)
                if target is not None and target != module:
                    where = f"{path.relative_to(root)}:{node.lineno}"
                    out.append(Edge(module, target, where))
    return out


def cycles(graph_edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted, sorted."""
    graph: dict[str, set[str]] = {}
    for e in graph_edges:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def describe(component: list[str], graph_edges: list[Edge]) -> str:
    inside = set(component)
    lines = {f"{e.source} -> {e.target} ({e.where})" for e in graph_edges if {e.source, e.target} <= inside}
    return f"import circle among {', '.join(component)}:\n    " + "\n    ".join(sorted(lines))


def circles_in(root: Path, packages: list[str]) -> list[str]:
    known = modules(root, packages)
    graph_edges = edges(root, known)
    return [describe(c, graph_edges) for c in cycles(graph_edges)]


def test_no_import_circle_between_modules_of_ours():
    found = circles_in(ROOT, our_packages())
    assert found == [], "\n".join(found)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_circle_hidden_in_a_function_or_under_type_checking_is_named(tmp_path):
    root = _tree(
        tmp_path,
        {
            "p/__init__.py": "",
            "p/a.py": "def f():\n    from p.b import g\n",
            "p/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p import a\n",
            "p/c.py": "from . import d\n",
            "p/d.py": "import p.c\n",
        },
    )
    assert circles_in(root, ["p"]) == [
        "import circle among p.a, p.b:\n    p.a -> p.b (p/a.py:2)\n    p.b -> p.a (p/b.py:3)",
        "import circle among p.c, p.d:\n    p.c -> p.d (p/c.py:1)\n    p.d -> p.c (p/d.py:1)",
    ]


def test_one_way_imports_and_a_package_loading_its_modules_are_no_circle(tmp_path):
    root = _tree(
        tmp_path,
        {
            "p/__init__.py": "from p import a, b\n",  # a package that loads its modules (as teardown.types)
            "p/a.py": "from p.b import g\n",
            "p/b.py": "import os\n",
            "q/__init__.py": "from p.a import x\n",
        },
    )
    assert circles_in(root, ["p", "q"]) == []


def package_lines(root: Path, packages: list[str]) -> dict[str, int]:
    """Lines per room: each harness package whole; the product package by subpackage, its own top-level
    modules (the command line) a room of their own."""
    out: dict[str, int] = {}
    for p in packages:
        base = root / p
        if p != PRODUCT:
            out[p] = sum(len(f.read_text().splitlines()) for f in base.rglob("*.py"))
            continue
        for f in base.rglob("*.py"):
            sub = f.relative_to(base).parts
            room = f"{p}.{sub[0]}" if len(sub) > 1 else p
            out[room] = out.get(room, 0) + len(f.read_text().splitlines())
    return out


def oversized(lines: dict[str, int], share: float = SHARE) -> list[str]:
    total = sum(lines.values())
    return [
        f"{p} holds {n} of {total} lines ({n / total:.0%}), more than {share:.0%}"
        for p, n in sorted(lines.items())
        if n > share * total
    ]


def test_no_room_holds_more_than_a_quarter_of_the_code():
    assert oversized(package_lines(ROOT, our_packages())) == []


def test_a_package_over_a_quarter_is_named_and_one_at_a_quarter_is_not():
    assert oversized({"a": 25, "b": 75}) == ["b holds 75 of 100 lines (75%), more than 25%"]
    assert oversized({"a": 25, "b": 25, "c": 25, "d": 25}) == []


def test_the_product_package_is_counted_room_by_room(tmp_path):
    root = _tree(
        tmp_path,
        {
            "gpu_finops/__init__.py": "",
            "gpu_finops/cli.py": "a = 1\n",
            "gpu_finops/cost/__init__.py": "",
            "gpu_finops/cost/x.py": "a = 1\nb = 2\n",
            "infra/__init__.py": "",
            "infra/y.py": "a = 1\nb = 2\nc = 3\n",
        },
    )
    assert package_lines(root, ["gpu_finops", "infra"]) == {"gpu_finops": 1, "gpu_finops.cost": 2, "infra": 3}
