"""Facts the reference docs state about the build, held against the one place each is decided.

- the minimum Go on PATH: the Makefile's check says it; every `Go >= X` a doc writes must be one it names;
- how many acts there are: the act files under acts/; "six acts" where seven exist fails ("the other six"
  counts the others);
- a pinned version: a doc naming a pinned component with a version (`Kueue v0.19.1`) names the pin, unless
  the sentence says it is another one (`not`, `was`, `asks for`, ...);
- what a reference doc describes is true now: no "not on main yet";
- one install per tool: a tool `make setup` installs into its own venv under .tools/ is in no extra of
  pyproject.toml;
- the local target's Kueue visibility server runs (the local cluster registers it): no doc says it does not;
- every folder or file path, and every `make` target, pyproject.toml's and the Makefile's comments name exists.

Each checker is pure over texts; the tests below hold the real files and a near miss for each."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from gpu_finops.facts.config import Versions
from local.build import versions
from tests.docs.doc_commands import ROOT, make_database

REFERENCE = ("README.md", "docs/*.md", ".github/workflows/*.yml", "nightly/*.py")


def reference_docs(root: Path = ROOT) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for g in REFERENCE for p in root.glob(g)
    }


def _lines(docs: dict[str, str]):
    for name, text in sorted(docs.items()):
        for n, line in enumerate(text.splitlines(), 1):
            yield f"{name}:{n}", line


# --- the minimum Go --------------------------------------------------------------------------------------
GO_MIN = re.compile(r"\bGo\s*\(?>=\s*(\d+\.\d+)")
MAKE_GO_MIN = re.compile(r">=\s*(\d+\.\d+)")


def go_minimum_problems(docs: dict[str, str], makefile: str) -> list[str]:
    """Each `Go >= X` a doc writes that the Makefile's Go check does not name."""
    check = next((line for line in makefile.splitlines() if "command -v go" in line), None)
    if check is None:
        return ["Makefile: no `command -v go` check found: the minimum Go has no home to hold the docs to"]
    allowed = set(MAKE_GO_MIN.findall(check))
    return [
        f"{where}: Go >= {v}, but the Makefile's check asks for {' or '.join(sorted(allowed))}"
        for where, line in _lines(docs)
        for v in GO_MIN.findall(line)
        if v not in allowed
    ]


def test_every_go_minimum_a_doc_names_is_the_makefiles():
    assert go_minimum_problems(reference_docs(), (ROOT / "Makefile").read_text()) == []


def test_a_go_minimum_the_makefile_does_not_ask_for_is_named():
    make = 'x:\n\t@command -v go >/dev/null || { echo "install Go (>= 1.21; with GOTOOLCHAIN=local, >= 1.25)"; }\n'
    docs = {"README.md": "any Go >= 1.21 will do\nthe Makefile demands Go >= 1.24\n"}
    assert go_minimum_problems(docs, make) == [
        "README.md:2: Go >= 1.24, but the Makefile's check asks for 1.21 or 1.25"
    ]
    assert go_minimum_problems(docs, "all:\n") == [
        "Makefile: no `command -v go` check found: the minimum Go has no home to hold the docs to"
    ]


# --- how many acts ---------------------------------------------------------------------------------------
WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
ACTS_COUNT = re.compile(r"\b(other\s+)?(" + "|".join(WORDS) + r"|\d+)\s+acts\b", re.I)


def act_count(root: Path = ROOT) -> int:
    return len(list((root / "acts").glob("test_[0-9][0-9]_*.py")))


def act_count_problems(docs: dict[str, str], acts: int) -> list[str]:
    out = []
    for where, line in _lines(docs):
        for other, said in ACTS_COUNT.findall(line):
            n = int(said) if said.isdigit() else WORDS.index(said.lower())
            want = acts - 1 if other else acts
            if n != want:
                out.append(f"{where}: {'the other ' if other else ''}{said} acts, but acts/ holds {acts}")
    return out


def test_every_count_of_acts_a_doc_gives_is_the_act_files():
    assert act_count() == 9
    assert act_count_problems(reference_docs(), act_count()) == []


def test_a_stale_count_of_acts_is_named():
    docs = {
        "nightly.yml": "# runs all seven acts\n# the nightly runs six acts\n# the other six acts and 6 acts\n"
    }
    assert act_count_problems(docs, 7) == [
        "nightly.yml:2: six acts, but acts/ holds 7",
        "nightly.yml:3: 6 acts, but acts/ holds 7",
    ]


