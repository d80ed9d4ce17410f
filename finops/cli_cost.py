"""`gpu-finops cost report`: per-node table and a PNG chart from the cost table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from finops.cli_common import add_store_argument
from finops.cli_common import console as wide_console
from finops.cost_report import chart, summarize, table
from finops.store import open_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    report = sub.add_parser("report", help="per-node table, JSON and a PNG chart")
    add_store_argument(report)
    report.add_argument("--since", default=None, help="first ChargePeriodStart (ISO 8601 UTC)")
    report.add_argument("--until", default=None, help="ChargePeriodStart before this (ISO 8601 UTC)")
    report.add_argument("--png", type=Path, default=Path("reports/cost.png"), help="chart path")
    report.add_argument("--json", type=Path, default=None, help="also write the per-node summary as JSON")
    parser.epilog = "exit 0: report written; exit 1: the cost table has no records in the range"


def run(args: argparse.Namespace) -> int:
    records = open_store(args.store).records(since=args.since, until=args.until)
    console = wide_console()
    if not records:
        Console(stderr=True).print(
            f"[red]no cost records in {args.store}[/red] for the range given: run `gpu-finops collect` first"
        )
        return 1
    summaries = summarize(records)
    console.print(table(summaries))
    console.print(f"chart: {chart(records, args.png)}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps([s.__dict__ | {"idle_share": s.idle_share} for s in summaries], indent=2)
        )
        console.print(f"json: {args.json}")
    return 0
