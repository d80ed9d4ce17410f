"""Build the local target's binaries from Go modules, pinned, cached outside the clone, reused when present.

- kube-apiserver, kube-controller-manager, kube-scheduler: `go install k8s.io/kubernetes/cmd/...@v` fails
  (its go.mod requires every staging module at v0.0.0 through replace directives), so a small wrapper
  module of ours requires k8s.io/kubernetes and replaces each staging module with its published v0.X.Y,
  read from the published go.mod. Version ldflags make /version report a real semver (Kueue refuses
  `v0.0.0-master`).
- etcd: a three-line main of ours calling etcdmain.Main (go install of etcd fails on replace directives).
- kwok, Kueue: plain `go install module@version`.
- kube-state-metrics: `go install` fails (it asks the proxy for the module's version list to check for a
  deprecation, and the proxy lists none for k8s.io/kube-state-metrics/v2), so a module of ours requires the
  exact version and `go build`s its main package (the module root).
- karpenter-kwok: our main (local/build/karpenter/main.go) running Karpenter core's controllers with the kwok
  cloud provider plus the AWS provider's spot-interruption controller, in a module of ours that requires
  both at the same version.
One binary at a time (linking takes GBs of memory; this machine has 2 cores). Each binary is cached under
its own key (its pin, and for our main its source digest), so changing one pin rebuilds one binary.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from facts.names import PROJECT
from local.build import versions

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


@dataclass
class Builder:
    out: Path
    work: Path
    log: Path

    def have(self, name: str) -> bool:
        path = binary_path(name)
        return path.is_file() and os.access(path, os.X_OK)

    def target(self, name: str) -> Path:
        path = binary_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def kube(self) -> None:
        need = [c for c in KUBE_COMMANDS if not self.have(c)]
        if not need:
            return
        mod = self.work / "kube"
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
        (mod / "go.mod").write_text("\n".join(lines) + "\n")
        for name in need:
            run(
                [
                    "go",
                    "build",
                    "-trimpath",
                    "-ldflags",
                    ldflags(versions.KUBERNETES),
                    "-o",
                    str(self.target(name)),
                    f"k8s.io/kubernetes/cmd/{name}",
                ],
                mod,
                self.log,
            )

    def etcd(self) -> None:
        if self.have("etcd"):
            return
        mod = self.work / "etcd"
        mod.mkdir(parents=True, exist_ok=True)
        (mod / "go.mod").write_text(
            f"module gpu-finops.local/etcd\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 {versions.ETCD}\n"
        )
        (mod / "main.go").write_text(
            'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\n'
            "func main() { etcdmain.Main(os.Args) }\n"
        )
        run(
            ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(self.target("etcd")), "."],
            mod,
            self.log,
        )

    def install(self, name: str, package: str, version: str, binary: str | None = None) -> None:
        if self.have(name):
            return
        gobin = self.work / f"gobin-{name}"
        gobin.mkdir(parents=True, exist_ok=True)
        env_run = [
            "env",
            f"GOBIN={gobin}",
            "go",
            "install",
            "-trimpath",
            "-ldflags",
            "-s -w",
            f"{package}@{version}",
        ]
        run(env_run, self.work, self.log)
        shutil.move(str(gobin / (binary or package.rsplit("/", 1)[-1])), self.target(name))

    def kube_state_metrics(self) -> None:
        if self.have("kube-state-metrics"):
            return
        mod = self.work / "kube-state-metrics"
        mod.mkdir(parents=True, exist_ok=True)
        v = versions.KUBE_STATE_METRICS
        (mod / "go.mod").write_text(
            f"module gpu-finops.local/kube-state-metrics\n\ngo 1.26\n\nrequire k8s.io/kube-state-metrics/v2 {v}\n"
        )
        flags = f"-s -w -X github.com/prometheus/common/version.Version={v.removeprefix('v')}"
        target = str(self.target("kube-state-metrics"))
        run(
            ["go", "build", "-trimpath", "-ldflags", flags, "-o", target, "k8s.io/kube-state-metrics/v2"],
            mod,
            self.log,
        )

    def karpenter(self) -> None:
        """Karpenter core with the kwok cloud provider and the AWS provider's interruption controller
        (local/build/karpenter/main.go); core and provider at the same version, as the provider's go.mod pins."""
        if self.have("karpenter-kwok"):
            return
        mod = self.work / "karpenter"
        mod.mkdir(parents=True, exist_ok=True)
        for name in ("go.mod", "go.sum", "main.go"):  # our module, as committed: no tidy, no re-resolution
            shutil.copy(KARPENTER_MODULE / name, mod / name)
        run(
            ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(self.target("karpenter-kwok")), "."],
            mod,
            self.log,
        )

    def all(self) -> Path:
        self.out.mkdir(parents=True, exist_ok=True)
        steps = [
            ("etcd", self.etcd),
            ("kube", self.kube),
            ("kwok", lambda: self.install("kwok", "sigs.k8s.io/kwok/cmd/kwok", versions.KWOK)),
            ("kueue", lambda: self.install("kueue", "sigs.k8s.io/kueue/cmd/kueue", versions.KUEUE)),
            ("karpenter-kwok", self.karpenter),
            ("kube-state-metrics", self.kube_state_metrics),
        ]
        for name, step in steps:
            began = time.monotonic()
            step()
            print(f"  {name}: ready ({time.monotonic() - began:.0f}s)", flush=True)
        for name in binary_keys():
            link = self.out / name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(binary_path(name))
        return self.out


def build_all() -> Path:
    return Builder(bin_dir(), CACHE / "work", CACHE / "build.log").all()


if __name__ == "__main__":
    try:
        print(build_all())
    except BuildError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
