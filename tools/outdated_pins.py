"""Every pin Renovate's managers cover, read the way Renovate reads it (`make outdated`'s input).

Renovate runs nowhere this project is built, so `make outdated` asks the registries itself. To list exactly
the pins a Renovate run would move, the custom managers' patterns are not copied here: they are read from
renovate.json and applied as they are (a JavaScript named group `(?<x>` becomes Python's `(?P<x>`). The
built-in managers we enable are read as Renovate documents them: pip-compile (each `name==version` of the
lock files), pep621 (pyproject's requirements: an exact pin, or a range whose upper bound may shut out the
newest release), github-actions (`uses: owner/repo@sha # vX`) and dockerfile (`FROM image:tag`).
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LOCK_LINE = re.compile(
    r"^(?P<name>[A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==(?P<value>[^\s\\;]+)(?:\s*;\s*(?P<marker>[^\\\n]+?))?\s*\\?$",
    re.M,
)
REQUIREMENT = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*(?P<spec>[^;]*)")
USES = re.compile(
    r"uses:\s*(?P<repo>[\w.-]+/[\w.-]+)(?:/[\w./-]+)?@(?P<ref>[0-9a-f]{40})(?:\s*#\s*(?P<tag>\S+))?"
)
DOCKER_FROM = re.compile(r"^FROM\s+(?:--platform=\S+\s+)?(?P<image>[^\s:@]+):(?P<tag>[^\s@]+)", re.M)


@dataclass(frozen=True)
class Pin:
    """One version this project pins: where it lives, the registry Renovate would ask, and the value."""

    datasource: str  # Renovate's datasource name (pypi, go, npm, docker, helm, github-releases, ...)
    dep: str  # the package, module, image or repository
    current: str  # the pinned value as written (a range for a pep621 requirement)
    where: str  # path:line
    manager: str  # the Renovate manager that reads it
    is_range: bool = False
    via: tuple[str, ...] = ()  # a lock pin's parents (uv's `# via`); `gpu-finops` when pyproject names it
    marker: str = ""  # a lock pin's environment marker (the universal lock pins per Python version)


def tracked(root: Path) -> list[str]:
    """The repository's tracked files plus new ones git does not ignore (what a commit would carry)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(set(out.stdout.split()))


def js_to_python_regex(pattern: str) -> str:
    """Renovate's patterns are JavaScript regexes; their only construct Python spells otherwise is `(?<x>`."""
    return re.sub(r"\(\?<(?=[A-Za-z_])", "(?P<", pattern)


def _file_pattern(slashed: str) -> re.Pattern[str]:
    """A managerFilePatterns entry: `/regex/` is a regex; anything else is a glob, which we do not use."""
    if not (slashed.startswith("/") and slashed.endswith("/")):
        raise ValueError(f"renovate.json: managerFilePatterns entry {slashed!r} is not a /regex/")
    return re.compile(slashed[1:-1])


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def custom_manager_pins(root: Path, config: dict, files: list[str]) -> list[Pin]:
    pins: list[Pin] = []
    for manager in config.get("customManagers", []):
        file_patterns = [_file_pattern(p) for p in manager["managerFilePatterns"]]
        patterns = [re.compile(js_to_python_regex(m)) for m in manager["matchStrings"]]
        for path in files:
            if not any(p.search(path) for p in file_patterns):
                continue
            text = (root / path).read_text()
            for pattern in patterns:
                for match in pattern.finditer(text):
                    groups = match.groupdict()
                    pins.append(
                        Pin(
                            datasource=groups.get("datasource") or manager.get("datasourceTemplate", "?"),
                            dep=groups.get("depName") or manager.get("depNameTemplate", "?"),
                            current=groups["currentValue"],
                            where=f"{path}:{_line_of(text, match.start('currentValue'))}",
                            manager="regex",
                        )
                    )
    return pins


