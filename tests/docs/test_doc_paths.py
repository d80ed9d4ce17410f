"""Every file of ours a doc names exists: a path like `gpu_finops/cost/collector.py` or `docs/runbook.md` in README.md
or docs/*.md whose first folder is one of this repository's tracked top-level entries. Paths under folders
a run creates (reports/, cdktf.out/, .state/, .local/) are not tracked and so not checked; upstream paths
(`pkg/providers/instanceprofile`, `charts/karpenter`) start with folders we do not have."""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess

import pytest

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


PACKAGES = (
    "facts|clients|finops|ledger|diagnose|report|infra|teardown|local|acts|harness|assertions|benchmarks"
)
DOTTED = re.compile(rf"`((?:{PACKAGES}|gpu_finops)(?:\.\w+)+)")
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
