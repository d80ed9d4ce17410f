"""Progress a person can follow during the local target's one `go build`: a line when it starts (the
binaries, and the last build's figures: packages compiled and seconds), then every EVERY seconds the count of
packages compiled so far (`go build -v` prints each one's import path as it compiles it), the elapsed time and
about how long is left, a line as each binary is written, and the total at the end.

The estimate: the last build's seconds scaled by the share of its package count not compiled yet. Each build's
figures (seconds, packages compiled, binaries) are recorded in `CACHE/build-times.json`; with no record, the
unified cold build measured on a 2-core machine stands in (FIRST_BUILD), and the line says
which. A warm build (few packages to compile) ends long before the estimate: it is an upper bound then."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from gpu_finops.facts.names import PROJECT

# The unified cold build of all eight binaries on the 2-core machine, 2026-12-02 (docs/local.md, The build:
# 29.1 min beside another cold Go build; 3,274 compile actions): the estimate before this machine has recorded
# a build.
FIRST_BUILD = {"seconds": 1746.0, "packages": 3274}
EVERY = 30.0  # seconds between count lines
# `go build -v` prints one import path per package it compiles; anything else (errors, `go: downloading`) is not
# counted.
PACKAGE = re.compile(r"^[\w.~+-]+(/[\w.~+-]+)*$")


def record_path() -> Path:
    root = Path(os.environ.get("GPU_FINOPS_CACHE", Path.home() / ".cache" / PROJECT))
    return root / "local" / "build-times.json"


def load_record(path: Path, key: str = "unified") -> dict[str, float] | None:
    """The last build's seconds and packages compiled (`key`: the unified build, or a Terraform tool's,
    local/build/terraform.py); a record that is unreadable or of another shape (the per-binary build's, before
    the one module) is reported and not used."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        print(f"  (ignoring {path}: not JSON ({exc}); the estimate falls back to the measured figures)")
        return None
    last = data.get(key) if isinstance(data, dict) else None
    if last is None and isinstance(data, dict) and all(isinstance(v, dict) for v in data.values()):
        return None  # other builds' figures only: this one has not been recorded yet
    if not (
        isinstance(last, dict)
        and all(isinstance(last.get(k), int | float) and last[k] > 0 for k in ("seconds", "packages"))
    ):
        print(
            f"  (ignoring {path}: no {key} build recorded; the estimate falls back to the measured figures)"
        )
        return None
    return {"seconds": float(last["seconds"]), "packages": float(last["packages"])}


def minutes(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Progress:
    def __init__(
        self,
        names: Iterable[str],
        echo: Callable[[str], None] = print,
        record: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        every: float = EVERY,
        key: str = "unified",
        first: dict[str, float] = FIRST_BUILD,
    ) -> None:
        self.names = list(names)
        self.echo, self.clock, self.every, self.key = echo, clock, every, key
        self.record = record or record_path()
        last = load_record(self.record, key)
        self.source = "the last build" if last else f"the measured {key} cold build"
        self.last = last or first
        self.began = self.said = clock()
        self.compiled = 0
        self.written: list[str] = []

    def begin(self, log: Path | None = None) -> None:
        self.began = self.said = self.clock()
        where = f"; log {log}" if log else ""
        self.echo(
            f"  building {len(self.names)} binaries with one go build ({', '.join(self.names)}); "
            f"{self.source}: {self.last['packages']:,.0f} packages compiled in {minutes(self.last['seconds'])}{where}"
        )

    def left(self) -> float:
        done = min(self.compiled / self.last["packages"], 1.0)
        return max(self.last["seconds"] * (1 - done), 0.0)

    def output(self, line: str) -> None:
        if PACKAGE.match(line):
            self.compiled += 1

    def tick(self) -> None:
        now = self.clock()
        if now - self.said < self.every:
            return
        self.said = now
        expected = self.last["packages"]
        if self.compiled < expected:
            state = f"about {minutes(self.left())} left if it compiles as many as {self.source}"
        else:
            state = f"more than {self.source} compiled ({expected:,.0f}); linking"
        self.echo(f"  {self.compiled:,} packages compiled, {minutes(now - self.began)} elapsed; {state}")

    def linked(self, names: Iterable[str]) -> None:
        for name in names:
            if name not in self.written:
                self.written.append(name)
                self.echo(
                    f"  [{len(self.written)}/{len(self.names)}] {name} written at "
                    f"{minutes(self.clock() - self.began)}"
                )

    def finish(self) -> None:
        took = self.clock() - self.began
        self.echo(
            f"  built {len(self.written)} of {len(self.names)} binaries in {minutes(took)} "
            f"({self.compiled:,} packages compiled)"
        )
        self.save(took)

    def save(self, took: float) -> None:
        """Record this build's figures for the next estimate; a build that compiled nothing (all in GOCACHE,
        only linked) says nothing about a build that compiles, so the record stays as it was."""
        if self.compiled == 0:
            return
        self.record.parent.mkdir(parents=True, exist_ok=True)
        figures = {"seconds": round(took, 1), "packages": self.compiled, "binaries": self.names}
        try:  # each build's figures under its own key, the others' kept
            kept = json.loads(self.record.read_text()) if self.record.is_file() else {}
        except ValueError:
            kept = {}
        kept = kept if isinstance(kept, dict) else {}
        tmp = self.record.with_suffix(".tmp")
        tmp.write_text(json.dumps({**kept, self.key: figures}, indent=1, sort_keys=True) + "\n")
        tmp.replace(self.record)
