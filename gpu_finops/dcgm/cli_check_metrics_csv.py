"""`gpu-finops check-metrics-csv FILE`: lint a dcgm-exporter metrics CSV before deploying it."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from gpu_finops.dcgm.metrics_csv import (
    DCGM_EXPORTER_VERSION,
    MAX_CSV_BYTES,
    MetricsCsvError,
    parse,
)
from gpu_finops.facts import dcgm, input_files
from gpu_finops.facts.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="the CSV file (field, prom type, help per row)")
    parser.epilog = (
        f"Reads the file as dcgm-exporter {DCGM_EXPORTER_VERSION} does (Go's encoding/csv with `#` "
        "comments, then its field checks), plus the project's rules. "
        "exit 0: valid; exit 1: a bad row (printed with line number and reason); "
        f"exit 2: unreadable, or over {MAX_CSV_BYTES:,} bytes"
    )


def run(args: argparse.Namespace) -> int:
    console = Console(stderr=True, soft_wrap=True, highlight=False)
    try:
        data = input_files.read_bytes(args.file, "metrics CSV", MAX_CSV_BYTES)
    except ConfigError as exc:
        console.print(f"[red]cannot check[/red] {escape(str(exc))}")
        return 2
    try:
        rows = parse(data, source=str(args.file))
    except MetricsCsvError as exc:
        console.print(f"[red]invalid[/red] {escape(str(exc))}")
        return 1
    fields = {r.field for r in rows}
    Console(soft_wrap=True, highlight=False).print(f"valid: {len(rows)} metrics in {escape(str(args.file))}")
    if dcgm.SM_ACTIVE not in fields:
        console.print(
            f"[yellow]warning[/yellow]: {dcgm.SM_ACTIVE} is not exported; idle cost cannot be measured"
        )
    return 0
