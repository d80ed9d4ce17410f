"""`make outdated` against a fake registry: the pins it reads are Renovate's (renovate.json's own patterns),
each registry's answer is judged against the pin, and what no reachable registry knows is said, not guessed."""

from __future__ import annotations

import json
import subprocess
import urllib.error
from pathlib import Path

import pytest
from rich.console import Console

from tools import outdated, outdated_pins
from tools.outdated_pins import Pin, all_pins, js_to_python_regex, lock_parents

ROOT = Path(__file__).resolve().parents[2]


def _pypi(*versions: str, yanked: tuple[str, ...] = ()) -> bytes:
    return json.dumps({"releases": {v: [{"yanked": v in yanked}] for v in versions}}).encode()


def fake(answers: dict[str, bytes]) -> outdated.Fetch:
    def fetch(url: str) -> bytes:
        if url in answers:
            return answers[url]
        raise urllib.error.HTTPError(url, 404, "not found", {}, None)  # type: ignore[arg-type]

    return fetch


def test_renovate_patterns_are_read_from_renovate_json_and_find_the_go_pins():
    pins = {p.dep: p for p in all_pins(ROOT)}
    karpenter = pins["sigs.k8s.io/karpenter"]
    assert (karpenter.datasource, karpenter.manager) == ("go", "regex")
    assert karpenter.where.startswith("local/build/versions.py:")
    assert pins["go"].datasource == "golang-version"
    assert pins["focus-validator"].where.startswith("Makefile:")


def test_every_custom_manager_of_renovate_json_matches_at_least_one_pin():
    """A manager whose pattern matches nothing would silently drop its pins from the report."""
    config = json.loads((ROOT / "renovate.json").read_text())
    pins = [p for p in all_pins(ROOT) if p.manager == "regex"]
    files = {p.where.split(":")[0] for p in pins}
    for manager in config["customManagers"]:
        pattern = manager["managerFilePatterns"][0].strip("/")
        assert any(__import__("re").search(pattern, f) for f in files), manager["description"]


def test_javascript_named_groups_become_python_ones_and_nothing_else_changes():
    assert js_to_python_regex(r"(?<a>x)(?:y)(?=z)(?<!w)") == r"(?P<a>x)(?:y)(?=z)(?<!w)"


def test_lock_parents_read_both_via_spellings():
    assert lock_parents("    # via checkov\n") == ("checkov",)
    assert lock_parents("    # via\n    #   gpu-finops (pyproject.toml)\n    #   cdktn\n") == (
        "gpu-finops",
        "cdktn",
    )


@pytest.mark.parametrize(
    ("current", "served", "status"),
    [
        ("1.0.0", ("1.0.0", "1.1.0"), "behind"),
        ("1.1.0", ("1.0.0", "1.1.0"), "current"),
        ("1.1.0", ("1.1.0", "2.0.0rc1"), "current"),
        ("1.1.0", ("1.1.0", "1.2.0"), "current"),
    ],
    ids=["newer", "same", "prerelease-ignored", "yanked-ignored"],
)
def test_pypi_pins_are_judged_against_the_newest_stable_unyanked_release(current, served, status):
    fetch = fake({outdated.PYPI.format(name="pkg"): _pypi(*served, yanked=("1.2.0",))})
    rows = outdated.check(
        [Pin("pypi", "pkg", current, "Makefile:1", "regex")], outdated.Registries(fetch), {}
    )
    assert rows[0].status == status


def test_a_range_that_shuts_out_the_newest_release_is_said():
    fetch = fake({outdated.PYPI.format(name="pkg"): _pypi("1.0", "2.0")})
    pin = Pin("pypi", "pkg", ">=1,<2", "pyproject.toml:3", "pep621", is_range=True)
    assert outdated.check([pin], outdated.Registries(fetch), {})[0].status == "range excludes newest"


def test_a_transitive_or_marker_pin_behind_carries_why():
    fetch = fake({outdated.PYPI.format(name="pkg"): _pypi("1.0", "2.0")})
    via = Pin("pypi", "pkg", "1.0", "requirements/test.txt:1", "pip-compile", via=("parent",))
    marked = Pin(
        "pypi", "pkg", "1.1", "requirements/test.txt:9", "pip-compile", marker="python_full_version < '3.12'"
    )
    rows = outdated.check([via, marked], outdated.Registries(fetch), {})
    assert "via parent" in rows[0].note
    assert "python_full_version < '3.12'" in rows[1].note


