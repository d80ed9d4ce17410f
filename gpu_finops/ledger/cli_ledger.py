"""`gpu-finops ledger`: the monthly reconciliation and the allocation ladder, read from Prometheus.

Exit 0: report written. Exit 1: the window has no ledger data (one line on stderr saying which series
is missing). Exit 2: a bad argument (a window that is not whole steps, an unparsable time or step). Exit 3:
Prometheus did not answer, or refused the queries (one line naming the URL). Missing inputs in a window
that has data are warnings on stderr, each naming the series; evaluations with no data are reported as the
`unobserved` line, never spread over the others.
"""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from gpu_finops.clients.terminal import console as wide_console
from gpu_finops.facts import arguments, timeouts
from gpu_finops.facts.errors import CheckFailed, UsageError
from gpu_finops.ledger import accounting, render, rules, source
from gpu_finops.ledger.conventions import interval_seconds

DEFAULT_PROMETHEUS = os.environ.get("PROMETHEUS_URL", "http://127.0.0.1:9090")
RETRY_FOR = timeouts.PROM_RETRY  # seconds a query is retried before Prometheus counts as unreachable
EXIT_OK = 0


def _default_step() -> str:
    return str(rules.load()["groups"][0]["interval"])


def _when(text: str, option: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{option} {text!r} is not an ISO 8601 time like 2026-11-01T00:00:00Z") from None
    value = value if value.tzinfo else value.replace(tzinfo=UTC)
    try:
        year = value.astimezone(UTC).year
    except OverflowError:
        year = 0
    if not arguments.TIME_YEARS[0] <= year <= arguments.TIME_YEARS[1]:
        raise UsageError(
            f"{option} {text!r} is outside the years {arguments.TIME_YEARS[0]}-{arguments.TIME_YEARS[1]} "
            "(UTC) a window may span"
        )
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prometheus-url",
        type=arguments.http_url,
        default=DEFAULT_PROMETHEUS,
        help=f"Prometheus holding the ledger's recorded series (default: $PROMETHEUS_URL or {DEFAULT_PROMETHEUS})",
    )
    parser.add_argument(
        "--step",
        default=None,
        help="how long one recorded sample stands for: the rules' evaluation interval "
        f"(default: the rules file's, {_default_step()})",
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON to stdout instead of a table")
    out.add_argument("--csv", action="store_true", help="CSV to stdout instead of a table")
    parser.add_argument(
        "--png",
        type=arguments.suffixed(".png"),
        default=None,
        help="also draw the ladder waterfall and buckets by day (.png)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    month = sub.add_parser("month", help="every installed GPU-hour of a month in one named, owned bucket")
    when = month.add_mutually_exclusive_group(required=True)
    when.add_argument("--month", help="calendar month, UTC: YYYY-MM")
    when.add_argument("--from", dest="start", help="window start, ISO 8601 (UTC unless given); needs --to")
    month.add_argument("--to", dest="end", help="window end (exclusive), ISO 8601")
    month.add_argument(
        "--owners", type=Path, default=None, help="owners file (default: gpu_finops/ledger/owners.yaml)"
    )
    _common(month)
    ladder = sub.add_parser("ladder", help="every rung side by side, plus the largest placeable allocation")
    ladder.add_argument(
        "--window", default="1d", help="how far back from --at (Prometheus duration; default 1d)"
    )
    ladder.add_argument("--at", default=None, help="end of the window, ISO 8601 (default: now)")
    _common(ladder)
    parser.epilog = (
        "exit 0: report written; 1: no ledger data in the window; 2: bad arguments; "
        "3: Prometheus unreachable or refusing the queries"
    )


def _window(args: argparse.Namespace) -> source.Window:
    if args.action == "ladder":
        end = _when(args.at, "--at") if args.at is not None else datetime.now(UTC)  # "" is no time
        try:
            seconds = interval_seconds(args.window)
        except ValueError as exc:
            raise UsageError(f"--window {exc}") from None
        return source.Window(end - timedelta(seconds=seconds), end)
    if args.month is not None:
        if args.end is not None:
            raise UsageError(f"--to goes with --from; --month {args.month!r} already names the whole window")
        try:
            return source.month_window(args.month)
        except ValueError:
            raise UsageError(f"--month {args.month!r} is not a calendar month YYYY-MM") from None
    if args.end is None:
        raise UsageError("--from needs --to (the window's end, exclusive, ISO 8601)")
    return source.Window(_when(args.start, "--from"), _when(args.end, "--to"))


def run(args: argparse.Namespace) -> int:
    err = Console(stderr=True)
    for option, value in (("--step", args.step), ("--window", getattr(args, "window", None))):
        if value is not None and not value.strip():
            raise UsageError(f"{option} is empty: give a duration like 1m, or leave the option out")
    try:
        window = _window(args)
        step = interval_seconds(args.step or _default_step())
    except ValueError as exc:
        raise UsageError(f"{exc}; see `gpu-finops ledger {args.action} --help`") from None
    if step <= 0:
        raise UsageError(f"--step {args.step!r}: must be a positive duration like 1m (one sample's length)")
    if window.seconds <= 0 or window.seconds % step:
        raise UsageError(f"the window must be a positive whole number of {step}s steps: {window.label()}")
    client = source.RangeClient(args.prometheus_url, retry_for=RETRY_FOR)
    try:
        if args.action == "month":
            return _month(args, client, window, step, err)
        return _ladder(args, client, window, step, err)
    except source.NoLedgerData as exc:
        raise CheckFailed(str(exc)) from None


def _emit(args: argparse.Namespace, table, as_json, as_csv) -> None:
    if args.json:
        print(render.dumps(as_json()))
    elif args.csv:
        print(as_csv(), end="")
    else:
        wide_console().print(table())


def _month(args, client, window, step, err) -> int:
    owners = accounting.load_owners(args.owners)
    ledger = source.month_ledger(client, window, step, owners)
    for warning in ledger.warnings:
        err.print(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True)
    _emit(
        args,
        lambda: render.ledger_table(ledger),
        lambda: render.ledger_json(ledger),
        lambda: render.ledger_csv(ledger),
    )
    if args.png:
        ladder = source.ladder(client, window, step)
        _chart(args.png, client, window, step, ladder, f"fleet ledger {window.label()}", err)
    return EXIT_OK


def _ladder(args, client, window, step, err) -> int:
    ladder = source.ladder(client, window, step)
    for warning in ladder.missing_inputs:
        err.print(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True)
    _emit(
        args,
        lambda: render.ladder_table(ladder),
        lambda: render.ladder_json(ladder),
        lambda: render.ladder_csv(ladder),
    )
    if args.png:
        _chart(args.png, client, window, step, ladder, f"allocation ladder {window.label()}", err)
    return EXIT_OK


def _chart(path, client, window, step, ladder, title, err) -> None:
    by_day = source.buckets_by_day(client, window, step)
    rungs = {r.rung: float(r.mean_gpus) for r in ladder.rungs}
    render.chart(path, rungs=rungs, by_day=by_day, labels=accounting.LABELS, title=title)
    err.print(f"chart: {path}")
