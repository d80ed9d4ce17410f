"""Build the local target's binaries from one Go module, pinned, cached outside the clone, reused when present.

All eight binaries are mains of one Go module of ours, local/build/unified/ (go.mod and go.sum committed, written
from the pins in versions.py by `python -m local.build.gomod`), built by ONE `go build -o DIR/ pkg...`, so every
package they share compiles once:
- kube-apiserver, kube-controller-manager, kube-scheduler: k8s.io/kubernetes/cmd/..., with every Kubernetes
  staging module replaced by its published v0.X.Y (the list read from the published go.mod). Version ldflags
  make /version report a real semver (Kueue refuses `v0.0.0-master`).
- etcd: a three-line main of ours calling etcdmain.Main (unified/etcd/main.go).
- kwok, Kueue: their cmd packages (sigs.k8s.io/kwok/cmd/kwok, sigs.k8s.io/kueue/cmd/kueue).
- kube-state-metrics: its root package (k8s.io/kube-state-metrics/v2), its version set by ldflags.
- karpenter-kwok: our main (unified/karpenter-kwok/main.go) running Karpenter core's controllers with the kwok
  cloud provider plus the AWS provider's spot-interruption controller.
The module's `tool` lines name the mains from dependencies. The binaries are cached under one key, the digest of
the module's files (go.mod, go.sum, our mains), the build flags and the Go toolchain: any change relinks all
eight, and Go's build cache (GOCACHE) recompiles only the packages whose inputs changed. Progress lines
follow the build (progress.py); `python -m benchmarks build` measures it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpu_finops.facts.names import PROJECT
from local.build import progress, versions

CACHE = Path(os.environ.get("GPU_FINOPS_CACHE", Path.home() / ".cache" / PROJECT)) / "local"
KUBE_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
UNIFIED = Path(__file__).with_name("unified")
# binary -> its main package in the unified module, in the order `local up` starts them. `go build -o DIR/`
# names each binary after its package's last element (before a /vN major-version suffix).
MAINS = {
    "etcd": "./etcd",
    **{c: f"k8s.io/kubernetes/cmd/{c}" for c in KUBE_COMMANDS},
    "kwok": "sigs.k8s.io/kwok/cmd/kwok",
    "kueue": "sigs.k8s.io/kueue/cmd/kueue",
    "karpenter-kwok": "./karpenter-kwok",
    "kube-state-metrics": "k8s.io/kube-state-metrics/v2",
}
# No DWARF in the compiler's output: `-ldflags=-w` drops it at link time anyway, and the compiler still
# spends time writing it (docs/local.md, The build: measured).
GCFLAGS = "all=-dwarf=false"


class BuildError(RuntimeError):
    pass


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    # One pinned toolchain for every build, fetched from the Go module proxy when the installed Go is older
    # (Karpenter v1.15.0 and its AWS provider declare go 1.26.9).
    env.update(CGO_ENABLED="0", GOFLAGS="-mod=mod", GOTOOLCHAIN=versions.GO_TOOLCHAIN)
    return env


def unified_env() -> dict[str, str]:
    """The unified build's environment: the committed go.mod and go.sum as they are (`-mod=readonly`: a
    missing sum fails the build instead of resolving anew), no VCS stamp (our mains sit in this clone)."""
    return {**go_env(), "GOFLAGS": "-mod=readonly -buildvcs=false"}


def run(cmd: list[str], cwd: Path, log: Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as f:
        f.write(f"\n$ {' '.join(cmd)}  (in {cwd})\n")
        f.flush()
        result = subprocess.run(cmd, cwd=cwd, env=go_env(), stdout=f, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        tail = log.read_text()[-3000:]
        raise BuildError(f"{' '.join(cmd)} failed (exit {result.returncode}); log {log}:\n{tail}")


def ldflags() -> str:
    """One set of link flags for all eight: -s -w, the Kubernetes version (component-base and client-go's
    version packages: /version, and the client-go user agent of every binary linking them) and
    kube-state-metrics' version (prometheus/common/version, linked by kube-state-metrics alone). etcd and kwok
    report versions compiled into their own packages; Kueue's own version package is left as upstream's
    `go install` leaves it."""
    version = versions.KUBERNETES
    major, minor = version.removeprefix("v").split(".")[:2]
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(0))
    flags = ["-s -w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
            f"-X {pkg}.buildDate={date}",
            f"-X {pkg}.gitCommit=0000000000000000000000000000000000000000",
        ]
    ksm = versions.KUBE_STATE_METRICS.removeprefix("v")
    flags.append(f"-X github.com/prometheus/common/version.Version={ksm}")
    return " ".join(flags)


def build_flags() -> list[str]:
    """-trimpath (no local paths in the binaries: the same bytes from any clone), the compiler and link flags."""
    return ["-trimpath", *([f"-gcflags={GCFLAGS}"] if GCFLAGS else []), "-ldflags", ldflags()]


def module_files() -> list[Path]:
    """The unified module's files that decide the binaries: go.mod, go.sum and our mains' sources."""
    files = [UNIFIED / "go.mod", UNIFIED / "go.sum", *sorted(UNIFIED.glob("*/*.go"))]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise BuildError(f"the unified module lacks {', '.join(missing)}: restore it from git")
    return files


def cache_key() -> str:
    """The binaries' cache key: `unified-` and the digest of every input of the one build that is ours to
    change: the module's go.mod and go.sum (every module version of every binary), our mains, the build
    flags (the version ldflags carry the Kubernetes and kube-state-metrics pins) and the Go toolchain. Any
    change gives a new key, so all eight are relinked; GOCACHE recompiles only what changed."""
    digest = hashlib.sha256()
    for f in module_files():
        digest.update(f"{f.relative_to(UNIFIED)}\0".encode() + f.read_bytes() + b"\0")
    digest.update(" ".join([*build_flags(), versions.GO_TOOLCHAIN]).encode())
    return "unified-" + digest.hexdigest()[:16]


def bin_dir() -> Path:
    """The folder holding this module's eight binaries (what the cluster starts from; `bin/set/` as before the
    one-module build, so `ps aux | grep bin/set/` still finds every process a local target started)."""
    return CACHE / "bin" / "set" / cache_key()


def binary_path(name: str) -> Path:
    if name not in MAINS:
        raise BuildError(f"no binary {name!r} in the unified build; it builds {', '.join(MAINS)}")
    return bin_dir() / name


def module_info(module_at_version: str, cwd: Path) -> dict:
    out = subprocess.run(
        ["go", "mod", "download", "-json", module_at_version],
        cwd=cwd,
        env=go_env(),
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise BuildError(
            f"go mod download {module_at_version} failed: {out.stdout[-1000:]}{out.stderr[-1000:]}"
        )
    return json.loads(out.stdout)


def staging_replaces(kubernetes_gomod: str, version: str) -> dict[str, str]:
    """k8s.io/x => ./staging/src/k8s.io/x  becomes  k8s.io/x => k8s.io/x v0.MINOR.PATCH."""
    published = "v0." + version.removeprefix("v1.")
    mods = re.findall(r"^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/src/", kubernetes_gomod, flags=re.M)
    if not mods:
        raise BuildError(
            "found no staging replace directives in k8s.io/kubernetes go.mod: the layout changed"
        )
    return {m: published for m in sorted(set(mods))}


def build_command(names: tuple[str, ...], out: Path, extra: tuple[str, ...] = ()) -> list[str]:
    """The one `go build` of `names`' mains into the folder `out` (run in the unified module)."""
    unknown = [n for n in names if n not in MAINS]
    if unknown:
        raise BuildError(f"no main for {', '.join(unknown)} in the unified build ({', '.join(MAINS)})")
    return ["go", "build", *extra, *build_flags(), "-o", f"{out}/", *(MAINS[n] for n in names)]


