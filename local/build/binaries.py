"""Build the local target's binaries from Go modules, pinned, cached outside the clone, reused when present.

Each binary is a `Recipe` (`recipes()`): a module folder of ours, its main package and link flags, built by one
`go build` (`go install` for kwok and Kueue) with `-trimpath -ldflags '-s -w'`:
- kube-apiserver, kube-controller-manager, kube-scheduler: `go install k8s.io/kubernetes/cmd/...@v` fails
  (its go.mod requires every staging module at v0.0.0 through replace directives), so a small wrapper
  module of ours requires k8s.io/kubernetes and replaces each staging module with its published v0.X.Y,
  read from the published go.mod. Version ldflags make /version report a real semver (Kueue refuses
  `v0.0.0-master`).
- etcd: a three-line main of ours calling etcdmain.Main (go install of etcd fails on replace directives).
- kwok, Kueue: plain `go install module@version` (a wrapper module requiring the same version gives
  `go list` the same graph, for the build benchmark).
- kube-state-metrics: `go install` fails (it asks the proxy for the module's version list to check for a
  deprecation, and the proxy lists none for k8s.io/kube-state-metrics/v2), so a module of ours requires the
  exact version and `go build`s its main package (the module root).
- karpenter-kwok: our main (local/build/karpenter/main.go) running Karpenter core's controllers with the kwok
  cloud provider plus the AWS provider's spot-interruption controller, in a module of ours that requires
  both at the same version.
One binary at a time (linking takes GBs of memory; this machine has 2 cores), a progress line per binary
(progress.py). Each binary is cached under its own key (its pin, and for our main its source digest), so
changing one pin rebuilds one binary. `python -m benchmarks build` measures these builds (issue 28).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from facts.names import PROJECT
from local.build import progress, versions

CACHE = Path(os.environ.get("GPU_FINOPS_CACHE", Path.home() / ".cache" / PROJECT)) / "local"
KUBE_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


class BuildError(RuntimeError):
    pass


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    # One pinned toolchain for every build, fetched from the Go module proxy when the installed Go is older
    # (Karpenter v1.15.0 and its AWS provider declare go 1.26.9).
    env.update(CGO_ENABLED="0", GOFLAGS="-mod=mod", GOTOOLCHAIN=versions.GO_TOOLCHAIN)
    return env


def run(cmd: list[str], cwd: Path, log: Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as f:
        f.write(f"\n$ {' '.join(cmd)}  (in {cwd})\n")
        f.flush()
        result = subprocess.run(cmd, cwd=cwd, env=go_env(), stdout=f, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        tail = log.read_text()[-3000:]
        raise BuildError(f"{' '.join(cmd)} failed (exit {result.returncode}); log {log}:\n{tail}")


def binary_keys() -> dict[str, str]:
    """Each binary's cache key: a binary is rebuilt only when its own pin (or our source for it) changes."""
    return {
        "etcd": f"etcd-{versions.ETCD}",
        **{c: f"k8s-{versions.KUBERNETES}" for c in KUBE_COMMANDS},
        "kwok": f"kwok-{versions.KWOK}",
        "kueue": f"kueue-{versions.KUEUE}",
        "kube-state-metrics": f"kube-state-metrics-{versions.KUBE_STATE_METRICS}",
        "karpenter-kwok": f"karpenter-{versions.KARPENTER}-aws-{versions.KARPENTER_AWS}-main-{_source_digest()}",
    }


# Our Go main is a module of its own (go.mod and go.sum committed beside it, so Go tools read its imports);
# its go.mod requires core and provider at the pins in versions.py (tests/local/build checks they agree).
KARPENTER_MODULE = Path(__file__).with_name("karpenter")
KARPENTER_MAIN = KARPENTER_MODULE / "main.go"


def _source_digest() -> str:
    """Our Karpenter module (main.go, go.mod, go.sum) is part of the binary's identity: a change to any of
    them rebuilds the binary."""
    digest = hashlib.sha256()
    for name in ("main.go", "go.mod", "go.sum"):
        digest.update((KARPENTER_MODULE / name).read_bytes())
    return digest.hexdigest()[:12]


def binary_path(name: str) -> Path:
    return CACHE / "bin" / binary_keys()[name] / name


def bin_dir() -> Path:
    """A folder of links to this pin set's binaries (what the cluster starts from)."""
    keys = binary_keys()
    return CACHE / "bin" / "set" / "_".join(sorted(set(keys.values())))


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


def ldflags(version: str) -> str:
    major, minor = version.removeprefix("v").split(".")[:2]
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(0))
    flags = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
            f"-X {pkg}.buildDate={date}",
            f"-X {pkg}.gitCommit=0000000000000000000000000000000000000000",
        ]
    return " ".join(["-s -w", *flags])


@dataclass(frozen=True)
class Recipe:
    """One binary: a prepared Go module folder, the main package built there, and its link flags."""

    name: str
    module: Path  # where `go list` reads its graph (for `go install` binaries: a wrapper requiring the same)
    package: str
    ldflags: str
    install: str | None = (
        None  # `go install package@install`: the module's own graph, its version in buildinfo
    )


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def _wrapper(work: Path, name: str, module: str, version: str, go: str = "1.26") -> Path:
    """A module of ours requiring `module` at exactly `version` (the same graph `go install module@version`
    resolves: the module's own requirements, no replace directives)."""
    return _write(
        work / name, {"go.mod": f"module gpu-finops.local/{name}\n\ngo {go}\n\nrequire {module} {version}\n"}
    )


