"""`make outdated`: what is newer than each pin, asked of each registry this workplace can reach.

Renovate is configured (renovate.json) but no bot runs where this project is built, so pins age unseen.
This asks, for every pin Renovate's managers cover (tools/outdated_pins.py), the registry Renovate would ask:
PyPI for the locks, pyproject and tool pins; the Go module proxy for local/build/versions.py's modules and the
Go toolchain; npm for Node-side tools and Node itself. Pins that only a registry unreachable here knows (Helm
repositories, container registries, GitHub, endoflife.date, EKS add-ons) are listed as such, never guessed.

The Go proxy here serves some versions it does not list; for a Renovate group (packageRules' groupName), a
member with nothing newer listed takes the version the group's newest member requires in its go.mod
(karpenter-provider-aws v1.15.2 requires sigs.k8s.io/karpenter v1.15.1), with that provenance shown.

A report, never a failure: exit 0 whatever it finds; 2 only for a bad argument. A pin held back on purpose has
its reason in tools/pins_held.yaml, shown beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from rich.console import Console
from rich.table import Table

from gpu_finops.facts.names import PROJECT
from tools.outdated_pins import ROOT, Pin, all_pins

Fetch = Callable[[str], bytes]
TIMEOUT = 20.0  # seconds per registry request
PYPI = "https://pypi.org/pypi/{name}/json"
GOPROXY = "https://proxy.golang.org"
NPM = "https://registry.npmjs.org/{name}"
REACHABLE = {"pypi": "PyPI", "go": "Go module proxy", "golang-version": "Go module proxy", "npm": "npm"}
REACHABLE |= {"node-version": "npm"}
UNREACHABLE = {
    "docker": "a container registry",
    "helm": "a Helm repository",
    "github-releases": "GitHub",
    "github-tags": "GitHub",
    "endoflife-date": "endoflife.date",
    "aws-eks-addon": "the EKS API",
    "python-version": "python.org",
}


@dataclass(frozen=True)
class Row:
    pin: Pin
    newest: str | None  # the newest stable version served, None when unknown
    status: str  # behind | current | range excludes newest | not reachable here | error
    note: str = ""


def parse(value: str) -> Version | None:
    """A version as the registries spell it (`v1.2.3`, `go1.26.11`, `1.2.3`), None if it is not one."""
    try:
        return Version(re.sub(r"^(v|go)", "", value))
    except InvalidVersion:
        return None


def newest_stable(values: Iterable[str]) -> str | None:
    stable = [(v, s) for s in values if (v := parse(s)) is not None and not v.is_prerelease and "+" not in s]
    return max(stable)[1] if stable else None


def default_fetch(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "gpu-finops-outdated"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        return response.read()


def _escape_module(module: str) -> str:
    """The Go proxy's case encoding: each upper-case letter becomes `!` and its lower case."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), module)


class Registries:
    """The reachable registries, each answering `newest(dep) -> str | None` (None: not served here)."""

    def __init__(self, fetch: Fetch = default_fetch) -> None:
        self.fetch = fetch

    def pypi(self, dep: str) -> str | None:
        data = json.loads(self.fetch(PYPI.format(name=dep)))
        live = [
            v
            for v, files in data.get("releases", {}).items()
            if files and not all(f.get("yanked") for f in files)
        ]
        return newest_stable(live)

    def go(self, dep: str) -> str | None:
        base = f"{GOPROXY}/{_escape_module(dep)}/@v"
        try:
            listed = self.fetch(f"{base}/list").decode().split()
        except urllib.error.HTTPError as exc:
            if exc.code not in (403, 404, 410):
                raise
            listed = []  # the proxy here refuses to list some modules whose exact versions it serves
        # @latest is refused for some modules here; the list still counts
        with contextlib.suppress(urllib.error.HTTPError, KeyError, ValueError):
            listed.append(json.loads(self.fetch(f"{GOPROXY}/{_escape_module(dep)}/@latest"))["Version"])
        return newest_stable(listed)

    def go_requires(self, module: str, version: str, dep: str) -> str | None:
        """The version of `dep` that `module@version`'s go.mod requires, if it does."""
        text = self.fetch(f"{GOPROXY}/{_escape_module(module)}/@v/{version}.mod").decode()
        match = re.search(rf"^\s*(?:require\s+)?{re.escape(dep)}\s+(v\S+)", text, re.M)
        return match.group(1) if match else None

    def golang_version(self, dep: str) -> str | None:
        listed = self.fetch(f"{GOPROXY}/golang.org/toolchain/@v/list").decode().split()
        return newest_stable(m.group(1) for s in listed if (m := re.match(r"v0\.0\.1-go([\d.]+)\.", s)))

    def npm(self, dep: str) -> str | None:
        data = json.loads(self.fetch(NPM.format(name=dep)))
        return data.get("dist-tags", {}).get("latest")

    def node_version(self, dep: str) -> str | None:
        return self.npm("node")

    def newest(self, datasource: str, dep: str) -> str | None:
        return getattr(self, datasource.replace("-", "_"))(dep)


def judge(pin: Pin, newest: str | None) -> tuple[str, str]:
    """The status of one pin against the newest stable version served."""
    if newest is None:
        return "error", "the registry lists no stable version"
    if pin.is_range:
        try:
            allowed = SpecifierSet(pin.current)
        except InvalidSpecifier:
            return "error", f"unparsable range {pin.current!r}"
        return ("current", "") if Version(newest) in allowed else ("range excludes newest", "")
    ours, theirs = parse(pin.current), parse(newest)
    if ours is None or theirs is None:
        return "error", f"cannot compare {pin.current!r} with {newest!r}"
    if pin.datasource == "node-version" and theirs.major >= ours.major:
        return ("current", "") if theirs.major == ours.major else ("behind", "a newer major")
    return ("behind", "") if theirs > ours else ("current", "")


