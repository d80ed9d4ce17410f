"""Our Karpenter main is a Go module of its own (local/build/karpenter/go.mod, go.sum): its requirements
of Karpenter core and the AWS provider are the pins in local/build/versions.py, which the binary's cache key
and Renovate read, so the two cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

from local.build import binaries, versions

MODULE = Path(binaries.__file__).with_name("karpenter")


def required(go_mod: str) -> dict[str, str]:
    """module path -> version for every `require` line of a go.mod (block or single-line form)."""
    found: dict[str, str] = {}
    for line in go_mod.splitlines():
        m = re.match(r"^\s*(?:require\s+)?([\w./-]+\.[\w./-]+)\s+(v\S+)", line)
        if m and not line.lstrip().startswith(("module", "go ", "//")):
            found[m.group(1)] = m.group(2)
    return found


def test_the_module_requires_core_and_provider_at_our_pins():
    req = required((MODULE / "go.mod").read_text())
    assert (req.get("sigs.k8s.io/karpenter"), req.get("github.com/aws/karpenter-provider-aws")) == (
        versions.KARPENTER,
        versions.KARPENTER_AWS,
    ), "local/build/karpenter/go.mod and local/build/versions.py disagree: re-run `go mod tidy` there"


def test_the_module_is_ours_and_its_sums_are_committed():
    text = (MODULE / "go.mod").read_text()
    assert text.startswith("module gpu-finops.local/karpenter\n")
    sums = (MODULE / "go.sum").read_text()
    assert f"sigs.k8s.io/karpenter {versions.KARPENTER} h1:" in sums


def test_a_changed_go_mod_changes_the_binarys_cache_key(tmp_path, monkeypatch):
    for name in ("main.go", "go.mod", "go.sum"):
        (tmp_path / name).write_bytes((MODULE / name).read_bytes())
    monkeypatch.setattr(binaries, "KARPENTER_MODULE", tmp_path)
    before = binaries.binary_keys()["karpenter-kwok"]
    (tmp_path / "go.mod").write_text((tmp_path / "go.mod").read_text() + "\n// changed\n")
    assert binaries.binary_keys()["karpenter-kwok"] != before


def test_the_go_mod_reader_takes_both_require_forms():
    text = "module m\n\ngo 1.26\n\nrequire a.io/x v1.2.3\nrequire (\n\tb.io/y v0.1.0 // indirect\n)\n"
    assert required(text) == {"a.io/x": "v1.2.3", "b.io/y": "v0.1.0"}