def test_a_go_group_member_the_proxy_does_not_list_takes_what_the_leader_requires():
    proxy = outdated.GOPROXY
    fetch = fake(
        {
            f"{proxy}/github.com/aws/karpenter-provider-aws/@v/list": b"v1.14.3\nv1.15.2\n",
            f"{proxy}/sigs.k8s.io/karpenter/@v/list": b"v1.14.3\n",
            f"{proxy}/github.com/aws/karpenter-provider-aws/@v/v1.15.2.mod": b"require (\n\tsigs.k8s.io/karpenter v1.15.1\n)\n",
        }
    )
    pins = [
        Pin("go", "github.com/aws/karpenter-provider-aws", "v1.14.3", "v.py:1", "regex"),
        Pin("go", "sigs.k8s.io/karpenter", "v1.14.3", "v.py:2", "regex"),
    ]
    config = {"packageRules": [{"groupName": "karpenter", "matchDepNames": [p.dep for p in pins]}]}
    rows = {r.pin.dep: r for r in outdated.check(pins, outdated.Registries(fetch), config)}
    core = rows["sigs.k8s.io/karpenter"]
    assert (core.newest, core.status) == ("v1.15.1", "behind")
    assert "required by github.com/aws/karpenter-provider-aws v1.15.2" in core.note


def test_a_module_the_proxy_refuses_to_list_is_not_listed_not_current():
    rows = outdated.check(
        [Pin("go", "k8s.io/x", "v1.0.0", "v.py:1", "regex")], outdated.Registries(fake({})), {}
    )
    assert rows[0].status == "not listed"


def test_the_go_toolchain_is_read_from_the_proxy_toolchain_module():
    fetch = fake(
        {
            f"{outdated.GOPROXY}/golang.org/toolchain/@v/list": b"v0.0.1-go1.26.11.linux-amd64\nv0.0.1-go1.27.4.linux-amd64\nv0.0.1-go1.28rc1.linux-amd64\n"
        }
    )
    rows = outdated.check(
        [Pin("golang-version", "go", "1.26.11", "v.py:1", "regex")], outdated.Registries(fetch), {}
    )
    assert (rows[0].newest, rows[0].status) == ("1.27.4", "behind")


@pytest.mark.parametrize("datasource", sorted(outdated.UNREACHABLE))
def test_pins_only_an_unreachable_registry_knows_are_listed_as_such_without_asking(datasource):
    def never(url: str) -> bytes:
        raise AssertionError(f"asked {url}")

    rows = outdated.check([Pin(datasource, "x", "1", "f:1", "regex")], outdated.Registries(never), {})
    assert rows[0].status == "not reachable here"


def test_a_registry_error_is_a_row_naming_the_registry_not_a_crash():
    def broken(url: str) -> bytes:
        raise urllib.error.URLError("timed out")

    rows = outdated.check(
        [Pin("npm", "axe-core", "4.0.0", "Makefile:1", "regex")], outdated.Registries(broken), {}
    )
    assert rows[0].status == "error" and rows[0].note.startswith("npm:")


def test_the_report_is_never_a_failure_and_names_unexplained_pins(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "renovate.json").write_text(
        json.dumps(
            {
                "enabledManagers": ["custom.regex"],
                "customManagers": [
                    {
                        "customType": "regex",
                        "managerFilePatterns": ["/^pins\\.txt$/"],
                        "matchStrings": [
                            "datasource=(?<datasource>\\S+) depName=(?<depName>\\S+) (?<currentValue>\\S+)"
                        ],
                    }
                ],
            }
        )
    )
    (tmp_path / "pins.txt").write_text("datasource=pypi depName=pkg 1.0\n")
    console = Console(record=True, width=200)
    fetch = fake({outdated.PYPI.format(name="pkg"): _pypi("1.0", "3.0")})
    assert outdated.main(["--root", str(tmp_path)], fetch=fetch, console=console) == 0
    text = console.export_text()
    assert "behind with no reason held in tools/pins_held.yaml: pkg" in text
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "pins_held.yaml").write_text("pkg: waits for a reason\n")
    console = Console(record=True, width=200)
    outdated.main(["--root", str(tmp_path)], fetch=fetch, console=console)
    assert "waits for a reason" in console.export_text() and "no reason held" not in console.export_text()


def test_an_extra_naming_the_project_itself_is_no_pin(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=69,<85"]\n[project]\nname = "gpu-finops"\n'
        '[project.optional-dependencies]\nacts = ["gpu_finops[infra]", "pytest>=8,<10"]\n'
    )
    assert [p.dep for p in outdated_pins.pyproject_pins(tmp_path)] == ["setuptools", "pytest"]


def test_a_range_that_shuts_out_the_newest_with_no_reason_is_named_unexplained():
    rows = [
        outdated.Row(
            Pin("pypi", "pkg", ">=1,<2", "pyproject.toml:3", "pep621", is_range=True),
            "2.0",
            "range excludes newest",
            "",
        )
    ]
    console = Console(record=True, width=200)
    outdated.render(rows, {}, console, show_current=False)
    assert "behind with no reason held in tools/pins_held.yaml: pkg" in console.export_text()
    console = Console(record=True, width=200)
    outdated.render(rows, {"pkg": "the 2.x build backend is untried"}, console, show_current=False)
    assert "no reason held" not in console.export_text()
