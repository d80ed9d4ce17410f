"""The one Go module all eight binaries are built in (local/build/unified/): its go.mod requires every component at
the pin in local/build/versions.py (which Renovate and the version ldflags read), names the mains it builds from
dependencies as `tool`s, replaces every Kubernetes staging module with the Kubernetes pin's published version,
and its sums are committed. `python -m local.build.gomod` writes it; these tests fail while the two disagree."""

from __future__ import annotations

import re

from local.build import binaries, gomod, versions

GO_MOD = (binaries.UNIFIED / "go.mod").read_text()


def required(go_mod: str) -> dict[str, str]:
    """module path -> version for every `require` line of a go.mod (block or single-line form)."""
    found: dict[str, str] = {}
    block = None
    for line in go_mod.splitlines():
        stripped = line.strip()
        if stripped.startswith(("require (", "tool (", "replace (")):
            block = stripped.split()[0]
            continue
        if stripped == ")":
            block = None
            continue
        m = re.match(r"^(?:require\s+)?([\w./-]+\.[\w./-]+)\s+(v\S+)", stripped)
        if m and (block == "require" or stripped.startswith("require ")):
            found[m.group(1)] = m.group(2)
    return found


def replaced(go_mod: str) -> dict[str, str]:
    return dict(re.findall(r"^replace\s+(\S+)\s+=>\s+\S+\s+(v\S+)", go_mod, flags=re.M))


def tools(go_mod: str) -> list[str]:
    block = re.search(r"^tool \(\n(.*?)^\)", go_mod, flags=re.M | re.S)
    return block.group(1).split() if block else []


def test_the_module_requires_every_component_at_its_pin():
    req = required(GO_MOD)
    got = {m: req.get(m) for m in gomod.PINS}
    assert got == gomod.PINS, (
        "local/build/unified/go.mod and local/build/versions.py disagree: run `python -m local.build.gomod` "
        "and commit go.mod and go.sum"
    )
    assert gomod.PINS["k8s.io/kube-state-metrics/v2"] == versions.KUBE_STATE_METRICS


def test_the_mains_from_dependencies_are_tools_of_the_module():
    assert sorted(tools(GO_MOD)) == sorted(p for p in binaries.MAINS.values() if not p.startswith("./"))
    for name, package in binaries.MAINS.items():
        if package.startswith("./"):
            assert (binaries.UNIFIED / package / "main.go").is_file(), name


def test_every_staging_module_is_replaced_by_the_kubernetes_pins_published_version():
    published = "v0." + versions.KUBERNETES.removeprefix("v1.")
    staging = {m: v for m, v in replaced(GO_MOD).items() if m.startswith("k8s.io/")}
    assert {"k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go", "k8s.io/apiserver"} <= set(staging)
    assert set(staging.values()) == {published}


def test_the_sums_are_committed():
    sums = (binaries.UNIFIED / "go.sum").read_text()
    for module, version in gomod.PINS.items():
        assert f"{module} {version} h1:" in sums, module


def test_the_generator_writes_pins_tools_and_replaces():
    text = gomod.go_mod({"k8s.io/api": "v0.36.3"})
    assert text.startswith("module gpu-finops.local/unified\n")
    assert required(text) == gomod.PINS
    assert tools(text) == gomod.tools()
    assert replaced(text)["k8s.io/api"] == "v0.36.3"
    assert "timestreamwrite v1.43.0" in text


def test_the_go_mod_reader_takes_both_require_forms():
    text = "module m\n\ngo 1.26\n\nrequire a.io/x v1.2.3\nrequire (\n\tb.io/y v0.1.0 // indirect\n)\n"
    assert required(text) == {"a.io/x": "v1.2.3", "b.io/y": "v0.1.0"}