# --- pinned versions -------------------------------------------------------------------------------------
def pins() -> dict[str, str]:
    """Component name (as docs write it) -> its pinned version, without a leading v."""
    v = Versions()
    return {
        "Kubernetes": versions.KUBERNETES,
        "kube-apiserver": versions.KUBERNETES,
        "etcd": versions.ETCD,
        "kwok": versions.KWOK,
        "Kueue": versions.KUEUE,
        "Kueue chart": v.kueue_chart,
        "kube-state-metrics": versions.KUBE_STATE_METRICS,
        "Karpenter": versions.KARPENTER,
        "Karpenter chart": v.karpenter_chart,
        "karpenter-provider-aws": versions.KARPENTER_AWS,
        "Go": versions.GO_TOOLCHAIN.removeprefix("go"),
        "helm": versions.HELM,
        "prometheus-operator": versions.PROMETHEUS_OPERATOR,
    }


# a sentence that says the version it names is another one than the pin
OTHER = re.compile(
    r"\b(not|nor|was|were|before|older|newer|instead|rather|than|asks? for|requires?|declares?|from|to|"
    r"until|since|refused|answers?|would|could|checked against|built for|on client-go)\b",
    re.I,
)


def version_problems(docs: dict[str, str], pinned: dict[str, str]) -> list[str]:
    names = "|".join(re.escape(n) for n in sorted(pinned, key=len, reverse=True))
    rx = re.compile(rf"(?<![\w/.-])({names})\s+v?(\d+\.\d+\.\d+)\b", re.I)
    canon = {n.lower(): n for n in pinned}
    out = []
    for where, line in _lines(docs):
        for sentence in re.split(r"(?<=[.;:!?])\s+|\s\|\s", line):
            for name, version in rx.findall(sentence):
                pin = pinned[canon[name.lower()]].removeprefix("v")
                if version != pin and not OTHER.search(sentence):
                    out.append(f"{where}: {name} {version}, but the pin is {pin}")
    return out


def test_every_pinned_version_a_doc_states_as_current_is_the_pin():
    assert version_problems(reference_docs(), pins()) == []


def test_a_stale_pin_a_doc_states_as_current_is_named_and_a_contrast_passes():
    pinned = {"Kueue": "v0.19.2", "Go": "1.26.11", "Kueue chart": "0.19.2"}
    docs = {
        "docs/local.md": (
            "| Kueue v0.19.1 | built in the one module |\n"
            "The builds use Go 1.26.9. Kueue 0.19.2 runs.\n"
            "v0.19.3 answers 403, so Kueue v0.19.3 is not used; after a one-pin change (Kueue v0.19.2 to v0.19.1)\n"
            "the Kueue chart 0.19.1 renders\n"
        )
    }
    assert version_problems(docs, pinned) == [
        "docs/local.md:1: Kueue 0.19.1, but the pin is 0.19.2",
        "docs/local.md:2: Go 1.26.9, but the pin is 1.26.11",
        "docs/local.md:4: Kueue chart 0.19.1, but the pin is 0.19.2",
    ]


# --- reference describes what is true now ----------------------------------------------------------------
NOT_YET = re.compile(r"\b(not (yet )?on main|on main yet|not (yet )?landed|yet to land|lands later)\b", re.I)


def not_yet_problems(docs: dict[str, str]) -> list[str]:
    return [
        f"{where}: {m[0]!r}: a reference doc describes what is true now"
        for where, line in _lines(docs)
        for m in NOT_YET.finditer(line)
    ]


def test_no_reference_doc_speaks_of_what_is_not_on_main_yet():
    assert not_yet_problems(reference_docs()) == []


def test_a_doc_saying_a_part_is_not_on_main_yet_is_named():
    docs = {"README.md": "act 7's AWS holders are not on main yet\nact 7 runs on both targets\n"}
    assert not_yet_problems(docs) == [
        "README.md:1: 'not on main': a reference doc describes what is true now"
    ]


# --- one install per tool --------------------------------------------------------------------------------
TOOL_VENV = re.compile(r"\$\(TOOLS_DIR\)/([\w.-]+)/bin/")


def requirement_name(spec: str) -> str:
    return re.split(r"[\s\[<>=!~;]", spec.strip(), maxsplit=1)[0].lower().replace("_", "-")


