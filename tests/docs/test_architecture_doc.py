"""docs/architecture.md is held to the tree: its room table and its drawing of the floors.

The room table ("## The rooms"): one row per package, that is per folder with an `__init__.py`, nested ones
included, under the top-level harness folders and `gpu_finops/` (every top-level folder with an
`__init__.py` except `tests/`, which mirrors the packages and is described in prose). Its first cell names
the package (`gpu_finops/cost/`); its other cells name the package's modules by their bare file names
(`collector.py`), or several at once by a pattern (`cli_*.py`, `test_*.py`). The check:
- every package has a row, and every row names an existing package, once;
- every `.py` a row names is a module of that package, and every module of the package (`__init__.py`
  aside) is named in its row, by name or by a pattern that matches it;
- a pattern matches at least one module, and a bare `name/` or non-Python file name (`stages/`,
  `rules.yaml`) exists in the package.
Paths with a folder in them (`gpu_finops/clients/kube.py`) are left to tests/docs/test_doc_paths.py, which
checks every path in every doc. Data files are checked where a row names them but not required in it: the
rows describe code, and a data file is named where its module's text needs it.

The floors ("## The floors and the import rule"): the first code block there draws one floor per line that
starts with a single space, its packages written exactly as the `layers` contract in pyproject.toml names
them; the drawn floors must be the contract's, in its order."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

from tests.docs import tables
from tests.docs.doc_commands import ROOT

DOC = ROOT / "docs" / "architecture.md"
ROOMS = "## The rooms"
FLOORS = "## The floors and the import rule"
NOT_ROOMS = frozenset({"tests"})


def packages(root: Path = ROOT) -> list[str]:
    """Every package under the top-level package folders, nested ones included, as `a/b/`."""
    found: list[str] = []

    def walk(folder: Path) -> None:
        found.append(folder.relative_to(root).as_posix() + "/")
        for sub in sorted(folder.iterdir()):
            if sub.is_dir() and sub.name != "__pycache__" and (sub / "__init__.py").is_file():
                walk(sub)

    for top in sorted(root.iterdir()):
        ours = top.is_dir() and not top.name.startswith(".") and top.name not in NOT_ROOMS
        if ours and (top / "__init__.py").is_file():
            walk(top)
    return found


def modules_of(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("*.py") if p.name != "__init__.py"}


def named_in_row(
    where: str, package: str, folder: Path, cells: tuple[str, ...]
) -> tuple[list[str], set[str]]:
    """(the problems, the modules named) of one row's module cells."""
    problems, modules, listed = [], modules_of(folder), set()
    for name in (n for cell in cells for n in tables.codes(cell)):
        if "/" in name.rstrip("/"):
            continue  # a path from the repository root: test_doc_paths.py checks it
        if name.endswith("/"):
            if not (folder / name).is_dir():
                problems.append(f"{where}: {name} is not a folder of {package}")
        elif "*" in name and name.endswith(".py"):
            matched = fnmatch.filter(sorted(modules), name)
            if not matched:
                problems.append(f"{where}: {name} matches no module of {package}")
            listed.update(matched)
        elif tables.BARE_FILE.match(name) and name.endswith(".py"):
            if name not in modules:
                problems.append(f"{where}: {name} is not a module of {package}")
            listed.add(name)
        elif tables.BARE_FILE.match(name) and not (folder / name).is_file():
            problems.append(f"{where}: {name} is not a file of {package}")
    return problems, listed


def room_problems(root: Path, text: str, doc: str = "docs/architecture.md") -> list[str]:
    """One line per disagreement between the room table in `text` and the packages under `root`."""
    start, body = tables.section(text, ROOMS)
    if not body:
        return [f"{doc}: no '{ROOMS}' section"]
    problems: list[str] = []
    rows: dict[str, int] = {}
    for row in (r for r in tables.rows(body) if r.header[:1] == ("package",)):
        where = f"{doc}:{start + row.line}"
        named = tables.codes(row.cells[0])
        if len(named) != 1 or not named[0].endswith("/"):
            problems.append(f"{where}: the package cell names no one folder (`name/`): {row.cells[0]!r}")
            continue
        package, folder = named[0], root / named[0]
        if package in rows:
            problems.append(f"{where}: {package} has a second row (the first is line {rows[package]})")
            continue
        rows[package] = start + row.line
        if not (folder / "__init__.py").is_file():
            problems.append(f"{where}: {package} is not a package (no {package}__init__.py)")
            continue
        found, listed = named_in_row(where, package, folder, row.cells[1:])
        problems += found
        problems += [
            f"{where}: {package}{module} is a module of {package} its row does not name"
            for module in sorted(modules_of(folder) - listed)
        ]
    problems += [
        f"{doc}: package {package} has no row in the room table ('{ROOMS}')"
        for package in packages(root)
        if package not in rows
    ]
    return problems


def floors_drawn(text: str) -> list[str]:
    """The floors the drawing shows, top to bottom, each as its packages are written."""
    _start, body = tables.section(text, FLOORS)
    block = re.search(r"```[^\n]*\n(.*?)```", body, re.S)
    if not block:
        return []
    return [
        re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        for line in block[1].splitlines()
        if re.match(r"^ [^\s|]", line)
    ]