def follow(
    cmd: list[str],
    env: dict[str, str],
    log: Path,
    out: Path,
    clock: progress.Progress,
    cwd: Path = UNIFIED,
) -> int:
    """Run the build in `cwd`, its output (`go build -v`: one import path per package compiled) into the log
    and the progress lines: a count of compiled packages, and each binary as it appears in `out`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    lines: queue.Queue[str | None] = queue.Queue()
    with log.open("a") as f:
        f.write(f"\n$ {' '.join(cmd)}  (in {cwd})\n")
        f.flush()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert proc.stdout is not None

        def read() -> None:
            for line in proc.stdout:  # type: ignore[union-attr]
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        try:
            while True:
                try:
                    line = lines.get(timeout=2)
                except queue.Empty:
                    line = ""
                if line is None:
                    break
                if line:
                    f.write(line)
                    clock.output(line.rstrip("\n"))
                clock.linked(n for n in clock.names if (out / n).is_file())
                clock.tick()
        except BaseException:  # interrupted (Ctrl-C): no go build left running behind us
            proc.kill()
            proc.wait()
            raise
        rc = proc.wait()
        clock.linked(n for n in clock.names if (out / n).is_file())
        return rc


@dataclass
class Builder:
    out: Path
    log: Path
    echo: Callable[[str], None] = print

    def have(self, name: str) -> bool:
        path = self.out / name
        return path.is_file() and os.access(path, os.X_OK)

    def all(self) -> Path:
        need = tuple(n for n in MAINS if not self.have(n))
        if need:
            self.build(need)
        return self.out

    def build(self, names: tuple[str, ...]) -> None:
        """One `go build -v` of `names` into a folder beside `out`, progress lines as it goes (progress.py),
        then each binary moved into `out`: a failed or interrupted build leaves no binary in the cache."""
        staging = self.out.parent / f".{self.out.name}.building-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        clock = progress.Progress(names, self.echo)
        clock.begin(self.log)
        try:
            rc = follow(build_command(names, staging, ("-v",)), unified_env(), self.log, staging, clock)
            if rc != 0:
                tail = self.log.read_text()[-3000:]
                raise BuildError(
                    f"go build of {', '.join(names)} failed (exit {rc}); log {self.log}:\n{tail}"
                )
            absent = [n for n in names if not (staging / n).is_file()]
            if absent:
                raise BuildError(
                    f"go build exited 0 but wrote no {', '.join(absent)} in {staging}; log {self.log}"
                )
            self.out.mkdir(parents=True, exist_ok=True)
            for name in names:
                os.replace(staging / name, self.out / name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        clock.finish()


def build_all(echo: Callable[[str], None] = print, names: tuple[str, ...] | None = None) -> Path:
    """This module's binaries (all, or `names`), built where missing; the folder holding them. One build at a
    time per cache (CACHE/build.lock): `make demo` starts one in the background while `make setup` runs (the
    Makefile's `prebuild`), and `local up` then waits for it here instead of building the same binaries again
    beside it."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "build.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            echo(
                f"  waiting for the build already running (lock {CACHE / 'build.lock'}, log {CACHE / 'build.log'}) ..."
            )
            fcntl.flock(lock, fcntl.LOCK_EX)
        builder = Builder(bin_dir(), CACHE / "build.log", echo)
        if names is None:
            return builder.all()
        need = tuple(n for n in names if not builder.have(n))
        if need:
            builder.build(need)
        return builder.out


if __name__ == "__main__":
    try:
        print(build_all())
    except BuildError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
