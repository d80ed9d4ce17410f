"""`gpu-finops guard estimate` (print the ceiling, refuse over budget, start the deadline) and
`gpu-finops guard run -- CMD` (run CMD, stopping it at the deadline so teardown keeps its time)."""

from __future__ import annotations

import argparse
import json
import os
import textwrap
from pathlib import Path

from gpu_finops.facts import arguments, timeouts
from gpu_finops.facts.config import load_config
from gpu_finops.facts.errors import CONTRACT, CheckFailed, UsageError
from gpu_finops.facts.private_files import write_private
from nightly.guard import (
    DEFAULT_MAX_HOURS,
    DEFAULT_TEARDOWN_RESERVE_MINUTES,
    EXIT_OVER_BUDGET,
    MAX_RUN_HOURS,
    SYSTEM_ON_DEMAND_USD_H,
    Deadline,
    GuardError,
    estimate,
    render,
    run_until,
)

DEFAULT_DEADLINE_FILE = Path("reports/guard-deadline.json")
EPILOG = (
    textwrap.fill(
        "exit codes: 0 within budget (estimate) or the command's own code (run); "
        f"{EXIT_OVER_BUDGET} the ceiling is over --budget-usd (nothing started); 2 guard or configuration "
        "error (no price, no deadline file or a bad one, a bad number); 124 the command was stopped at "
        "the deadline; 130, 143, 129 the guard got SIGINT, SIGTERM, SIGHUP, passed it to the command's "
        "whole process group and waited for the group to end.",
        width=100,
    )
    + "\n\n"
    + CONTRACT
)


POSITIVE = arguments.number(0, above=True)
HOURS = arguments.number(0, above=True, maximum=MAX_RUN_HOURS)  # F13/F14: never a deadline switched off
GRACE = arguments.number(0, maximum=3600)  # seconds: a grace of 1e300 would be no SIGKILL at all


def _env_float(name: str, default: float | None, parse=None) -> float | None:
    raw = os.environ.get(name)
    if raw is None:
        return default
    if not raw.strip():  # set but empty: a workflow whose input went missing, not "no budget"
        raise UsageError(f"${name} is set but empty; unset it or give a number")
    try:
        return (parse or POSITIVE)(raw)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"${name}: {exc}; unset it or fix it") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    est = sub.add_parser("estimate", help="print the cost ceiling of one run; refuse when over budget")
    est.add_argument("--config", default=None, help="config YAML (default gpu_finops/facts/config.yaml)")
    est.add_argument(
        "--max-hours",
        type=HOURS,
        default=_env_float("GPU_FINOPS_MAX_HOURS", DEFAULT_MAX_HOURS, HOURS),
        help="wall time of the whole run, teardown included (default $GPU_FINOPS_MAX_HOURS or %(default)s)",
    )
    est.add_argument(
        "--budget-usd",
        type=arguments.number(0),
        default=_env_float("GPU_FINOPS_BUDGET_USD", None),
        help="refuse to start when the ceiling is above this (default $GPU_FINOPS_BUDGET_USD; none: print only)",
    )
    est.add_argument(
        "--teardown-reserve-minutes",
        type=arguments.number(0, maximum=MAX_RUN_HOURS * 60),
        default=DEFAULT_TEARDOWN_RESERVE_MINUTES,
        help="the end of the wall time kept for destroy, resume and verify (default %(default)s)",
    )
    est.add_argument(
        "--job-timeout-minutes",
        type=POSITIVE,
        default=_env_float("GPU_FINOPS_JOB_TIMEOUT_MINUTES", None),
        help="the CI job's own timeout; a longer --max-hours is refused (default $GPU_FINOPS_JOB_TIMEOUT_MINUTES)",
    )
    est.add_argument(
        "--rates",
        choices=["aws", "catalog"],
        default="aws",
        help="aws: the Pricing API (needs credentials); catalog: the built-in offline list prices",
    )
    est.add_argument(
        "--deadline-file",
        type=arguments.writable_file,
        default=None,
        help="start the run's clock: write the deadline here",
    )
    est.add_argument(
        "--json", type=arguments.writable_file, default=None, help="also write the estimate as JSON"
    )
    est.add_argument(
        "--start",
        type=arguments.aware_time,  # a zone required, extreme years refused
        default=None,
        help="when the run starts, ISO 8601 with a zone (default: now); prices the EKS control plane "
        "by the version's support window on that day",
    )
    run = sub.add_parser("run", help="run a command; stop it at the deadline so teardown keeps its time")
    run.add_argument("--deadline-file", type=Path, default=DEFAULT_DEADLINE_FILE)
    run.add_argument(
        "--grace-seconds",
        type=GRACE,
        default=timeouts.GUARD_DEADLINE_GRACE,
        help="at the deadline: SIGTERM to SIGKILL of the command's group (default %(default)s)",
    )
    run.add_argument(
        "--signal-grace-seconds",
        type=GRACE,
        default=timeouts.GUARD_SIGNAL_GRACE,
        help="after SIGINT/SIGTERM/SIGHUP, passed on to the command's group: until SIGKILL (default "
        "%(default)s, inside the runner's 7.5 s between a cancel's SIGINT and its SIGTERM)",
    )
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")


