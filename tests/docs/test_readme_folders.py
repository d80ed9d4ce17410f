"""README's folder table against the tree: every folder it names exists, and every package a reader meets
(each top-level package of pyproject's import contracts, each room of the product package) has a row, so a
room that moves or a new one cannot leave the table describing a tree that is gone."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.docs import tables

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = "gpu_finops"


def packages(root: Path = ROOT) -> list[str]:
    """The folders a reader meets: each import root, and each subpackage of the product."""
    roots = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
    rooms = sorted(f"{PRODUCT}/{p.parent.name}/" for p in (root / PRODUCT).glob("*/__init__.py"))
    return sorted({f"{r}/" for r in roots} | set(rooms))


def folder_rows(text: str) -> dict[str, int]:
    """folder -> line, for each table row whose first cell is one code span naming a folder (`x/`)."""
    out = {}
    for row in tables.rows(text):
        spans = tables.CODE.findall(row.cells[0]) if row.cells else []
        if len(spans) == 1 and spans[0].endswith("/") and row.cells[0] == f"`{spans[0]}`":
            out[spans[0]] = row.line
    return out


def folder_problems(root: Path, text: str, wanted: list[str], doc: str = "README.md") -> list[str]:
    rows = folder_rows(text)
    missing_dirs = [
        f"{doc}:{line}: `{folder}` is not a folder of the repository"
        for folder, line in sorted(rows.items())
        if not (root / folder).is_dir()
    ]
    no_row = [f"{doc}: the folder table has no row for `{p}`" for p in wanted if p not in rows]
    return missing_dirs + no_row


def test_readmes_folder_table_is_the_tree():
    assert folder_problems(ROOT, (ROOT / "README.md").read_text(), packages()) == []


def test_a_row_for_a_folder_that_is_gone_and_a_package_without_a_row_are_named(tmp_path):
    (tmp_path / "kept").mkdir()
    text = "| folder | what |\n|---|---|\n| `kept/` | here |\n| `finops/` | the readers |\n"
    assert folder_problems(tmp_path, text, ["kept/", "twin/"], doc="R.md") == [
        "R.md:4: `finops/` is not a folder of the repository",
        "R.md: the folder table has no row for `twin/`",
    ]


def test_the_product_rooms_are_among_the_folders_a_reader_meets():
    wanted = packages()
    assert {"gpu_finops/", "gpu_finops/model/", "gpu_finops/cost/", "infra/", "iam/", "nightly/"} <= set(
        wanted
    )
