"""`gpu-finops teardown {begin,plan,destroy,verify,resume}`: `begin` records that a run starts, before it creates
anything; the others plan, destroy, verify the account empty and resume a teardown that died."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpu_finops.facts import arguments
from gpu_finops.facts.config import CONFIG_ENV, ConfigError, load_config
from gpu_finops.facts.errors import CONTRACT, excerpt, printable
from gpu_finops.facts.names import RUN_RECORD_OBJECT, TAG_PROJECT, state_bucket
from gpu_finops.facts.private_files import write_private
from teardown.engine import (
    AccountNotAllowed,
    GuardViolation,
    Outcome,
    Survey,
    check_account,
    destroy,
    survey,
    why_left,
)
from teardown.journal import Journal, JournalError
from teardown.model import Context, Resource, TeardownConfig
from teardown.provenance import (
    EvidenceError,
    Sources,
    UnfinishedTeardown,
    check_local_evidence,
    end_run,
    mark_teardown,
    run_record_path,
    run_started,
    write_run_record,
)
from teardown.remote import Remote, RemoteEvidenceError
from teardown.reviewed import PlanFileError, check_reviewed, read_plan, write_plan

EXIT_CODES = f"""exit codes:
  0  plan: printed; destroy/resume: everything deleted and verify found the account empty;
     verify: nothing of ours is left
  1  something of ours is left (a table says what, its state and why it is likely there)
  2  refused: account not on the allowlist, a bad config or argument (--cluster, --wait, an unwritable
     --journal), evidence that does not read (run record, state, journal; with state_backend s3, no state
     bucket), a --plan that does not hold what would be deleted, no confirmation (destroy and resume
     ask for the account id unless --yes; without a terminal they need --yes)
  3  AWS unreachable or refusing us: no credentials, no endpoint, access denied (nothing more deleted)
  130  interrupted: destroy/resume say how to finish (`gpu-finops teardown resume`, make resume)

{CONTRACT}"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EXIT_CODES
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    helps = {
        "begin": "record that a run begins now (make up does, before anything is created): what this run "
        "creates and tags as ours is then provably ours",
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
            default=None,
            help=f"overrides the config's region (${CONFIG_ENV})",
        )
        p.add_argument(
            "--cluster",
            type=arguments.cluster_name,
            default=None,
            help="overrides the config's cluster_name: the tags Karpenter and the VPC CNI set",
        )
        p.add_argument(
            "--project",
            type=arguments.non_empty,
            default=None,
            help=f"overrides the config's project ({TAG_PROJECT} tag)",
        )
        p.add_argument(
            "--allow-account",
            action="append",
            default=None,
            help="an account id teardown may touch (repeat; default $GPU_FINOPS_ALLOWED_ACCOUNTS, "
            "else the config's allowed_accounts)",
        )
        # defaults as text: argparse runs `type` on a text default, so the default paths are checked too
        p.add_argument("--journal", type=arguments.writable_file, default="reports/teardown-journal.jsonl")
        p.add_argument("--report", type=arguments.writable_file, default="reports/teardown-report.json")
        p.add_argument(
            "--run-record",
            type=arguments.writable_file,
            default=None,
            help="the run record `teardown begin` writes (default reports/teardown-run-CLUSTER.json): a "
            "resource tagged as ours and created after its start is ours (docs/teardown.md, provenance)",
        )
        p.add_argument(
            "--state-dir",
            type=Path,
            default=None,
            help="infra's Terraform state directory (default: the config's state_dir): a resource tagged as "
            "ours and in that state is ours",
        )
        p.add_argument(
            "--wait",
            type=arguments.number(0),
            default=None,
            help="seconds to wait for each deletion (default: per type)",
        )
        if name == "plan":
            p.add_argument(
                "--out",
                type=arguments.writable_file,
                help="write the plan (account, region, cluster, resources) to review",
            )
        if name in ("destroy", "resume"):
            p.add_argument(
                "--plan",
                type=Path,
                help="a plan written by `teardown plan --out`: refuse to delete anything not in it, and a "
                "plan for another account, region or cluster",
            )
            p.add_argument(
                "--yes", action="store_true", help="do not ask for the account id (non-interactive runs)"
            )