def installed_twice(makefile: str, pyproject: dict) -> list[str]:
    tools = set(TOOL_VENV.findall(makefile))
    extras = pyproject.get("project", {}).get("optional-dependencies", {})
    return sorted(
        f"{tool}: installed into .tools/{tool} by `make setup` and by pyproject.toml's [{extra}] extra"
        for extra, specs in extras.items()
        for tool in tools
        if tool in {requirement_name(s) for s in specs}
    )


def test_no_tool_is_installed_both_into_its_own_venv_and_by_an_extra():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    makefile = (ROOT / "Makefile").read_text()
    assert "checkov" in TOOL_VENV.findall(makefile)
    assert installed_twice(makefile, pyproject) == []


def test_a_tool_installed_twice_is_named_with_both_places():
    makefile = "CHECKOV := $(TOOLS_DIR)/checkov/bin/checkov\n"
    pyproject = {"project": {"optional-dependencies": {"test": ["pytest>=8", "checkov==3.2.0"], "a": ["x"]}}}
    assert installed_twice(makefile, pyproject) == [
        "checkov: installed into .tools/checkov by `make setup` and by pyproject.toml's [test] extra"
    ]


# --- the local target's visibility server ----------------------------------------------------------------
DENIED = re.compile(
    r"visibility (?:API )?server[^.|]*\b(?:does not|doesn't|is not|isn't|never|cannot|can't) "
    r"(?:run|start|serve|registered|available)",
    re.I,
)


def visibility_problems(docs: dict[str, str], served_locally: bool) -> list[str]:
    if not served_locally:
        return []
    return [
        f"{where}: says Kueue's visibility server does not run; the local target starts and registers it"
        for where, line in _lines(docs)
        if DENIED.search(line)
    ]


def test_no_doc_says_the_visibility_server_the_local_target_starts_does_not_run():
    from local.cluster import controllers

    assert controllers.VISIBILITY_SERVICE == "visibility-server"
    assert visibility_problems(reference_docs(), served_locally=True) == []


def test_a_doc_denying_the_visibility_server_is_named():
    docs = {
        "docs/local.md": "Kueue's visibility server runs, registered\nthe visibility server does not run here\n"
    }
    assert visibility_problems(docs, served_locally=True) == [
        "docs/local.md:2: says Kueue's visibility server does not run; the local target starts and registers it"
    ]


# --- paths and make targets in configuration comments ----------------------------------------------------
FOLDER_OR_FILE = re.compile(r"(?<![\w./~:$-])((?:[\w-]+/)+(?:[\w.-]+\.\w+)?)(?![\w/-])")
MAKE_TARGET = re.compile(r"`make ([\w-]+)`")


def comment_lines(text: str) -> list[tuple[int, str]]:
    return [(n, line.split("#", 1)[1]) for n, line in enumerate(text.splitlines(), 1) if "#" in line]


def comment_problems(
    name: str, text: str, tops: set[str], targets: frozenset[str], root: Path = ROOT
) -> list[str]:
    out = []
    for n, comment in comment_lines(text):
        for path in FOLDER_OR_FILE.findall(comment):
            if path.split("/", 1)[0] in tops and not (root / path).exists():
                out.append(f"{name}:{n}: {path} does not exist")
        for target in MAKE_TARGET.findall(comment):
            if target not in targets:
                out.append(f"{name}:{n}: make has no target {target!r}")
    return out


@pytest.mark.parametrize("name", ["pyproject.toml", "Makefile"])
def test_every_path_and_make_target_a_configuration_comment_names_exists(name):
    from tests.docs.test_doc_paths import tracked_tops

    targets, _ = make_database()
    assert comment_problems(name, (ROOT / name).read_text(), tracked_tops(), targets) == []


def test_a_comment_naming_a_gone_folder_or_make_target_is_named():
    text = (
        "# the dashboards as code (infra/dashboards/, `make dashboards`)\n"
        '"x>=1",  # tools/dashboards.py and gpu_finops/cost/ and `make test`\n'
        "y = 1\n"
    )
    assert comment_problems(
        "pyproject.toml", text, {"infra", "tools", "gpu_finops"}, frozenset({"test"})
    ) == [
        "pyproject.toml:1: infra/dashboards/ does not exist",
        "pyproject.toml:1: make has no target 'dashboards'",
    ]