def _ask(registries: Registries, pin: Pin) -> Row:
    if pin.datasource in UNREACHABLE:
        return Row(pin, None, "not reachable here", f"only {UNREACHABLE[pin.datasource]} knows")
    if pin.datasource not in REACHABLE:
        return Row(pin, None, "not reachable here", f"datasource {pin.datasource!r} is not asked")
    try:
        newest = registries.newest(pin.datasource, pin.dep)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return Row(pin, None, "error", f"{REACHABLE[pin.datasource]}: {exc}"[:120])
    if newest is None and pin.datasource == "go":
        return Row(
            pin, None, "not listed", "the Go proxy here lists no version; exact versions may be served"
        )
    status, note = judge(pin, newest)
    if status == "behind" and pin.marker:
        note = f"only where {pin.marker}: the newest may not support that environment"
    elif status == "behind" and pin.via and PROJECT not in pin.via:
        note = f"transitive, via {', '.join(pin.via[:3])}: moves when `make lock` re-resolves within their ranges"
    return Row(pin, newest, status, note)


def _groups(config: dict) -> dict[str, list[str]]:
    return {r["groupName"]: r["matchDepNames"] for r in config.get("packageRules", []) if "groupName" in r}


def fill_go_groups(rows: list[Row], registries: Registries, groups: dict[str, list[str]]) -> list[Row]:
    """A Go group member takes the version its group's newest member requires in go.mod, where that is newer
    than what the proxy lists for it (the proxy here serves exact versions it does not list)."""
    out = list(rows)
    for members in groups.values():
        in_group = [i for i, r in enumerate(out) if r.pin.datasource == "go" and r.pin.dep in members]
        leaders = [out[i] for i in in_group if out[i].status == "behind" and out[i].newest]
        for leader in leaders:
            for i in in_group:
                row = out[i]
                if row.pin.dep == leader.pin.dep:
                    continue
                try:
                    required = registries.go_requires(leader.pin.dep, leader.newest or "", row.pin.dep)
                except (urllib.error.URLError, OSError):
                    continue
                wanted, ours = parse(required or ""), parse(row.pin.current)
                listed = parse(row.newest or "")
                if wanted and ours and wanted > ours and (listed is None or wanted > listed):
                    note = f"required by {leader.pin.dep} {leader.newest}; the proxy does not list it"
                    out[i] = Row(row.pin, required, "behind", note)
    return out


def held_reasons(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    return {str(k): str(v) for k, v in data.items()}


def check(pins: list[Pin], registries: Registries, config: dict, workers: int = 8) -> list[Row]:
    """One row per distinct (datasource, dep, value): the same lock pin in two files is asked once."""
    distinct: dict[tuple[str, str, str, bool], Pin] = {}
    for pin in pins:
        key = (pin.datasource, pin.dep.lower(), pin.current, pin.is_range)
        if key in distinct:
            first = distinct[key]
            where = f"{first.where}, {pin.where}"
            distinct[key] = Pin(
                first.datasource,
                first.dep,
                first.current,
                where,
                first.manager,
                first.is_range,
                first.via,
                first.marker,
            )
        else:
            distinct[key] = pin
    with ThreadPoolExecutor(max_workers=workers) as pool:
        rows = list(pool.map(lambda p: _ask(registries, p), distinct.values()))
    return fill_go_groups(rows, registries, _groups(config))


ORDER = {
    "behind": 0,
    "range excludes newest": 1,
    "error": 2,
    "not listed": 3,
    "not reachable here": 4,
    "current": 5,
}


def render(rows: list[Row], held: dict[str, str], console: Console, show_current: bool) -> None:
    table = Table(title="pins against the newest release served here", title_justify="left")
    for column in ("pin", "ours", "newest served", "status", "where it lives", "note / reason held"):
        table.add_column(column, overflow="fold")
    for row in sorted(rows, key=lambda r: (ORDER[r.status], r.pin.datasource, r.pin.dep.lower())):
        if row.status == "current" and not show_current:
            continue
        note = held.get(row.pin.dep, row.note) if row.status != "current" else row.note
        note = note or ("direct (pyproject)" if PROJECT in row.pin.via else "")
        where = row.pin.where if len(row.pin.where) < 60 else row.pin.where.split(",")[0] + ", ..."
        table.add_row(row.pin.dep, row.pin.current, row.newest or "-", row.status, where, note)
    console.print(table)
    counts = {s: sum(r.status == s for r in rows) for s in ORDER}
    console.print(", ".join(f"{n} {s}" for s, n in counts.items() if n))
    # a range whose upper bound shuts out the newest release is as far behind as an exact pin
    unexplained = [
        r.pin.dep
        for r in rows
        if r.status in ("behind", "range excludes newest") and not r.note and r.pin.dep not in held
    ]
    if unexplained:
        console.print(f"behind with no reason held in tools/pins_held.yaml: {', '.join(unexplained)}")


def main(argv: list[str] | None = None, fetch: Fetch = default_fetch, console: Console | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make outdated", description=__doc__.split("\n")[0])
    parser.add_argument("--all", action="store_true", help="also list the pins that are current")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    console = console or Console(width=160)
    started = time.monotonic()
    pins = all_pins(args.root)
    console.print(f"asking the registries about {len(pins)} pins ...")
    config = json.loads((args.root / "renovate.json").read_text())
    rows = check(pins, Registries(fetch), config)
    render(rows, held_reasons(args.root / "tools" / "pins_held.yaml"), console, args.all)
    console.print(f"done in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