def _config(args: argparse.Namespace) -> TeardownConfig:
    """The config `infra` uses ($GPU_FINOPS_CONFIG or gpu_finops/facts/config.yaml); flags override it."""
    allowed = args.allow_account or [  # each entry exactly an id: "1111, 2222" is refused, not guessed at
        a for a in os.environ.get("GPU_FINOPS_ALLOWED_ACCOUNTS", "").split(",") if a
    ]
    return TeardownConfig.from_config(
        load_config(),
        region=args.region,
        cluster_name=args.cluster,
        project=args.project,
        allowed_accounts=tuple(allowed) or None,
    )


def _offline_checks(args: argparse.Namespace, config: TeardownConfig, sources: Sources) -> str | None:
    """What teardown can check without AWS, so a local mistake is exit 2 before the first call (STS): the
    allowlist and the evidence on this machine. Why not, or None. (Whether destroy must ask for the account
    id depends on what the account holds: with nothing to delete it asks nothing, so a missing terminal is
    found after the listing.)"""
    if not config.allowed_accounts:
        return (
            "no account allowlist configured: refusing to touch any account. Set --allow-account ACCOUNT (or "
            "GPU_FINOPS_ALLOWED_ACCOUNTS) to the sandbox's id"
        )
    bad = [a for a in config.allowed_accounts if not re.fullmatch(r"[0-9]{12}", a)]
    if bad:
        return (
            f"account allowlist: {excerpt(bad, 80)} is not an AWS account id (12 digits; "
            "GPU_FINOPS_ALLOWED_ACCOUNTS is ids separated by commas, no spaces)"
        )
    try:
        check_local_evidence(sources, config.region, record=config.state_backend == "local")
    except EvidenceError as exc:
        return str(exc)
    return None


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
    write_private(path, json.dumps(data, indent=2, default=str).encode())  # account and resource ids: 0600


def _aside(console: Console, found: Survey) -> None:
    """What is never deleted: lookalikes by name (our kind of name, none of our tags), resources tagged as
    ours that nothing proves ours, and ours that counts as gone."""
    if found.named_only:
        t = Table(title=f"named like ours, none of our tags: {len(found.named_only)} (left alone)")
        for col in ("type", "id", "state", "why it is not ours"):
            t.add_column(col)
        for r in found.named_only:
            t.add_row(r.type, r.id, r.state, r.lookalike)
        console.print(t)
    if found.unproven:
        t = Table(title=f"tagged as ours, not proven ours: {len(found.unproven)} (never deleted by teardown)")
        for col in ("type", "id", "state", "why it is not proven"):
            t.add_column(col)
        for r in found.unproven:
            t.add_row(r.type, r.id, r.state, r.lookalike)
        console.print(t)
        console.print(UNPROVEN_ADVICE)
    for r in found.gone:
        when = r.details.get("deletion_date") or "when its window ends"
        console.print(f"  counts as gone: {r.key} is {r.state} (AWS deletes it {when}); nothing left to do")


UNPROVEN_ADVICE = (
    "  each may be a leftover of ours whose state, run record or journal was lost with its runner, or "
    "someone else's resource given our tag: check each by hand (its creator in CloudTrail, its creation "
    "time), then delete it yourself, or remove our tag from it if it is not ours; verify stays red until "
    'none is left (docs/teardown.md, "Verify")'
)


