"""The one Go module the local target's binaries are built in (local/build/unified/): write its go.mod
from the pins in local/build/versions.py, then `go mod tidy` it. Run it after changing a pin and commit the
result (go.mod and go.sum); tests/local/build/test_unified_module.py fails while the two disagree.

    python -m local.build.gomod

The go.mod it writes, before tidy:
- `require` each component at its pin: k8s.io/kubernetes, etcd's server, kwok, Kueue, kube-state-metrics,
  Karpenter core and its AWS provider;
- `tool` each main we build from a dependency (the three Kubernetes commands, kwok, Kueue, kube-state-metrics),
  so tidy keeps their requirements; our own two mains (etcd/, karpenter-kwok/) are packages of the module;
- `replace` every Kubernetes staging module (k8s.io/api, apimachinery, client-go, ...) with its published
  v0.MINOR.PATCH of the Kubernetes pin, the list read from the published k8s.io/kubernetes go.mod (which
  requires them at v0.0.0 through ./staging replaces that only work inside its own repository). A replace
  applies to every requirer, so every binary links these versions (docs/local.md, The build);
- `replace` timestreamwrite v1.43.1, which the Go module proxy refuses here, with v1.43.0 (docs/infra.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from local.build import binaries, versions

PINS = {
    "k8s.io/kubernetes": versions.KUBERNETES,
    "go.etcd.io/etcd/server/v3": versions.ETCD,
    "sigs.k8s.io/kwok": versions.KWOK,
    "sigs.k8s.io/kueue": versions.KUEUE,
    "k8s.io/kube-state-metrics/v2": versions.KUBE_STATE_METRICS,
    "sigs.k8s.io/karpenter": versions.KARPENTER,
    "github.com/aws/karpenter-provider-aws": versions.KARPENTER_AWS,
}
TIMESTREAM = (
    "// karpenter-provider-aws v1.15.0 requires timestreamwrite v1.43.1, whose zip the Go module proxy refuses here\n"
    '// (403 "This module version is not available"); v1.43.0 is served. Nothing we run calls Timestream\n'
    "// (docs/infra.md, Karpenter 1.15).\n"
    "replace github.com/aws/aws-sdk-go-v2/service/timestreamwrite => github.com/aws/aws-sdk-go-v2/service/timestreamwrite v1.43.0\n"
)


def tools() -> list[str]:
    """The mains built from dependencies: `tool` lines, so `go mod tidy` keeps what they need."""
    return [p for p in binaries.MAINS.values() if not p.startswith("./")]


def go_mod(staging: dict[str, str]) -> str:
    lines = ["module gpu-finops.local/unified", "", "go 1.26.9", "", "require ("]
    lines += [f"\t{m} {v}" for m, v in PINS.items()]
    lines += [")", "", "tool ("]
    lines += [f"\t{p}" for p in tools()]
    lines += [
        ")",
        "",
        "// The Kubernetes staging modules at the published version of the Kubernetes pin (local/build/gomod.py).",
    ]
    lines += [f"replace {m} => {m} {v}" for m, v in staging.items()]
    return "\n".join(lines) + "\n\n" + TIMESTREAM


def main() -> None:
    module = binaries.UNIFIED
    info = binaries.module_info(f"k8s.io/kubernetes@{versions.KUBERNETES}", module)
    staging = binaries.staging_replaces(Path(info["GoMod"]).read_text(), versions.KUBERNETES)
    (module / "go.mod").write_text(go_mod(staging))
    env = {**binaries.go_env(), "GOFLAGS": "-mod=mod"}
    done = subprocess.run(["go", "mod", "tidy"], cwd=module, env=env)
    if done.returncode != 0:
        raise binaries.BuildError(f"go mod tidy in {module} failed (exit {done.returncode}); see above")
    print(f"wrote {module / 'go.mod'} and go.sum: commit both")


if __name__ == "__main__":
    try:
        main()
    except binaries.BuildError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
