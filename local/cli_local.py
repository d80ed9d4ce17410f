"""`gpu-finops local up|down|status|env|build|validate-charts`: the rehearsal cluster on this machine, the
product's settings for it (`env`), and the
check `make up` runs before any apply: the synthesized releases rendered by the pinned charts and dry-run on
a throwaway API server built from the same binaries."""

from __future__ import annotations

import argparse

from gpu_finops.facts.errors import UsageError
from local.cluster.lifecycle import LocalCluster, LocalError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["up", "down", "status", "env", "build", "validate-charts"])
    parser.add_argument(
        "--outdir", default="cdktf.out", help="validate-charts: the synth folder (default cdktf.out)"
    )
    parser.add_argument(
        "--no-synth", action="store_true", help="validate-charts: validate what is already synthesized there"
    )
    parser.epilog = (
        'env: the product\'s settings for this target, as shell exports: `eval "$(gpu-finops local env)"`; '
        "exit 0 done (status: every process running; validate-charts: nothing rejected); 1 a component "
        "failed (its log tail is printed) or an object was rejected (kind/name, field, the server's message)"
    )


def validate_charts(outdir: str, synthesize: bool) -> int:
    from pathlib import Path

    from gpu_finops.facts.config import load_config
    from local.charts.validate_charts import ValidationError, validate

    if not synthesize and not Path(outdir).is_dir():  # before anything is built or started
        raise UsageError(
            f"--outdir {outdir}: no synthesized stacks there (not a directory); drop --no-synth to make them"
        )
    c = load_config()
    if synthesize:
        from infra.app import synth

        synth(c, outdir)
    try:
        report = validate(c, Path(outdir))
    except ValidationError as exc:
        print(f"validate-charts: could not run the validation: {exc}")
        return 1
    print(report.summary())
    return 0 if report.ok else 1


def interrupted(args: argparse.Namespace) -> str:
    if args.action == "up":
        return "interrupted; some components may be running: `gpu-finops local down` stops what started"
    return f"interrupted; local {args.action} stopped partway: run it again"


def run(args: argparse.Namespace) -> int:
    if args.action == "validate-charts":
        return validate_charts(args.outdir, not args.no_synth)
    cluster = LocalCluster()
    if args.action == "build":
        from local.build.binaries import build_all

        print(build_all())
        return 0
    if args.action == "up":
        try:
            cluster.up()
        except LocalError as exc:
            print(
                f"local up failed: {exc}\nlogs: {cluster.run_dir / 'logs'}; `gpu-finops local down` stops what started"
            )
            return 1
        return 0
    if args.action == "env":
        from local.cluster import product

        print(product.exports(cluster))
        return 0
    if args.action == "down":
        stopped = cluster.down()
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
        return 0
    status = cluster.status()
    for name, alive in status.items():
        print(f"  {name:24} {'running' if alive else 'STOPPED'}")
    if not status:
        print("local target is not up")
    return 0 if status and all(status.values()) else 1