def _verify(ctx: Context, console: Console, args: argparse.Namespace, outcome: Outcome | None = None) -> int:
    found = survey(ctx)
    left = found.ours
    report = {
        "action": args.action,
        "account": ctx.account(),
        "region": ctx.config.region,
        "cluster": ctx.config.cluster_name,
        "left": [r.to_dict() for r in left],
        "unproven": [r.to_dict() for r in found.unproven],
        "counts_as_gone": [r.to_dict() for r in found.gone],
        "looks_like_ours": [r.to_dict() for r in found.lookalikes],
        "api_calls": ctx.api_calls,
    }
    if outcome is not None:
        report.update(
            deleted=[r.key for r in outcome.deleted], failed=[[r.key, e] for r, e in outcome.failed]
        )
    _write_report(args.report, **report)
    _aside(console, found)
    if left:
        console.print(_table(f"NOT EMPTY: {len(left)} resource(s) of ours left", left, with_why=True))
        console.print(
            f"report: {args.report}; run `gpu-finops teardown resume` after fixing what blocks them"
        )
        return 1
    if found.unproven:
        console.print(
            f"NOT EMPTY: {len(found.unproven)} resource(s) tagged as ours that nothing proves ours are left "
            f"in {ctx.config.region} (listed above; teardown never deletes them); report: {args.report}"
        )
        return 1
    console.print(
        Text.assemble(
            ("verified empty", "green"),
            f": no resource of {ctx.config.project}/{ctx.config.cluster_name} "
            f"left in {ctx.config.region} ({ctx.api_calls} API calls"
            f"{f', {len(found.gone)} counting as gone' if found.gone else ''}"
            f"{f', {len(found.named_only)} named like ours left alone' if found.named_only else ''}); "
            f"report: {args.report}",
        )
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


def _stderr() -> Console:
    """Teardown's stderr: markup off, as its stdout (what it prints comes from outside)."""
    return Console(stderr=True, soft_wrap=True, markup=False)


def _refuse(message: str) -> int:
    _stderr().print(Text.assemble(("refused", "red"), f": {printable(message)}"), highlight=False)
    return 2


def _confirm(console: Console, account: str, count: int) -> str | None:
    """aws-nuke's habit: the operator types the account id. None when confirmed, else why not."""
    if not sys.stdin.isatty():
        return (
            "destroy asks for the account id, and stdin is not a terminal: pass --yes (after reviewing "
            "`gpu-finops teardown plan --out FILE`; add --plan FILE to hold destroy to it) or run interactively"
        )
    console.print(f"Type the account id ({account}) to delete these {count} resource(s): ", end="")
    typed = sys.stdin.readline().strip()
    if typed != account:
        return f"typed {typed!r}, not the account id {account}: nothing deleted"
    return None


def run(args: argparse.Namespace) -> int:
    # markup off: ids, names, tags and messages come from the account and the bucket, and `[/x]` in a
    # tag must print as itself, not end the run as rich markup (styles are given as Text instead)
    console = Console(width=None if sys.stdout.isatty() else 200, soft_wrap=True, markup=False)
    try:
        config = _config(args)
    except ConfigError as exc:
        return _refuse(f"{exc} (config file: ${CONFIG_ENV} or gpu_finops/facts/config.yaml)")
    # The offline checks first: a bad --plan file is a usage error (2) before the first AWS call.
    args.reviewed = None
    if getattr(args, "plan", None) is not None:
        try:
            args.reviewed = read_plan(args.plan)
        except PlanFileError as exc:
            return _refuse(str(exc))
    if args.run_record is None:  # the default depends on the cluster: checked as the flag would be
        try:
            args.run_record = arguments.writable_file(str(run_record_path(config.cluster_name)))
        except argparse.ArgumentTypeError as exc:
            return _refuse(f"--run-record (default): {exc}")
    sources = Sources(args.state_dir or Path(config.state_dir), args.run_record, args.journal)
    problem = _offline_checks(args, config, sources)
    if problem is not None:
        return _refuse(problem)
    ctx = Context(config, sources=sources)
    try:
        account = check_account(ctx)
    except AccountNotAllowed as exc:
        return _refuse(str(exc))
    if config.state_backend == "s3":  # the evidence a lost runner would have taken with it
        c = config
        remote = Remote(
            ctx.client("s3"), state_bucket(c.cluster_name, account), account, c.region, c.cluster_name
        )
        ctx.sources = replace(sources, remote=remote)
    try:
        return _act(ctx, console, args, account)
    except (EvidenceError, JournalError, RemoteEvidenceError) as exc:
        return _refuse(str(exc))


def _begin(ctx: Context, console: Console, args: argparse.Namespace, account: str) -> int:
    if run_started(args.run_record, ctx.sources.remote) is None:  # a new run: nothing of an earlier one may
        # be left, proven or not
        found = survey(ctx)
        if found.ours or found.unproven:
            if found.ours:
                console.print(
                    _table(f"left of an earlier run: {len(found.ours)} resource(s) of ours", found.ours)
                )
            _aside(console, found)
            _stderr().print(
                Text.assemble(
                    ("not begun", "red"),
                    f": {len(found.ours)} resource(s) of ours and {len(found.unproven)} tagged as "
                    f"ours but unproven are left in {ctx.config.region} (listed above); run `make resume` "
                    "(gpu-finops teardown resume) and resolve what its verify lists before a new run begins",
                ),
                highlight=False,
            )
            return 1
    try:
        started, written = write_run_record(
            args.run_record,
            account,
            ctx.config.region,
            ctx.config.cluster_name,
            datetime.now(UTC),
            ctx.sources.remote,
        )
    except UnfinishedTeardown as exc:
        _stderr().print(Text.assemble(("not begun", "red"), f": {printable(str(exc))}"), highlight=False)
        return 1
    remote = ctx.sources.remote
    also = f" and {remote.uri(RUN_RECORD_OBJECT)}" if remote is not None else ""
    console.print(
        f"run record {args.run_record}{also}: {'this run began' if written else 'kept: the run began'} {started}; "
        "teardown deletes what carries our tag and was created since, is in our Terraform state "
        f"({ctx.sources.where()}) or our journal, or lies inside one of those"
    )
    return 0


def _act(ctx: Context, console: Console, args: argparse.Namespace, account: str) -> int:
    if args.action == "begin":
        return _begin(ctx, console, args, account)
    # No credentials, no endpoint, access denied: exit 3, one line naming the call (gpu_finops/failures.py).
    reviewed = args.reviewed  # read in run(), before the first AWS call
    journal = Journal(args.journal, ctx.sources.remote)
    if args.action == "verify":
        return _verify(ctx, console, args)
    found = survey(ctx)
    plan = found.ours
    console.print(
        _table(
            f"teardown plan for account {account}, {ctx.config.region}, cluster {ctx.config.cluster_name}: "
            f"{len(plan)} resource(s), in deletion order",
            plan,
        )
    )
    _aside(console, found)
    if args.action == "plan":
        _write_report(args.report, action="plan", account=account, plan=[r.to_dict() for r in plan])
        if args.out:
            write_plan(args.out, account, ctx.config.region, ctx.config.cluster_name, found)
            console.print(
                f"plan written to {args.out}: review it, then `gpu-finops teardown destroy --plan {args.out}`"
            )
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
    if reviewed is not None:
        try:
            check_reviewed(reviewed, account, ctx.config.region, ctx.config.cluster_name, plan)
        except GuardViolation as exc:
            return _refuse(str(exc))
        console.print(f"every resource above is in the reviewed plan {args.plan}")
    if plan and not args.yes:
        refused = _confirm(console, account, len(plan))
        if refused:
            return _refuse(refused)
    # from now on nothing created is this run's (teardown.provenance.mark_teardown), and `begin` refuses
    # to carry the run's start over to a next one until a teardown verifies empty
    mark_teardown(args.run_record, datetime.now(UTC), ctx.sources.remote)
    # where this plan holds: a journal entry proves nothing for another account or region
    journal.write(
        "plan",
        phase=args.action,
        account=account,
        region=ctx.config.region,
        cluster=ctx.config.cluster_name,
        run=run_started(args.run_record, ctx.sources.remote),
        resources=[r.to_dict() for r in plan],
    )
    wait_kwargs = {"wait_for": args.wait} if args.wait is not None else {}
    outcome = destroy(
        ctx,
        plan,
        journal,
        phase=args.action,
        progress=lambda r, what: console.print(f"  {what:9} {r.key}"),
        reviewed=reviewed.keys if reviewed is not None else None,
        **wait_kwargs,
    )
    for r, err in outcome.failed:
        console.print(Text.assemble(("failed", "red"), f" {r.key}: {err}"))
    code = _verify(ctx, console, args, outcome)
    if code == 0 and outcome.ok:
        _end_run(console, args.run_record, ctx.sources.remote)
    return code if outcome.ok else 1


def _end_run(console: Console, record: Path, remote: Remote | None) -> None:
    """A destroy verified empty ends the run: its record goes (here and in the state bucket), so "created
    after this run began" means after the *next* `teardown begin`, not after the first run ever. A destroy
    that leaves something keeps it: the next run's `begin` then keeps the earlier start, and what is left
    stays provable."""
    for where in end_run(record, remote):
        console.print(f"run record {where} removed: this run has ended (the next `make up` begins a new one)")