def _price_source(kind: str, region: str):
    if kind == "catalog":
        from gpu_finops.facts.catalog import ON_DEMAND, prices

        listed = {t: usd for (t, capacity), usd in prices().items() if capacity == ON_DEMAND}
        listed.update(SYSTEM_ON_DEMAND_USD_H)

        def offline(instance_type: str) -> float:
            if instance_type not in listed:
                raise GuardError(f"not in the offline list {sorted(listed)}")
            return listed[instance_type]

        return offline
    import boto3

    from gpu_finops.cost.rates import PRICING_REGION, OnDemandPrices

    prices = OnDemandPrices(boto3.client("pricing", region_name=PRICING_REGION))
    return lambda instance_type: prices.get(instance_type, region).usd_per_hour


def run(args: argparse.Namespace) -> int:
    """GuardError and ConfigError end as exit 2 with their one line (gpu_finops/cli.py)."""
    if args.action == "run":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command:
            raise UsageError("guard run: nothing to run; usage: gpu-finops guard run -- make up")
        return run_until(
            Deadline.read(args.deadline_file),
            command,
            grace_seconds=args.grace_seconds,
            signal_grace_seconds=args.signal_grace_seconds,
        )
    if args.teardown_reserve_minutes >= args.max_hours * 60:
        raise GuardError(
            f"--teardown-reserve-minutes {args.teardown_reserve_minutes:g} leaves nothing of --max-hours "
            f"{args.max_hours:g} for up and the acts; lower the reserve or raise --max-hours"
        )
    if args.job_timeout_minutes is not None and args.max_hours * 60 > args.job_timeout_minutes:
        raise GuardError(
            f"--max-hours {args.max_hours:g} is longer than the job's timeout of "
            f"{args.job_timeout_minutes:g} min: the runner would kill teardown; lower it"
        )
    config = load_config(args.config)
    e = estimate(
        config,
        _price_source(args.rates, config.region),
        max_hours=args.max_hours,
        budget_usd=args.budget_usd,
        start=args.start,
    )
    print(render(e), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_private(args.json, json.dumps(e.to_dict(), indent=2).encode())  # never a FIFO
    if not e.within_budget:
        raise CheckFailed(
            f"cost guard: refusing to start: the ceiling ${e.usd:.2f} is over the budget "
            f"${e.budget_usd:.2f}; lower --max-hours (at ${e.usd_per_hour:.2f}/h), lower "
            "the tenants' quotas in gpu_finops/facts/config.yaml (each card is a node), or raise the budget"
        )
    if args.deadline_file:
        d = Deadline.start(args.max_hours, args.teardown_reserve_minutes)
        d.write(args.deadline_file)
        print(
            f"cost guard: up and acts must finish within {(d.at - d.started) / 60:.0f} min "
            f"(deadline in {args.deadline_file}); the last {d.teardown_reserve_minutes:g} min are teardown's"
        )
    return 0
