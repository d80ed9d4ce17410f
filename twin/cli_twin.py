"""`gpu-finops twin generate|erlang-trace|run|compare`: the fleet twin (docs/twin.md).

`run` and `compare` start the local target (real kube-apiserver, scheduler, kwok, Kueue, Karpenter, the GPU
simulators) unless `--reuse` says it is up, and stop it after. The target uses fixed ports: on a shared
machine wrap them in `flock /tmp/gpu-finops-local.lock`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from gpu_finops.facts.arguments import integer, number, writable_file
from gpu_finops.facts.errors import CheckFailed, UsageError
from gpu_finops.facts.output_files import write_output
from twin.trace import MAX_COMPRESSION, MAX_JOBS, MIN_COMPRESSION

# Bounds that keep each number meaningful and the run finite: a trace of at most a year, a compression a
# wall clock can follow, at most the trace loader's MAX_JOBS jobs.
YEAR_H = 24 * 366
hours = number(1 / 60, maximum=YEAR_H)  # a trace's length or a mean duration: a minute to a year
compression = number(MIN_COMPRESSION, maximum=MAX_COMPRESSION)
MEAN_GPUS = {1: 0.4, 2: 0.2, 4: 0.2, 8: 0.2}


def _tenant_load(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected TENANT=LOAD, got {text!r}")
    return name, number(0, above=True, maximum=10)(value)


def _chart_path(text: str) -> Path:
    """A chart's path: its format follows its name (PNG or SVG), and it must be writable, checked now."""
    if not text.lower().endswith((".png", ".svg")):
        raise argparse.ArgumentTypeError(f"expected a path ending in .png or .svg, got {text[:80]!r}")
    return writable_file(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    g = sub.add_parser("generate", help="a seeded multi-tenant trace for a fleet file")
    g.add_argument("--fleet", type=Path, required=True)
    g.add_argument("--out", type=writable_file, required=True)
    g.add_argument("--hours", type=hours, default=24.0, help="trace length (default a day; at most a year)")
    g.add_argument("--compression", type=compression, default=60.0, help="trace seconds per wall second")
    g.add_argument(
        "--load",
        type=number(0, above=True, maximum=10),
        default=0.8,
        help="offered load per tenant, of its quota",
    )
    g.add_argument(
        "--tenant-load",
        type=_tenant_load,
        action="append",
        default=[],
        metavar="TENANT=LOAD",
        help="this tenant's offered load instead of --load (repeatable): one busy tenant, others idle",
    )
    g.add_argument("--training-median-h", type=hours, default=2.0, help="trace hours (default 2)")
    g.add_argument("--serving-mean-h", type=hours, default=4.0, help="trace hours (default 4)")
    g.add_argument("--seed", type=int, default=1)
    e = sub.add_parser("erlang-trace", help="the M/M/c known case: one tenant, one-GPU jobs")
    e.add_argument("--out", type=writable_file, required=True)
    e.add_argument("--servers", type=integer(1, 100_000), default=16)
    e.add_argument("--load", type=number(0, above=True, maximum=0.99), default=0.8)
    e.add_argument("--mean-s", type=number(1, maximum=YEAR_H * 3600), default=600.0,
                   help="mean service, trace seconds")  # fmt: skip
    e.add_argument("--jobs", type=integer(1, MAX_JOBS), default=400)
    e.add_argument("--compression", type=compression, default=60.0)
    e.add_argument("--seed", type=int, default=1)
    for name, text in (
        ("run", "replay a trace on the twin under one policy"),
        ("compare", "one trace, several policies"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("--fleet", type=Path, required=True)
        p.add_argument("--trace", type=Path, required=True)
        p.add_argument("--policy", action="append", help="a policy of the fleet file (compare: two or more)")
        p.add_argument("--out", type=writable_file, required=True, help="the result JSON")
        p.add_argument(
            "--reuse", action="store_true", help="the local target is up already: use it, leave it up"
        )
        if name == "compare":
            p.add_argument("--chart", type=_chart_path, required=True, help="PNG or SVG")


def product_line(p: dict[str, Any]) -> str:
    """The product's own instruments on the run (twin/product.py), one line: an instrument that could not be
    read says so by name, and what it read short is said after its figures."""
    if not p:
        return "product: not read"
    led, col = p["ledger"], p["collector"]
    window = p.get("window", {}).get("wall_seconds")
    parts = [f"product over {'?' if window is None else f'{window:.0f}'} wall s:"]
    if "error" in led:
        parts.append(f"ledger rules NOT READ ({led['error']});")
    else:
        missing = led["missing_inputs"]
        parts.append(f"ledger rules {led['installed_gpu_hours']:.1f} GPU-h installed, buckets sum "
                     f"{led['buckets_sum_percent']:.1f} % ({led['samples']} evaluations"
                     + (f"; inputs missing in the window or at some evaluations: {len(missing)}, the first: "
                        f"{missing[0].split(':')[0]}" if missing else "")
                     + ")" + "".join(f", INCOMPLETE: {x}" for x in led["incomplete"]) + ";")  # fmt: skip
    if "error" in col:
        parts.append(f"collector NOT READ ({col['error']})")
    else:
        cost = "unknown (unpriced records)" if col["cost_dollars"] is None else f"${col['cost_dollars']:.2f}"
        not_ok = ", ".join(f"{k} {v}" for k, v in col["statuses"].items() if k != "ok")
        idle = (f"unknown ({col['records_without_idle_cost']} records without an idle cost; statuses other than "
                f"ok: {not_ok or 'none'})" if col["idle_dollars"] is None else f"${col['idle_dollars']:.2f}")  # fmt: skip
        parts.append(f"collector {col['records']} records of {col['nodes']} nodes, cost {cost}, idle {idle}"
                     + "".join(f", INCOMPLETE: {x}" for x in col["incomplete"]))  # fmt: skip
    return " ".join(parts)


def _generate(args: argparse.Namespace) -> int:
    from twin import fleet as fleet_mod
    from twin.generate import TenantLoad, TraceTooLarge, generate
    from twin.trace import dump

    fleet = fleet_mod.load(args.fleet)
    per_tenant = dict(args.tenant_load)
    unknown = sorted(set(per_tenant) - {t.name for t in fleet.tenants})
    if unknown:
        raise UsageError(
            f"--tenant-load {unknown[0]}: not a tenant of {args.fleet} (it has {[t.name for t in fleet.tenants]})"
        )
    mean_gpus = sum(k * v for k, v in MEAN_GPUS.items())
    loads = []
    for t in fleet.tenants:
        proto = TenantLoad(
            t.name,
            1.0,
            training_median_s=args.training_median_h * 3600,
            serving_mean_s=args.serving_mean_h * 3600,
        )
        # a log-normal's mean is its median x exp(sigma^2 / 2): 1.65 at sigma 1
        mean_hours = (
            proto.serving_share * proto.serving_mean_s
            + (1 - proto.serving_share) * proto.training_median_s * 1.65
        ) / 3600
        load = per_tenant.get(t.name, args.load) * t.gpu_quota / (mean_gpus * mean_hours)
        loads.append(dataclasses.replace(proto, arrivals_per_hour=load))
    try:
        trace = generate(
            loads,
            horizon_s=args.hours * 3600,
            compression=args.compression,
            seed=args.seed,
            note=f"generated for {args.fleet.name} at load {args.load}"
            + "".join(f", {n} at {v}" for n, v in per_tenant.items()),
        )
    except TraceTooLarge as exc:
        raise UsageError(f"--hours {args.hours}: {exc}") from None
    dump(trace, args.out)
    print(
        f"{len(trace.jobs)} jobs over {args.hours} trace hours ({trace.wall(trace.horizon_s):.0f} wall s) -> {args.out}"
    )
    return 0


def _run_policies(args: argparse.Namespace, policies: list[str]) -> dict[str, dict[str, Any]]:
    from local.cluster.lifecycle import LocalCluster, LocalError
    from local.cluster.product import prometheus_url, store_path
    from twin import fleet as fleet_mod
    from twin import trace as trace_mod
    from twin.readout import readout
    from twin.replay import replay

    fleet, trace = fleet_mod.load(args.fleet), trace_mod.load(args.trace)
    for p in policies:
        if p not in fleet.policies:
            raise UsageError(f"--policy {p}: not a policy of {args.fleet} (it has {sorted(fleet.policies)})")
    # everything checked before the local target starts (minutes): the trace's tenants are the fleet's
    strangers = sorted(set(trace.tenants) - {t.name for t in fleet.tenants})
    if strangers:
        raise UsageError(
            f"--trace {args.trace}: tenants {strangers} are not in --fleet {args.fleet} (it has "
            f"{[t.name for t in fleet.tenants]}); generate the trace for this fleet (`gpu-finops twin generate`)"
        )
    cluster = LocalCluster(config=fleet.config())
    if not args.reuse:
        try:
            cluster.up(echo=lambda s: print(f"local up: {s}", flush=True))
        except LocalError as exc:
            cluster.down()
            raise CheckFailed(f"the local target did not come up: {exc}") from None
    results = {}
    try:
        for p in policies:
            results[p] = readout(replay(cluster.kube(), fleet, trace, p, echo=lambda s: print(s, flush=True),
                                        prometheus_url=prometheus_url(), store=f"sqlite:{store_path(cluster)}"))  # fmt: skip
    finally:
        if not args.reuse:
            cluster.down()
    return results


def run(args: argparse.Namespace) -> int:
    if args.action == "generate":
        return _generate(args)
    if args.action == "erlang-trace":
        from twin.generate import erlang_trace
        from twin.trace import dump

        t = erlang_trace(
            servers=args.servers,
            load=args.load,
            mean_service_s=args.mean_s,
            jobs=args.jobs,
            compression=args.compression,
            seed=args.seed,
        )
        dump(t, args.out)
        print(f"{len(t.jobs)} jobs, {t.note} -> {args.out}")
        return 0
    policies = args.policy or (["shipped"] if args.action == "run" else [])
    twice = sorted({p for p in policies if policies.count(p) > 1})
    if twice:
        raise UsageError(f"--policy: {', '.join(twice)} given twice; compare each policy once")
    if args.action == "compare" and len(policies) < 2:
        raise UsageError(f"--policy: compare needs two or more policies, got {policies}")
    if args.action == "run" and len(policies) != 1:
        raise UsageError(f"--policy: run takes one policy, got {policies}")
    results = _run_policies(args, policies)
    if args.action == "run":
        out = results[policies[0]]
    else:
        from twin.compare import chart, delta_lines, deltas

        out = {"results": results, "deltas": deltas(results)}
        chart(results, args.chart)
        print(f"chart -> {args.chart}")
        print("\n".join(delta_lines(out["deltas"])))
    write_output(args.out, json.dumps(out, indent=2, default=str), "--out")  # checked before the run
    for name, r in results.items():
        for t, f in r["tenants"].items():
            p95 = f["wait_p95_s"]
            print(
                f"{name:>12} {t:>10}: admitted {f['admitted']}/{f['jobs']}, preempted {f['preempted']}, "
                f"wait p95 {'-' if p95 is None else f'{p95 / 3600:.2f} h'}"
            )
        led = r["ledger"]
        print(
            f"{name:>12} ledger: {led['installed_gpu_hours']:.1f} GPU-h installed, buckets sum "
            f"{led['buckets_sum_percent']:.1f} %, idle ${led['idle_dollars']:.2f}, stranded peak {led['stranded_gpus_peak']}"
        )
        print(f"{name:>12} {product_line(r['product'])}")
    print(f"-> {args.out}")
    return 0
