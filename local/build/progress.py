"""Progress a person can follow during the local target's Go builds: a line when each binary starts (with the
estimate from the last build's figures), a line when it is done (elapsed, total so far, about how long is
left), and the total at the end. Each finished binary's time is recorded in `CACHE/build-times.json`, the
next build's estimate; with no record, the figures of issue 28's cold build on the 2-core machine stand in
(FIRST_BUILD_SECONDS), and the line says which it used."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from facts.names import PROJECT

# Issue 28's cold `make demo` on the 2-core build machine (busy with other work), seconds per binary: the
# estimate before this machine has built anything. The three Kubernetes commands shared 383 s.
FIRST_BUILD_SECONDS = {
    "etcd": 91.0,
    "kube-apiserver": 200.0,
    "kube-controller-manager": 120.0,
    "kube-scheduler": 63.0,
    "kwok": 115.0,
    "kueue": 296.0,
    "karpenter-kwok": 197.0,
    "kube-state-metrics": 145.0,
}


def record_path() -> Path:
    root = Path(os.environ.get("GPU_FINOPS_CACHE", Path.home() / ".cache" / PROJECT))
    return root / "local" / "build-times.json"


def load_record(path: Path) -> dict[str, float]:
    """The last build's seconds per binary; an unreadable record is reported and not used."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        print(f"  (ignoring {path}: not JSON ({exc}); estimates fall back to issue 28's figures)")
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, int | float)}


class Progress:
    def __init__(
        self,
        names: Iterable[str],
        echo: Callable[[str], None] = print,
        record: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.names = list(names)
        self.echo, self.clock = echo, clock
        self.record = record or record_path()
        self.last = load_record(self.record)
        self.began = clock()
        self.started: dict[str, float] = {}
        self.took: dict[str, float] = {}

    def estimate(self, name: str) -> tuple[float, str]:
        if name in self.last:
            return self.last[name], "last build"
        return FIRST_BUILD_SECONDS.get(name, 120.0), "issue 28's cold build"

    def left(self) -> float:
        return sum(self.estimate(n)[0] for n in self.names if n not in self.took)

    def start(self, name: str) -> None:
        self.started[name] = self.clock()
        est, source = self.estimate(name)
        i = self.names.index(name) + 1
        self.echo(f"  [{i}/{len(self.names)}] {name}: building (about {est:.0f}s, {source}) ...")

    def done(self, name: str) -> None:
        took = self.clock() - self.started[name]
        self.took[name] = took
        total = self.clock() - self.began
        self.echo(
            f"  [{len(self.took)}/{len(self.names)}] {name}: built in {took:.0f}s; "
            f"{total:.0f}s so far, about {self.left():.0f}s left"
        )
        self.save()

    def save(self) -> None:
        self.record.parent.mkdir(parents=True, exist_ok=True)
        merged = {**self.last, **{k: round(v, 1) for k, v in self.took.items()}}
        tmp = self.record.with_suffix(".tmp")
        tmp.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
        tmp.replace(self.record)

    def finish(self) -> None:
        total = self.clock() - self.began
        self.echo(f"  built {len(self.took)} of {len(self.names)} binaries in {total:.0f}s")
