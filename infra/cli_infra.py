"""`gpu-finops infra {synth,preflight,up,destroy}`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpu_finops.facts import arguments
from gpu_finops.facts.config import load_config
from gpu_finops.facts.names import CI_ROLE_STACK, CLUSTER_STACKS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["synth", "preflight", "up", "destroy"])
    parser.add_argument("--config", default=None, help="config YAML (default gpu_finops/facts/config.yaml)")
    parser.add_argument("--outdir", type=Path, default=Path("cdktf.out"))
    parser.add_argument(
        "--account",
        type=arguments.account_id,
        default=None,
        help="synth: the account whose state bucket the stacks use (state_backend s3; default: the one "
        "account in allowed_accounts)",
    )
    parser.add_argument(
        "--through",
        choices=CLUSTER_STACKS,
        default=CLUSTER_STACKS[-1],
        help="up: apply the stacks in order up to and including this one (default: all)",
    )
    parser.epilog = (
        "exit 0 done; 1 a Terraform step failed; 2 preflight or configuration refused (nothing applied); "
        "3 AWS unreachable or refusing us; 130 interrupted (a line says how to finish)"
    )


def interrupted(args: argparse.Namespace) -> str:
    if args.action == "up":
        return (
            "interrupted; a stack may be partly applied (its state is in the state directory): run `make up` "
            "again to finish, or `make destroy` then `make resume` to remove it"
        )
    if args.action == "destroy":
        return "interrupted; run `make destroy` again, then `make resume` (teardown resume) to finish"
    return "interrupted; nothing was applied: run it again"


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)  # a ConfigError is exit 2, one line (gpu_finops/cli.py)
    if args.action == "synth":
        from infra.app import STACKS, synth

        out = synth(config, args.outdir, args.account)
        for stack in STACKS:
            print(f"synthesized {out / 'stacks' / stack / 'cdk.tf.json'}")
        if config.github_repository:
            print(
                f"synthesized {out / 'stacks' / CI_ROLE_STACK / 'cdk.tf.json'} (apply once, as an administrator)"
            )
        else:
            print(
                "ci-role stack not synthesized: set github_repository in gpu_finops/facts/config.yaml (docs/runbook.md)"
            )
        return 0
    import boto3

    if args.action == "preflight":  # the checks alone: no CDK load
        from infra.preflight import Preflight, report

        checks = Preflight(config, boto3.Session(region_name=config.region)).run()
        if report(checks):
            return 0
        missing = [c.name for c in checks if not c.ok]
        print(f"preflight: {len(missing)} of {len(checks)} checks missing ({', '.join(missing)}): fix them as the list "
              "above says, then run it again", file=sys.stderr)  # fmt: skip
        return 2
    from infra.deploy import DeployError, destroy, up

    try:
        return up(config, args.outdir, args.through) if args.action == "up" else destroy(config, args.outdir)
    except DeployError as exc:
        print(f"failed: {exc}")
        return 1
