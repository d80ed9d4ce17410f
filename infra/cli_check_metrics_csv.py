"""`gpu-finops check-metrics-csv FILE`: lint a dcgm-exporter metrics CSV before deploying it."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from facts import dcgm
from infra.metrics_csv import MetricsCsvError, parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="the CSV file (field, prom type, help per row)")
    parser.epilog = (
        "exit 0: valid; exit 1: a bad row (printed with line number and reason); exit 2: unreadable"
    )


def run(args: argparse.Namespace) -> int:
    console = Console(stderr=True, soft_wrap=True)
    try:
        text = args.file.read_text()
    except OSError as exc:
        console.print(f"[red]cannot read {args.file}: {exc.strerror}[/red]")
        return 2
    try:
        rows = parse(text, source=str(args.file))
    except MetricsCsvError as exc:
        console.print(f"[red]invalid[/red] {exc}")
        return 1
    fields = {r.field for r in rows}
    Console(soft_wrap=True).print(f"valid: {len(rows)} metrics in {args.file}")
    if dcgm.SM_ACTIVE not in fields:
        console.print(
            f"[yellow]warning[/yellow]: {dcgm.SM_ACTIVE} is not exported; idle cost cannot be measured"
        )
    return 0
