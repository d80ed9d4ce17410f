"""`gpu-finops dcgm-csv`: print the dcgm-exporter metrics CSV gpu-finops reads (DCGM_FI_PROF_SM_ACTIVE and
the fields the collector, the ledger and diagnose use), generated and validated by infra/metrics_csv.py. The
same text ships in the chart (charts/gpu-finops/files/dcgm-metrics.csv), so a user can deploy it to their own
dcgm-exporter without synthesizing our stacks (docs/install.md)."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "exit 0: printed. Deploy it: `gpu-finops dcgm-csv > gpu-finops.csv; kubectl -n <ns> create configmap "
        "dcgm-metrics --from-file=gpu-finops.csv`, mount it into dcgm-exporter and pass "
        "`-f /etc/dcgm-exporter/gpu-finops/gpu-finops.csv` (docs/install.md)"
    )


def run(args: argparse.Namespace) -> int:
    from infra.metrics_csv import PROJECT_METRICS, render

    sys.stdout.write(render(PROJECT_METRICS))
    return 0
