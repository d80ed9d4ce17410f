"""The local target's Go build (`python -m benchmarks build`): figures, never pass/fail.

All eight binaries are mains of one module (local/build/unified/) built by one `go build`. Per main, in build
order:
- packages: the non-standard packages it depends on (`go list -deps` in the module, each with the module
  version it comes from, after replace directives);
- same version: how many of those an earlier main in the order also needs: in one build they compile once
  (with one module graph there is one version of each package, so none is compiled twice);
- with `--time`: the one `go build` of all of them, its wall seconds split into compile (the first action to
  the first link's start) and link (the link actions' wall seconds summed; links run side by side), from
  `go build -debug-trace` (the go command's own action trace), the CPU seconds of the go command and its
  children (user + sys: less moved by other work on the machine than wall time), and how many compile
  actions took over 20 ms (with an empty GOCACHE: the packages compiled).

`--cold` times with an empty GOCACHE made for the run (under /tmp, removed afterwards unless `--gocache` names
it, so a later build can reuse it); GOMODCACHE is whatever the environment has (the line says whether the pinned
modules were already there). `--gcflags` times with other compiler flags (`''` for none: the build without
`-dwarf=false`). The machine's load average is printed with each figure: on a shared 2-core machine it moves
the figures a lot. Binaries go to a temporary folder, never to the project's cache.

The per-binary build this replaced (one module per binary, eight `go build`s) is measured by this file at
commit 318a758 (docs/local.md, The build).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
    """From a `go build -debug-trace` file: compile (the first action's start to the last compile's end), link
    (the link actions' seconds, summed: with several mains they overlap the compiles and each other), after
    (the seconds from the last compile's end to the last action's end: links nothing else overlaps), the
    number of compile actions that ran, and of links."""
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
        return {"compile_s": 0.0, "link_s": 0.0, "after_s": 0.0, "compile_actions": 0, "links": 0}
    first = min(s[1] for s in spans)
    compiled = max((s[2] for s in builds), default=first)
    return {
        "compile_s": (compiled - first) / 1e6,
        "link_s": sum(s[2] - s[1] for s in links) / 1e6,
        "after_s": (max(s[2] for s in spans) - compiled) / 1e6,
        "compile_actions": sum(1 for s in builds if s[2] - s[1] > 20_000),  # > 20 ms: ran, not a cache hit
        "links": len(links),
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
    parser.add_argument("--only", nargs="*", help="mains to measure (default: all eight, in build order)")
    parser.add_argument("--time", action="store_true", help="also run the go build and time it")
    parser.add_argument("--cold", action="store_true", help="time with an empty GOCACHE made for the run")
    parser.add_argument("--gocache", type=Path, help="with --cold: make the empty GOCACHE here and keep it")
    parser.add_argument(
        "--gcflags", help=f"compiler flags for the timed build (default {binaries.GCFLAGS!r})"
    )
    parser.add_argument("--json", type=Path, help="write the figures here as JSON too")
    parser.add_argument(
        "--module", type=Path, help="measure a copy of local/build/unified here (e.g. with one pin changed)"
    )
    args = parser.parse_args(argv)
    module = (args.module or binaries.UNIFIED).resolve()

    work = Path(tempfile.mkdtemp(prefix="gpu-finops-build-bench-"))
    env = binaries.unified_env()
    if args.cold:
        cache = args.gocache or work / "gocache"
        if cache.exists() and any(cache.iterdir()):
            raise SystemExit(f"--gocache {cache} is not empty: a cold build needs an empty GOCACHE")
        env["GOCACHE"] = str(cache)
    elif args.gocache:
        env["GOCACHE"] = str(args.gocache)
    names = tuple(args.only) if args.only else tuple(binaries.MAINS)
    print(f"Go build of the local target: {len(names)} mains of one module ({module}), {load()}")
    sets = [(n, package_set(module, binaries.MAINS[n], env)) for n in names]
    rows = overlap(sets)
    for row in rows:
        print(
            f"  {row['binary']:<24} {row['packages']:>5} packages; {row['same_version']:>5} also needed by an "
            f"earlier main (compiled once), {row['again_other_version']:>5} at another version"
        )
    pairs = len({p for _, s in sets for p in s.items()})
    print(f"  all: {pairs} package@version pairs to compile, each once")
    summary: dict = {"mains": rows, "packages": pairs}
    if args.time:
        gcflags = binaries.GCFLAGS if args.gcflags is None else args.gcflags
        print(
            f"  timing one go build (GOCACHE {'empty, made for this run' if args.cold else env.get('GOCACHE') or 'default'}; "
            f"GOMODCACHE {'warm' if all(modcache_has(m, env) for m in _pins()) else 'partly cold'}; "
            f"gcflags {gcflags!r}; {load()}):"
        )
        trace = work / "build.trace.json"
        cmd = binaries.build_command(names, work / "out", ("-debug-trace", str(trace)))
        if gcflags != binaries.GCFLAGS:
            cmd = [a for a in cmd if not a.startswith("-gcflags=")]
            cmd[2:2] = [f"-gcflags={gcflags}"] if gcflags else []
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.monotonic()
        done = subprocess.run(cmd, cwd=module, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(
                f"go build failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}"
            )
        wall = time.monotonic() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        summary.update(wall_s=round(wall, 1), cpu_s=round(cpu, 1), gcflags=gcflags, **trace_times(trace))
        print(
            f"  {wall:.0f}s wall ({wall / 60:.1f} min), {cpu:.0f}s CPU: compile {summary['compile_s']:.0f}s "
            f"({summary['compile_actions']} compile actions over 20 ms), {summary['links']} links "
            f"({summary['link_s']:.0f}s summed, {summary['after_s']:.0f}s after the last compile); {load()}"
        )
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
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