def floors_contract(pyproject: str) -> list[str]:
    contracts = tomllib.loads(pyproject)["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c.get("type") == "layers"]
    return [" ".join(layer.split()) for layer in layers]


def floor_problems(text: str, pyproject: str, doc: str = "docs/architecture.md") -> list[str]:
    drawn, contract = floors_drawn(text), floors_contract(pyproject)
    if not drawn:
        return [f"{doc}: no drawing of the floors (a code block) under '{FLOORS}'"]
    problems = [
        f"{doc}: floor {i + 1} from the top: the drawing says {d!r}, pyproject.toml's layers contract {c!r}"
        for i, (d, c) in enumerate(zip(drawn, contract, strict=False))
        if d != c
    ]
    if len(drawn) != len(contract):
        problems.append(
            f"{doc}: the drawing shows {len(drawn)} floors, the layers contract has {len(contract)}"
        )
    return problems


# --- the document as it is ---------------------------------------------------------------------------------
def test_the_room_table_names_every_package_and_every_module():
    problems = room_problems(ROOT, DOC.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_the_room_table_is_not_vacuous():
    text = DOC.read_text(encoding="utf-8")
    found = packages()
    assert {"gpu_finops/", "gpu_finops/cost/", "infra/", "local/cluster/", "acts/"} <= set(found), found
    rows = [r for r in tables.rows(tables.section(text, ROOMS)[1]) if r.header[:1] == ("package",)]
    assert len(rows) == len(found)


def test_the_drawn_floors_are_the_layers_contract():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert len(floors_contract(pyproject)) >= 8
    problems = floor_problems(DOC.read_text(encoding="utf-8"), pyproject)
    assert not problems, "\n".join(problems)


# --- near misses -------------------------------------------------------------------------------------------
def _tree(root: Path) -> Path:
    for path in ("pkg/__init__.py", "pkg/a.py", "pkg/cli_x.py", "pkg/rules.yaml", "pkg/sub/__init__.py",
                 "pkg/sub/c.py", "pkg/data/x.txt", "tests/__init__.py", "tests/t.py"):  # fmt: skip
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")
    return root


ROOM_TABLE = """\
# Architecture

## The rooms

| package | modules |
|---|---|
| `pkg/` | `a.py` (one), `cli_*.py`; `sub/`, `data/`; `rules.yaml`; `pkg/sub/c.py` |
| `pkg/sub/` | `c.py` |

## Next
"""


def test_a_table_matching_the_tree_passes(tmp_path):
    assert room_problems(_tree(tmp_path), ROOM_TABLE) == []


def test_a_row_naming_a_missing_module_fails_naming_it(tmp_path):
    text = ROOM_TABLE.replace("| `c.py` |", "| `c.py`, `gone.py` |")
    assert room_problems(_tree(tmp_path), text) == [
        "docs/architecture.md:8: gone.py is not a module of pkg/sub/"
    ]


def test_a_package_with_no_row_fails_naming_it(tmp_path):
    text = ROOM_TABLE.replace("| `pkg/sub/` | `c.py` |\n", "")
    assert room_problems(_tree(tmp_path), text) == [
        "docs/architecture.md: package pkg/sub/ has no row in the room table ('## The rooms')"
    ]


def test_a_module_its_row_does_not_name_fails_naming_it(tmp_path):
    text = ROOM_TABLE.replace("`cli_*.py`", "`cli_y.py`")
    assert room_problems(_tree(tmp_path), text) == [
        "docs/architecture.md:7: cli_y.py is not a module of pkg/",
        "docs/architecture.md:7: pkg/cli_x.py is a module of pkg/ its row does not name",
    ]


def test_a_row_for_a_folder_that_is_no_package_and_a_pattern_matching_nothing_fail(tmp_path):
    text = ROOM_TABLE.replace(
        "| `pkg/sub/` | `c.py` |", "| `pkg/sub/` | `c.py`, `x_*.py`, `gone/` |\n| `pkg/data/` | |"
    )
    assert room_problems(_tree(tmp_path), text) == [
        "docs/architecture.md:8: x_*.py matches no module of pkg/sub/",
        "docs/architecture.md:8: gone/ is not a folder of pkg/sub/",
        "docs/architecture.md:9: pkg/data/ is not a package (no pkg/data/__init__.py)",
    ]


PYPROJECT = """\
[tool.importlinter]
root_packages = ["a", "b", "c"]
[[tool.importlinter.contracts]]
id = "floors"
type = "layers"
layers = ["a : b.x", "b | c", "d"]
"""

FLOORS_DOC = """\
## The floors and the import rule

```
 a : b.x          the top
                  more words about a | b
       |
 b | c            two rooms
       |
 d                the ground floor
```
"""


def test_the_drawn_floors_pass_when_they_are_the_contract():
    assert floors_drawn(FLOORS_DOC) == ["a : b.x", "b | c", "d"]
    assert floor_problems(FLOORS_DOC, PYPROJECT) == []


def test_two_floors_drawn_in_the_wrong_order_fail_naming_both():
    swapped = FLOORS_DOC.replace(" b | c            two rooms", " d                two rooms").replace(
        " d                the ground floor", " b | c            the ground floor"
    )
    assert floor_problems(swapped, PYPROJECT) == [
        "docs/architecture.md: floor 2 from the top: the drawing says 'd', pyproject.toml's layers contract 'b | c'",
        "docs/architecture.md: floor 3 from the top: the drawing says 'b | c', pyproject.toml's layers contract 'd'",
    ]
