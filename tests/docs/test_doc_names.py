"""Every port and Kubernetes namespace a reference doc names is one the code or the chart knows: a doc that
says `-n monitoring` where the release is in `gpu-monitoring`, or a port nothing listens on, fails naming the
doc, the line and the name. (A name "known" is one the repository's code, charts or Makefile writes out:
this catches what nothing mentions any more, not every wrong choice among known names.) A namespace counts
as known only where the code writes it as one: a quoted string, `namespace: NAME` or `-n NAME`; the word in a
file name (`infra/objects/monitoring.py`) or inside another name (`gpu-monitoring`) does not."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ("README.md", "docs/*.md")  # docs/log/ is dated history, not reference
PORT = re.compile(r"(?:\bport |localhost:|127\.0\.0\.1:|\.svc:)(\d{4,5})\b")
NAMESPACE = re.compile(r"(?:\s-n |--namespace[ =]|\bnamespace `)([a-z0-9][a-z0-9-]*[a-z0-9])\b")


KNOWN = {
    "port": r"(?<![\w-]){}(?![\w-])",
    "namespace": r"[\"']{0}[\"']|namespace:\s*{0}\b|(?:\s-n|--namespace[ =])\s*{0}\b",
}


def code_text(root: Path = ROOT) -> str:
    """What the code, the charts and the build write, as one text."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.py", "*.yaml", "*.yml",
         "*.tpl", "*.go", "Makefile"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return "\n".join(
        (root / p).read_text(encoding="utf-8", errors="replace")
        for p in out.splitlines()
        if (root / p).is_file() and not p.startswith("tests/docs/")
    )


def unknown_names(docs: dict[str, str], code: str) -> list[str]:
    """doc:line: each port or namespace no code file writes out."""
    found = []
    for name, text in sorted(docs.items()):
        for n, line in enumerate(text.splitlines(), 1):
            for kind, rx in (("port", PORT), ("namespace", NAMESPACE)):
                for value in rx.findall(line):
                    if not re.search(KNOWN[kind].format(re.escape(value)), code):
                        found.append(f"{name}:{n}: {kind} {value} is in no code, chart or Makefile of ours")
    return found


def test_every_port_and_namespace_a_reference_doc_names_is_known_to_the_code():
    docs = {p.relative_to(ROOT).as_posix(): p.read_text() for g in REFERENCE for p in ROOT.glob(g)}
    assert len(docs) > 10, sorted(docs)
    assert unknown_names(docs, code_text()) == []


def test_a_port_or_namespace_nothing_knows_is_named_and_a_known_one_passes():
    code = (
        'PORT = 26086\nNS = "gpu-monitoring"\n# infra/objects/monitoring.py writes the monitoring objects\n'
    )
    doc = (
        "kubectl -n gpu-monitoring get pods; curl 127.0.0.1:26086/x\n"
        "helm -n monitoring uninstall gpu-finops\n"
        "the exporter listens on port 27777\n"
    )
    assert unknown_names({"d.md": doc}, code) == [
        "d.md:2: namespace monitoring is in no code, chart or Makefile of ours",
        "d.md:3: port 27777 is in no code, chart or Makefile of ours",
    ]