def kube_module(work: Path) -> Path:
    mod = work / "kube"
    mod.mkdir(parents=True, exist_ok=True)
    info = module_info(f"k8s.io/kubernetes@{versions.KUBERNETES}", mod)
    replaces = staging_replaces(Path(info["GoMod"]).read_text(), versions.KUBERNETES)
    lines = [
        "module gpu-finops.local/kube",
        "",
        "go 1.25",
        "",
        f"require k8s.io/kubernetes {versions.KUBERNETES}",
        "",
    ]
    lines += [f"replace {m} => {m} {v}" for m, v in replaces.items()]
    return _write(mod, {"go.mod": "\n".join(lines) + "\n"})


def recipes(work: Path, names: tuple[str, ...] | None = None) -> list[Recipe]:
    """Every binary's recipe, in build order, its module folder prepared under `work`."""
    wanted = names or tuple(binary_keys())
    out: list[Recipe] = []
    if "etcd" in wanted:
        etcd = _wrapper(work, "etcd", "go.etcd.io/etcd/server/v3", versions.ETCD)
        _write(etcd, {"main.go": ETCD_MAIN})
        out.append(Recipe("etcd", etcd, ".", "-s -w"))
    if any(c in wanted for c in KUBE_COMMANDS):
        kube = kube_module(work)
        out += [
            Recipe(c, kube, f"k8s.io/kubernetes/cmd/{c}", ldflags(versions.KUBERNETES))
            for c in KUBE_COMMANDS
            if c in wanted
        ]
    for name, module, version in (
        ("kwok", "sigs.k8s.io/kwok", versions.KWOK),
        ("kueue", "sigs.k8s.io/kueue", versions.KUEUE),
    ):
        if name in wanted:
            wrapper = _wrapper(work, name, module, version)
            out.append(Recipe(name, wrapper, f"{module}/cmd/{name}", "-s -w", install=version))
    if "karpenter-kwok" in wanted:
        karp = work / "karpenter"
        karp.mkdir(parents=True, exist_ok=True)
        for name in ("go.mod", "go.sum", "main.go"):  # our module, as committed: no tidy, no re-resolution
            shutil.copy(KARPENTER_MODULE / name, karp / name)
        out.append(Recipe("karpenter-kwok", karp, ".", "-s -w"))
    if "kube-state-metrics" in wanted:
        v = versions.KUBE_STATE_METRICS
        ksm = _wrapper(work, "kube-state-metrics", "k8s.io/kube-state-metrics/v2", v)
        flags = f"-s -w -X github.com/prometheus/common/version.Version={v.removeprefix('v')}"
        out.append(Recipe("kube-state-metrics", ksm, "k8s.io/kube-state-metrics/v2", flags))
    return out


ETCD_MAIN = (
    'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\n'
    "func main() { etcdmain.Main(os.Args) }\n"
)


def build_command(recipe: Recipe, target: Path, extra: tuple[str, ...] = ()) -> list[str]:
    """The one `go build` (or `go install`) of a recipe, writing `target` (-trimpath and -s -w everywhere: no
    debug info is needed here). `go install` writes into GOBIN, so the command moves the binary after."""
    flags = [*extra, "-trimpath", "-ldflags", recipe.ldflags]
    if recipe.install is None:
        return ["go", "build", *flags, "-o", str(target), recipe.package]
    gobin = target.parent / f".gobin-{recipe.name}"
    install = ["env", f"GOBIN={gobin}", "go", "install", *flags, f"{recipe.package}@{recipe.install}"]
    moved = f"mkdir -p {gobin} && {shlex.join(install)} && mv {gobin}/{recipe.name} {target} && rmdir {gobin}"
    return ["sh", "-c", moved]


@dataclass
class Builder:
    out: Path
    work: Path
    log: Path
    echo: Callable[[str], None] = print

    def have(self, name: str) -> bool:
        path = binary_path(name)
        return path.is_file() and os.access(path, os.X_OK)

    def target(self, name: str) -> Path:
        path = binary_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def all(self) -> Path:
        self.out.mkdir(parents=True, exist_ok=True)
        need = tuple(n for n in binary_keys() if not self.have(n))
        if need:
            self.build(need)
        for name in binary_keys():
            link = self.out / name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(binary_path(name))
        return self.out

    def build(self, names: tuple[str, ...]) -> None:
        """Build `names` one at a time, a progress line per binary (elapsed, and the estimate from the last
        build's figures, progress.py), then the total."""
        todo = recipes(self.work, names)
        clock = progress.Progress([r.name for r in todo], self.echo)
        for recipe in todo:
            clock.start(recipe.name)
            run(build_command(recipe, self.target(recipe.name)), recipe.module, self.log)
            clock.done(recipe.name)
        clock.finish()


def build_all(echo: Callable[[str], None] = print) -> Path:
    """Every binary of this pin set, built where missing. One build at a time per cache (CACHE/build.lock):
    `make demo` starts one in the background while `make setup` runs (the Makefile's `prebuild`), and
    `local up` then waits for it here instead of building the same binaries again beside it."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "build.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            echo(
                f"  waiting for the build already running (lock {CACHE / 'build.lock'}, log {CACHE / 'build.log'}) ..."
            )
            fcntl.flock(lock, fcntl.LOCK_EX)
        return Builder(bin_dir(), CACHE / "work", CACHE / "build.log", echo).all()


if __name__ == "__main__":
    try:
        print(build_all())
    except BuildError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
