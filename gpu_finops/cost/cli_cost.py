"""`gpu-finops cost report`: per-node table and a PNG chart from the cost table, and per tenant from a
FOCUS export; `gpu-finops cost export` (gpu_finops/cost/cli_export.py) writes that export."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gpu_finops.clients.terminal import console as wide_console
from gpu_finops.cost.cli_common import add_store_argument, add_window_arguments, check_window
from gpu_finops.cost.cli_export import add_export_parser, run_export
from gpu_finops.cost.cost_report import chart, summarize, table
from gpu_finops.cost.store import open_store
from gpu_finops.facts import arguments
from gpu_finops.facts.errors import CheckFailed, UsageError
from gpu_finops.facts.private_files import write_private


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    report = sub.add_parser("report", help="per-node table, JSON and a PNG chart")
    add_store_argument(report)
    add_window_arguments(report)
    report.add_argument(
        "--png", type=arguments.suffixed(".png"), default=Path("reports/cost.png"), help="chart path (.png)"
    )
    report.add_argument(
        "--json", type=arguments.writable_file, default=None, help="also write the per-node summary as JSON"
    )
    report.add_argument(
        "--parquet",
        default=None,
        help="a FOCUS export (directory or s3:// prefix, from `cost export`): adds the per-tenant table "
        "(cost, idle cost, idle share, GPU-hours, read with DuckDB) and the chart's per-tenant panel",
    )
    report.add_argument(
        "--period",
        type=arguments.calendar_month,
        default=None,
        help="with --parquet: one billing period, YYYY-MM",
    )
    add_export_parser(sub)
    parser.epilog = "exit 0: report written; exit 1: the cost table has no records in the range"


def run(args: argparse.Namespace) -> int:
    if args.action == "export":
        return run_export(args)
    if args.period and not args.parquet:
        raise UsageError(
            f"--period {args.period} picks a billing period of a FOCUS export: give --parquet with it (the "
            "cost table's range is --since/--until)"
        )
    check_window(args)
    # A report reads: the store is opened read-only, so a missing or foreign file is refused, never made.
    records = open_store(args.store, read_only=True).records(since=args.since, until=args.until)
    console = wide_console()
    tenants = None
    if args.parquet:
        from gpu_finops.cost.tenant_report import by_tenant, tenant_table

        tenants = by_tenant(args.parquet, period=args.period)
    if not records and not tenants:
        raise CheckFailed(
            f"no cost records in {args.store} for the range given: run `gpu-finops collect` first"
        )
    summaries = summarize(records)
    if summaries:
        console.print(table(summaries))
    if tenants:
        console.print(tenant_table(tenants))
    console.print(f"chart: {chart(records, args.png, tenants)}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = [s.__dict__ | {"idle_share": s.idle_share} for s in summaries]
        doc = report if tenants is None else {"nodes": report, "tenants": [t.to_dict() for t in tenants]}
        write_private(args.json, json.dumps(doc, indent=2).encode())  # spend by node and tenant: 0600
        console.print(f"json: {args.json}")
    return 0
