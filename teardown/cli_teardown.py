"""`gpu-finops teardown {plan,destroy,verify,resume}`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from facts import arguments
from facts.errors import CONTRACT
from facts.names import PROJECT, TAG_PROJECT
from teardown.engine import (
    AccountNotAllowed,
    Outcome,
    check_account,
    destroy,
    guard_plan,
    inventory,
    why_left,
)
from teardown.journal import Journal
from teardown.model import Context, Resource, TeardownConfig

EXIT_CODES = f"""exit codes:
  0  plan: printed; destroy/resume: everything deleted and verify found the account empty;
     verify: nothing of ours is left
  1  something of ours is left (a table says what, its state and why it is likely there)
  2  refused: account not on the allowlist, a bad argument (--cluster, --wait, an unwritable --journal)
  3  AWS unreachable or refusing us: no credentials, no endpoint, access denied (nothing more deleted)
  130  interrupted: destroy/resume say how to finish (`gpu-finops teardown resume`, make resume)

{CONTRACT}"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EXIT_CODES
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    helps = {
        "plan": "list what would be deleted, in order (a dry run; deletes nothing)",
        "destroy": "delete everything of ours in dependency order, then verify",
        "verify": "list every resource type; exit 0 only when nothing of ours is left",
        "resume": "finish a teardown that died partway, from the account itself and the journal",
    }
    for name, text in helps.items():
        p = sub.add_parser(
            name,
            help=text,
            description=text,
            epilog=EXIT_CODES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument(
            "--region",
            type=arguments.region,
            default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
        )
        p.add_argument(
            "--cluster",
            type=arguments.cluster_name,
            default=os.environ.get("GPU_FINOPS_CLUSTER", PROJECT),
            help="cluster name: the tags Karpenter and the VPC CNI set, and our name prefix",
        )
        p.add_argument(
            "--project", type=arguments.non_empty, default=PROJECT, help=f"value of the {TAG_PROJECT} tag"
        )
        p.add_argument(
            "--allow-account",
            action="append",
            default=None,
            help="an account id teardown may touch (repeat; default $GPU_FINOPS_ALLOWED_ACCOUNTS)",
        )
        p.add_argument(
            "--journal", type=arguments.writable_file, default=Path("reports/teardown-journal.jsonl")
        )
        p.add_argument("--report", type=arguments.writable_file, default=Path("reports/teardown-report.json"))
        p.add_argument(
            "--wait",
            type=arguments.number(0),
            default=None,
            help="seconds to wait for each deletion (default: per type)",
        )


def _config(args: argparse.Namespace) -> TeardownConfig:
    allowed = args.allow_account or [
        a for a in os.environ.get("GPU_FINOPS_ALLOWED_ACCOUNTS", "").split(",") if a
    ]
    return TeardownConfig(
        region=args.region, cluster_name=args.cluster, project=args.project, allowed_accounts=tuple(allowed)
    )


def _table(title: str, resources: list[Resource], with_why: bool = False) -> Table:
    t = Table(title=title)
    for col in ("#", "type", "id", "name", "state", "ours by") + (("likely why",) if with_why else ()):
        t.add_column(col)
    for i, r in enumerate(resources, 1):
        row = [str(i), r.type, r.id, r.name or "", r.state, r.owned_by]
        if with_why:
            row.append(why_left(r))
        t.add_row(*row)
    return t


def _write_report(path: Path, **data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str))


def _verify(ctx: Context, console: Console, args: argparse.Namespace, outcome: Outcome | None = None) -> int:
    left = inventory(ctx)
    report = {
        "action": args.action,
        "account": ctx.account(),
        "region": ctx.config.region,
        "left": [r.to_dict() for r in left],
        "api_calls": ctx.api_calls,
    }
    if outcome is not None:
        report.update(
            deleted=[r.key for r in outcome.deleted], failed=[[r.key, e] for r, e in outcome.failed]
        )
    _write_report(args.report, **report)
    if left:
        console.print(_table(f"NOT EMPTY: {len(left)} resource(s) of ours left", left, with_why=True))
        console.print(
            f"report: {args.report}; run `gpu-finops teardown resume` after fixing what blocks them"
        )
        return 1
    console.print(
        f"[green]verified empty[/green]: no resource of {ctx.config.project}/{ctx.config.cluster_name} "
        f"left in {ctx.config.region} ({ctx.api_calls} API calls); report: {args.report}"
    )
    return 0


def interrupted(args: argparse.Namespace) -> str:
    """Where Ctrl-C leaves a teardown, and how to finish it (gpu_finops/cli.py prints it, exit 130)."""
    if args.action in ("destroy", "resume"):
        return (
            f"interrupted; run `gpu-finops teardown resume` (make resume) to finish: the journal {args.journal} "
            "records what was deleted, and resume re-lists the account"
        )
    return f"interrupted; teardown {args.action} deletes nothing: run it again"


def run(args: argparse.Namespace) -> int:
    console = Console(width=None if sys.stdout.isatty() else 200, soft_wrap=True)
    ctx = Context(_config(args))
    try:
        account = check_account(ctx)
    except AccountNotAllowed as exc:
        Console(stderr=True, soft_wrap=True).print(f"[red]refused[/red]: {exc}")
        return 2
    # No credentials, no endpoint, access denied: exit 3, one line naming the call (gpu_finops/failures.py).
    journal = Journal(args.journal)
    if args.action == "verify":
        return _verify(ctx, console, args)
    plan = inventory(ctx)
    console.print(
        _table(
            f"teardown plan for account {account}, {ctx.config.region}: {len(plan)} resource(s), "
            "in deletion order",
            plan,
        )
    )
    if args.action == "plan":
        _write_report(args.report, action="plan", account=account, plan=[r.to_dict() for r in plan])
        return 0
    if args.action == "resume":
        earlier = journal.last_plan()
        done = journal.deleted()
        new = [r.key for r in plan if earlier and r.key not in {e.key for e in earlier}]
        console.print(
            f"journal {args.journal}: earlier plan {len(earlier)} resource(s), {len(done)} recorded deleted, "
            f"{'finished' if journal.finished() else 'did not finish'}; "
            f"{len(new)} found now that the earlier plan did not list"
        )
    guard_plan(plan, plan)
    journal.write("plan", phase=args.action, resources=[r.to_dict() for r in plan])
    wait_kwargs = {"wait_for": args.wait} if args.wait is not None else {}
    outcome = destroy(
        ctx,
        plan,
        journal,
        phase=args.action,
        progress=lambda r, what: console.print(f"  {what:9} {r.key}"),
        **wait_kwargs,
    )
    for r, err in outcome.failed:
        console.print(f"[red]failed[/red] {r.key}: {err}")
    code = _verify(ctx, console, args, outcome)
    return code if outcome.ok else 1
