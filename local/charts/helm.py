"""Helm, built from the Go module proxy at a pinned v3 release, cached outside the clone like the local
target's binaries (local/build/binaries.py): `go install helm.sh/helm/v3/cmd/helm@<pin>` into a folder keyed by the
pin, so changing the pin builds one new binary and nothing else."""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
from pathlib import Path

from local.build import binaries as build
from local.build import versions

MODULE = "helm.sh/helm/v3"


def helm_path() -> Path:
    return build.CACHE / "bin" / f"helm-{versions.HELM}" / "helm"


def ensure_helm() -> Path:
    """The pinned helm binary; built (a few minutes, once per pin) when the cache does not hold it. One build at
    a time (CACHE/helm.lock): a caller that finds one running (`make test`'s background prebuild starts it
    first) waits for it and uses its binary rather than compiling helm a second time beside it."""
    path = helm_path()
    if path.is_file() and os.access(path, os.X_OK):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with (build.CACHE / "helm.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"  waiting for the helm build already running (log {build.CACHE / 'helm-build.log'}) ...",
                  file=sys.stderr, flush=True)  # fmt: skip
            fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        work = build.CACHE / "work"
        work.mkdir(parents=True, exist_ok=True)
        # a private GOBIN, then one rename: a build killed midway never leaves a half-written binary in the cache
        with tempfile.TemporaryDirectory(dir=path.parent) as gobin:
            ldflags = f"-s -w -X {MODULE}/internal/version.version={versions.HELM}"
            cmd = ["env", f"GOBIN={gobin}", "go", "install", "-trimpath", "-ldflags", ldflags]
            build.run([*cmd, f"{MODULE}/cmd/helm@{versions.HELM}"], work, build.CACHE / "helm-build.log")
            os.replace(Path(gobin) / "helm", path)
    return path


if __name__ == "__main__":
    try:
        print(ensure_helm())
    except build.BuildError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
