"""Every file of ours a doc names exists: a path like `gpu_finops/cost/collector.py` or `docs/runbook.md` in README.md,
docs/*.md or docs/log/*.md whose first folder is one of this repository's tracked top-level entries. Paths under folders
a run creates (reports/, cdktf.out/, .state/, .local/) are not tracked and so not checked; upstream paths
(`pkg/providers/instanceprofile`, `charts/karpenter`) start with folders we do not have.

In a table row whose first cell names one folder of ours (`gpu_finops/cost/`, as the room table and
README's folder table do), a file named without a folder in the row's other cells (`collector.py`) is that
folder's, and must exist there."""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

from tests.docs import tables
from tests.docs.doc_commands import ROOT, documents

PATH = re.compile(
    r"(?<![\w./~:-])((?:\.?[\w-]+/)+[\w.-]+\.(?:py|md|ya?ml|toml|json|txt|go|mod|cfg|ini))(?![\w/])"
)


def tracked_tops() -> set[str]:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return {f.split("/", 1)[0] for f in files.split() if "/" in f}


def missing_paths(name: str, text: str, tops: set[str]) -> list[str]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in PATH.finditer(line):
            path = m[1]
            if path.split("/", 1)[0] in tops and not (ROOT / path).exists():
                out.append(f"{name}:{n}: {path} does not exist")
    return out


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.name)
def test_every_file_a_doc_names_exists(doc):
    problems = missing_paths(str(doc.relative_to(ROOT)), doc.read_text(encoding="utf-8"), tracked_tops())
    assert not problems, "\n".join(problems)


def test_a_stale_path_is_named_with_its_line():
    text = "see `gpu_finops/cost/collector.py`\nand `infra/objects.py` (`prometheus_values`), not reports/x.json\n"
    assert missing_paths("docs/x.md", text, tracked_tops()) == [
        "docs/x.md:2: infra/objects.py does not exist"
    ]


def missing_bare_names(name: str, text: str, tops: set[str], root: Path = ROOT) -> list[str]:
    """A bare file name in a table row whose first cell names one folder of ours, resolved in that folder."""
    out = []
    for row in tables.rows(text):
        folders = tables.codes(row.cells[0])
        if len(folders) != 1 or not folders[0].endswith("/") or folders[0].split("/", 1)[0] not in tops:
            continue
        for cell in row.cells[1:]:
            for code in tables.codes(cell):
                if tables.BARE_FILE.match(code) and not (root / folders[0] / code).exists():
                    out.append(f"{name}:{row.line}: {code} is not in {folders[0]} (the row's folder)")
    return out


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.name)
def test_every_file_a_table_row_names_is_in_the_rows_folder(doc):
    problems = missing_bare_names(str(doc.relative_to(ROOT)), doc.read_text(encoding="utf-8"), tracked_tops())
    assert not problems, "\n".join(problems)


def test_a_bare_name_missing_from_its_rows_folder_is_named_with_its_line():
    text = (
        "| package | modules |\n|---|---|\n"
        "| `gpu_finops/cost/` | `collector.py` over `pricing.py`; `store.py` |\n"
        "| `gpu_finops/ledger/` | `rules.py` (+ `rules.yaml`), `collector.py`, `gpu_finops/cost/store.py` |\n"
        "| `reports/` | `acts.json` (a run's, not tracked) |\n"
        "| not a folder | `nothing.py` |\n"
    )
    assert missing_bare_names("docs/x.md", text, tracked_tops()) == [
        "docs/x.md:4: collector.py is not in gpu_finops/ledger/ (the row's folder)"
    ]


# Our top-level packages, and the names the product's rooms had before they moved into gpu_finops/: a doc
# naming `finops.collector` or `facts.config` names a module that no longer exists, and fails.
PACKAGES = (
    "gpu_finops|infra|iam|nightly|tools|teardown|local|twin|acts|harness|assertions|benchmarks"
    "|facts|clients|finops|ledger|diagnose|report"
)
DOTTED = re.compile(rf"`((?:{PACKAGES})(?:\.\w+)+)")
FILE_SUFFIXES = {"py", "json", "jsonl", "xml", "md", "yaml", "yml", "txt", "png", "html", "sqlite", "csv"}


def missing_names(name: str, text: str) -> list[str]:
    """`gpu_finops.cost.focus`, `harness.interruption.kwok_instance_id`: a module of ours and the names in it."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in DOTTED.finditer(line):
            parts = m[1].split(".")
            if parts[-1] in FILE_SUFFIXES:  # `report.py`, `acts.json`: a file name, not a module
                continue
            found = next((i for i in range(len(parts), 0, -1) if find_spec_safe(".".join(parts[:i]))), 0)
            obj = importlib.import_module(".".join(parts[:found])) if found else None
            for attr in parts[found:]:
                obj = getattr(obj, attr, None)
            if obj is None:
                out.append(f"{name}:{n}: {m[1]} is not a module of ours or a name in one")
    return out


def find_spec_safe(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.name)
def test_every_module_a_doc_names_exists(doc):
    problems = missing_names(str(doc.relative_to(ROOT)), doc.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_a_stale_module_name_is_named_with_its_line():
    text = "`gpu_finops.cost.focus` and `gpu_finops.cost.export.athena_ddl`\n`finops.objects.prometheus_values`, `report.py`\n"
    assert missing_names("docs/x.md", text) == [
        "docs/x.md:2: finops.objects.prometheus_values is not a module of ours or a name in one"
    ]
