"""The chart's generated files (charts/gpu-finops/files/): the ledger's recording rules and dcgm-exporter's
metrics CSV, rendered from their one source each (gpu_finops/ledger/rules.py over gpu_finops/ledger/conventions.py;
gpu_finops/dcgm/metrics_csv.py's PROJECT_METRICS) so the chart, the ledger and the CSV `gpu-finops dcgm-csv` prints
cannot drift. `python -m tools.chart_files --write` re-renders them; tests/infra/test_chart.py fails,
naming this command, when a committed copy differs.

A copy rather than a link: Helm reads only files inside the chart's folder, a packaged chart must carry
its own, and `gpu_finops/ledger/rules.yaml` stays package data for the installed CLI (`ledger` reads its interval).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpu_finops.dcgm.metrics_csv import PROJECT_METRICS
from gpu_finops.dcgm.metrics_csv import render as render_metrics_csv
from gpu_finops.facts.names import PROJECT
from gpu_finops.ledger import rules

CHART = Path(__file__).resolve().parents[1] / "charts" / PROJECT
RECORDING_RULES = CHART / "files" / "recording-rules.yaml"
DCGM_METRICS_CSV = CHART / "files" / "dcgm-metrics.csv"


def expected() -> dict[Path, str]:
    """Each generated file and the text it must hold."""
    return {RECORDING_RULES: rules.render(), DCGM_METRICS_CSV: render_metrics_csv(PROJECT_METRICS)}


def stale() -> list[Path]:
    return [p for p, text in expected().items() if not p.is_file() or p.read_text() != text]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write the generated files under {CHART}")
    args = parser.parse_args()
    for path, text in expected().items():
        if args.write:
            path.write_text(text)
        print(
            f"{path.relative_to(CHART.parents[1])}: {'written' if args.write else 'ok' if path.is_file() and path.read_text() == text else 'STALE'}"
        )


if __name__ == "__main__":
    main()
