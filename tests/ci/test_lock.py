"""The hash-pinned lock files (requirements/*.txt, written by `make lock` with uv) agree with pyproject.toml.

Re-resolving needs the package index, so this checks what can be checked offline: every dependency
pyproject.toml declares (runtime; runtime + the test extra) is pinned in its lock at a version its
specifier allows, every pin carries hashes (pip --require-hashes refuses the file otherwise), and the
lock's header is the command `make lock` runs. After editing pyproject.toml: `make lock`.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCKS = {"requirements/runtime.txt": (), "requirements/test.txt": ("test",)}
PIN = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==(?P<version>[^\s;\\]+)", re.M)


def declared(pyproject: str, extras: tuple[str, ...]) -> list[Requirement]:
    """The requirements of the project with these extras; an extra naming the project itself
    (`gpu-finops[infra,acts]`) stands for those extras' requirements, as pip and uv resolve it."""
    project = tomllib.loads(pyproject)["project"]
    own = canonicalize_name(project["name"])
    reqs = [Requirement(r) for r in project["dependencies"]]
    pending, seen = list(extras), set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for req in map(Requirement, project["optional-dependencies"][extra]):
            if canonicalize_name(req.name) == own:
                pending += sorted(req.extras)
            else:
                reqs.append(req)
    return reqs


def pinned(lock: str) -> dict[str, str]:
    return {canonicalize_name(m["name"]): m["version"] for m in PIN.finditer(lock)}


def out_of_sync(pyproject: str, lock: str, extras: tuple[str, ...]) -> list[str]:
    """What the lock lacks or pins outside pyproject's ranges, one line each."""
    pins = pinned(lock)
    problems = []
    for req in declared(pyproject, extras):
        name = canonicalize_name(req.name)
        if name not in pins:
            problems.append(f"{req.name}: declared ({req}) but not in the lock")
        elif not req.specifier.contains(Version(pins[name]), prereleases=True):
            problems.append(f"{req.name}: the lock pins {pins[name]}, outside {req.specifier}")
    return problems


def unhashed(lock: str) -> list[str]:
    """Pins without a --hash (each pin's block runs to the next pin)."""
    starts = [m.start() for m in PIN.finditer(lock)] + [len(lock)]
    return [
        PIN.match(lock, a)["name"]  # type: ignore[index]
        for a, b in itertools.pairwise(starts)
        if "--hash=sha256:" not in lock[a:b]
    ]


def test_each_lock_pins_every_declared_dependency_within_its_range():
    pyproject = (ROOT / "pyproject.toml").read_text()
    for path, extras in LOCKS.items():
        lock = (ROOT / path).read_text()
        assert out_of_sync(pyproject, lock, extras) == [], f"{path} is stale: run `make lock`"
        assert len(pinned(lock)) > len(declared(pyproject, extras)), path  # transitive pins too


def test_every_pin_carries_hashes():
    for path in LOCKS:
        lock = (ROOT / path).read_text()
        assert pinned(lock), path
        assert unhashed(lock) == [], path


def test_the_locks_were_written_by_the_command_make_lock_runs():
    makefile = (ROOT / "Makefile").read_text()
    flags = re.search(r"^LOCK_FLAGS\s*:=\s*(.+)$", makefile, re.M)[1].split()  # type: ignore[index]
    for path, extras in LOCKS.items():
        header = (ROOT / path).read_text().splitlines()[1]
        words = header.lstrip("# ").split()
        assert words[:4] == ["uv", "pip", "compile", "pyproject.toml"], header
        for extra in extras:
            assert f"--extra {extra}" in header, header
        assert [f for f in flags if f not in ("--quiet",)] == [w for w in words if w in flags], header
        assert words[-2:] == ["-o", path], header


# --- near misses -------------------------------------------------------------------------------------------
def test_a_dependency_added_to_pyproject_but_not_locked_is_named():
    pyproject = (ROOT / "pyproject.toml").read_text()
    added = pyproject.replace('  "duckdb>=1.4,<3",\n', '  "duckdb>=1.4,<3",\n  "hypothesis>=6,<7",\n')
    assert added != pyproject
    lock = (ROOT / "requirements/runtime.txt").read_text()
    assert out_of_sync(added, lock, ()) == ["hypothesis: declared (hypothesis<7,>=6) but not in the lock"]


def test_a_range_narrowed_past_the_locked_version_is_named():
    pyproject = (ROOT / "pyproject.toml").read_text()
    lock = (ROOT / "requirements/runtime.txt").read_text()
    locked = pinned(lock)["tenacity"]
    narrowed = pyproject.replace('"tenacity>=9,<10"', f'"tenacity>{locked},<10"')
    assert narrowed != pyproject
    assert out_of_sync(narrowed, lock, ()) == [f"tenacity: the lock pins {locked}, outside <10,>{locked}"]


def test_a_pin_without_hashes_is_named():
    lock = "six==1.17.0 \\\n    --hash=sha256:" + "0" * 64 + "\nidna==3.10\n    # via requests\n"
    assert unhashed(lock) == ["idna"]