def lock_pins(root: Path, files: list[str]) -> list[Pin]:
    pins: list[Pin] = []
    for path in files:
        if not re.fullmatch(r"requirements/[^/]+\.txt", path):
            continue
        text = (root / path).read_text()
        matches = list(LOCK_LINE.finditer(text))
        for match, following in zip(matches, [*matches[1:], None], strict=True):
            block = text[match.end() : following.start() if following else len(text)]
            where = f"{path}:{_line_of(text, match.start())}"
            via, marker = lock_parents(block), (match["marker"] or "").strip()
            pins.append(
                Pin("pypi", match["name"], match["value"], where, "pip-compile", via=via, marker=marker)
            )
    return pins


def lock_parents(block: str) -> tuple[str, ...]:
    """The packages uv names under a lock entry's `# via` (ours as `gpu-finops`)."""
    names: list[str] = []
    for line in block.splitlines():
        comment = line.strip().removeprefix("#").strip()
        if not line.strip().startswith("#") or not comment:
            continue
        comment = comment.removeprefix("via").strip()
        if comment:
            names.append(comment.split()[0])
    return tuple(names)


def _canonical(name: str) -> str:
    """PEP 503's normalized name: case and runs of `-`, `_`, `.` do not tell two distributions apart."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject_pins(root: Path) -> list[Pin]:
    """pep621: an exact `==` pin is a pin; a range is listed so its upper bound can be held to the newest."""
    text = (root / "pyproject.toml").read_text()
    data = tomllib.loads(text)
    requirements = list(data.get("build-system", {}).get("requires", []))
    requirements += data.get("project", {}).get("dependencies", [])
    for extra in data.get("project", {}).get("optional-dependencies", {}).values():
        requirements += extra
    own = data.get("project", {}).get("name", "")
    pins: list[Pin] = []
    for requirement in requirements:
        match = REQUIREMENT.match(requirement)
        if not match:
            continue
        if _canonical(match["name"]) == _canonical(own):
            continue  # an extra naming the project's other extras (`gpu-finops[infra]`) is no pin
        spec = match["spec"].strip()
        line = _line_of(text, text.find(json.dumps(requirement)))
        exact = spec.startswith("==")
        pins.append(
            Pin(
                "pypi",
                match["name"],
                spec[2:] if exact else spec,
                f"pyproject.toml:{line}",
                "pep621",
                is_range=not exact,
            )
        )
    return pins


def action_pins(root: Path, files: list[str]) -> list[Pin]:
    pins: list[Pin] = []
    for path in files:
        if not re.fullmatch(r"\.github/workflows/[^/]+\.ya?ml", path):
            continue
        text = (root / path).read_text()
        for match in USES.finditer(text):
            pins.append(
                Pin(
                    "github-tags",
                    match["repo"],
                    match["tag"] or match["ref"][:12],
                    f"{path}:{_line_of(text, match.start())}",
                    "github-actions",
                )
            )
    return pins


def docker_pins(root: Path, files: list[str]) -> list[Pin]:
    pins: list[Pin] = []
    for path in files:
        if not re.search(r"(^|/|\.)([Dd]ocker|[Cc]ontainer)file$", path):
            continue
        text = (root / path).read_text()
        for match in DOCKER_FROM.finditer(text):
            pins.append(
                Pin(
                    "docker",
                    match["image"],
                    match["tag"],
                    f"{path}:{_line_of(text, match.start())}",
                    "dockerfile",
                )
            )
    return pins


def all_pins(root: Path = ROOT) -> list[Pin]:
    """Every pin, in the order: custom managers (renovate.json), locks, pyproject, workflows, Dockerfile."""
    config = json.loads((root / "renovate.json").read_text())
    files = tracked(root)
    enabled = set(config.get("enabledManagers", []))
    pins = custom_manager_pins(root, config, files) if "custom.regex" in enabled else []
    if "pip-compile" in enabled:
        pins += lock_pins(root, files)
    if "pep621" in enabled:
        pins += pyproject_pins(root)
    if "github-actions" in enabled:
        pins += action_pins(root, files)
    if "dockerfile" in enabled:
        pins += docker_pins(root, files)
    return pins
