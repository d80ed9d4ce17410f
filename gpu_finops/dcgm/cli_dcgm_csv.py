"""`gpu-finops dcgm-csv`: print the dcgm-exporter metrics CSV gpu-finops reads (DCGM_FI_PROF_SM_ACTIVE and
the fields the collector, the ledger and diagnose use), generated and validated by gpu_finops/dcgm/metrics_csv.py. The
same text ships in the chart (charts/gpu-finops/files/dcgm-metrics.csv), so a user can deploy it to their own
dcgm-exporter without synthesizing our stacks (docs/install.md)."""

from __future__ import annotations

import argparse
import sys

from gpu_finops.dcgm.metrics_csv import DCGM_EXPORTER_VERSION, parse, render
from gpu_finops.facts import dcgm


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        f"Prints the CSV the addons stack gives dcgm-exporter {DCGM_EXPORTER_VERSION}: {dcgm.SM_ACTIVE} "
        "and the other fields the collector, the ledger and the diagnosis read. It is read back, before it "
        "is printed, exactly as the exporter reads it (Go's encoding/csv, then its field checks). Give it to "
        "your exporter as its collectors file, e.g. `gpu-finops dcgm-csv > dcgm-metrics.csv`, then a "
        "ConfigMap mounted where the exporter's `-f` argument points (docs/install.md). exit 0: printed."
    )


def run(args: argparse.Namespace) -> int:
    text = render()  # renders, then parses with the Go reader's rules: a bad row fails here, naming it
    if dcgm.SM_ACTIVE not in {row.field for row in parse(text)}:  # the point of the command
        raise RuntimeError(f"the project's metrics CSV lost {dcgm.SM_ACTIVE}: gpu_finops/dcgm/metrics_csv.py")
    sys.stdout.write(text)
    return 0
