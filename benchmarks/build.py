"""The local target's Go builds (`python -m benchmarks build`, issue 28): figures, never pass/fail.

Per binary, in build order:
- packages: the non-standard packages its main depends on (`go list -deps` in its module folder, each with the
  module version it comes from, after replace directives);
- again at another version: how many of those an earlier binary in the order already needed at a different
  module version, which the Go build cache cannot share (its key is the package's content), so they compile
  again; same version: shared with an earlier binary at the same version (a cache hit when flags agree);
- with `--time`: wall seconds of its `go build`, split into compile (the first action to the link's start)
  and link, from `go build -debug-trace` (the go command's own action trace), and how many compile actions
  took over 20 ms (with an empty GOCACHE: the packages compiled; with a warm one, cache checks can pass 20 ms
  on a loaded machine).

`--cold` times with an empty GOCACHE made for the run (under /tmp, removed afterwards), so no shared cache is
touched; GOMODCACHE is whatever the environment has (the lines say whether each module was already there).
The machine's load average is printed with each figure: on a shared 2-core machine it moves the figures a lot.
Binaries go to a temporary folder, never to the project's cache.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

LIST_FORMAT = (
    "{{if not .Standard}}{{.ImportPath}}\t"
    "{{with .Module}}{{with .Replace}}{{.Path}}@{{.Version}}{{else}}{{.Path}}@{{.Version}}{{end}}{{end}}{{end}}"
)


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def package_set(module: Path, package: str, env: dict[str, str]) -> dict[str, str]:
    """import path -> module@version for every non-standard package the main depends on."""
    out = subprocess.run(
        ["go", "list", "-deps", "-f", LIST_FORMAT, package],
        cwd=module,
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"go list -deps {package} in {module} failed:\n{out.stderr[-2000:]}")
    pkgs = {}
    for line in out.stdout.splitlines():
        if line.strip():
            path, _, mod = line.partition("\t")
            pkgs[path] = mod or "(main module)"
    return pkgs


def overlap(sets: list[tuple[str, dict[str, str]]]) -> list[dict]:
    """For each binary in order: its package count, those an earlier one needed at another version, and at
    the same version."""
    seen: dict[str, set[str]] = defaultdict(set)
    rows = []
    for name, pkgs in sets:
        other = sum(1 for p, m in pkgs.items() if seen[p] and m not in seen[p])
        same = sum(1 for p, m in pkgs.items() if m in seen[p])
        rows.append(
            {"binary": name, "packages": len(pkgs), "again_other_version": other, "same_version": same}
        )
        for p, m in pkgs.items():
            seen[p].add(m)
    return rows


def trace_times(trace: Path) -> dict[str, float]:
    """Compile and link wall seconds and the number of compile actions from a `go build -debug-trace` file."""
    events = json.loads(trace.read_text())
    begins: dict[tuple, float] = {}
    spans: list[tuple[str, float, float]] = []
    for e in events:
        name = e.get("name", "")
        if not name.startswith("Executing action (") or " -> " in name:
            continue
        key = (name, e.get("tid"))
        if e.get("ph") == "B":
            begins[key] = e["ts"]
        elif e.get("ph") == "E" and key in begins:
            spans.append((name, begins.pop(key), e["ts"]))
    builds = [s for s in spans if s[0].startswith("Executing action (build ")]
    links = [s for s in spans if s[0].startswith("Executing action (link")]
    if not spans:
        return {"compile_s": 0.0, "link_s": 0.0, "compile_actions": 0}
    first = min(s[1] for s in spans)
    link_start = min((s[1] for s in links), default=max(s[2] for s in spans))
    link_s = sum(s[2] - s[1] for s in links) / 1e6
    return {
        "compile_s": (link_start - first) / 1e6,
        "link_s": link_s,
        "compile_actions": sum(1 for s in builds if s[2] - s[1] > 20_000),  # > 20 ms: ran, not a cache hit
    }


def modcache_has(module_at_version: str, env: dict[str, str]) -> bool:
    gomodcache = subprocess.run(
        ["go", "env", "GOMODCACHE"], env=env, capture_output=True, text=True
    ).stdout.strip()
    path, _, version = module_at_version.partition("@")
    escaped = "".join("!" + c.lower() if c.isupper() else c for c in path)
    return (Path(gomodcache) / "cache" / "download" / escaped / "@v" / f"{version}.zip").is_file()


def main(argv: list[str]) -> None:
    from local.build import binaries

    parser = argparse.ArgumentParser(prog="python -m benchmarks build")
    parser.add_argument("--only", nargs="*", help="binaries to measure (default: all, in build order)")
    parser.add_argument("--time", action="store_true", help="also run each go build and time it")
    parser.add_argument("--cold", action="store_true", help="time with an empty GOCACHE made for the run")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON too")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="gpu-finops-build-bench-"))
    env = binaries.go_env()
    if args.cold:
        env["GOCACHE"] = str(work / "gocache")
    names = tuple(args.only) if args.only else None
    recipes = binaries.recipes(work / "modules", names)
    print(f"Go builds of the local target ({len(recipes)} binaries), {load()}")
    sets = [(r.name, package_set(r.module, r.package, env)) for r in recipes]
    rows = overlap(sets)
    for row in rows:
        print(
            f"  {row['binary']:<24} {row['packages']:>5} packages; {row['again_other_version']:>5} needed "
            f"earlier at another version (compiled again), {row['same_version']:>5} at the same version"
        )
    again = sum(r["again_other_version"] for r in rows)
    print(
        f"  all: {len({p for _, s in sets for p in s.items()})} package@version pairs to compile; "
        f"{again} packages compiled again at another version"
    )
    if args.time:
        print(
            f"  timing each go build (GOCACHE {'empty, made for this run' if args.cold else env.get('GOCACHE') or 'default'}; "
            f"GOMODCACHE {'warm' if all(modcache_has(m, env) for m in _pins()) else 'partly cold'}):"
        )
        began = time.monotonic()
        for recipe, row in zip(recipes, rows, strict=True):
            trace = work / f"{recipe.name}.trace.json"
            cmd = binaries.build_command(recipe, work / "out" / recipe.name, ("-debug-trace", str(trace)))
            t = time.monotonic()
            subprocess.run(cmd, cwd=recipe.module, env=env, check=True, capture_output=True)
            row.update(wall_s=round(time.monotonic() - t, 1), **trace_times(trace))
            print(
                f"  {recipe.name:<24} {row['wall_s']:>6.0f}s wall: compile {row['compile_s']:.0f}s "
                f"({row['compile_actions']} compile actions over 20 ms), link {row['link_s']:.0f}s; {load()}"
            )
        print(f"  total {time.monotonic() - began:.0f}s; {load()}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    subprocess.run(["chmod", "-R", "u+w", str(work)], check=False)
    subprocess.run(["rm", "-rf", str(work)], check=False)


def _pins() -> list[str]:
    from local.build import versions as v

    return [
        f"k8s.io/kubernetes@{v.KUBERNETES}",
        f"go.etcd.io/etcd/server/v3@{v.ETCD}",
        f"sigs.k8s.io/kwok@{v.KWOK}",
        f"sigs.k8s.io/kueue@{v.KUEUE}",
        f"k8s.io/kube-state-metrics/v2@{v.KUBE_STATE_METRICS}",
        f"sigs.k8s.io/karpenter@{v.KARPENTER}",
    ]
