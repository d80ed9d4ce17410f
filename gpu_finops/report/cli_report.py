"""`gpu-finops report`: one self-contained HTML page from what a run recorded.

Reads reports/acts.json (the acts), the cost store (read-only), a ledger month and ladder, and the
diagnosis (each a file; a missing one is a section saying why). Exit 0: the page is written (its path is
the last line printed); 1: none of the inputs exists, so there is nothing to report; 2: an input is not
what it should be (one line naming it).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpu_finops.facts import arguments
from gpu_finops.facts.errors import CheckFailed
from gpu_finops.facts.output_files import write_output
from gpu_finops.report import section_acts, section_cost, section_ops, sources
from gpu_finops.report.page import document

REPORTS = Path("reports")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--acts", type=Path, default=REPORTS / "acts.json", help="the acts' JSON (default: %(default)s)"
    )
    parser.add_argument(
        "--store", type=Path, default=REPORTS / "act-6-cost.sqlite",
        help="the SQLite cost store, opened read-only (default: %(default)s, act 6's)",
    )  # fmt: skip
    parser.add_argument(
        "--ledger", type=Path, default=REPORTS / "ledger-month.json",
        help="`gpu-finops ledger month --json` output (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--ladder", type=Path, default=REPORTS / "ledger-ladder.json",
        help="`gpu-finops ledger ladder --json` output (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--diagnose", type=Path, default=REPORTS / "act-7-diagnose.json",
        help="`gpu-finops diagnose --all --json` output (default: %(default)s, act 7's)",
    )  # fmt: skip
    parser.add_argument(
        "--out",
        type=arguments.writable_file,
        default=REPORTS / "index.html",
        help="the page (default: %(default)s)",
    )
    parser.epilog = "exit 0: page written; 1: no input exists, nothing to report; 2: an input is malformed"


def build(args: argparse.Namespace) -> str:
    """The page's HTML from the inputs `args` names."""
    acts = sources.acts_run(args.acts)
    cost = sources.cost_data(args.store)
    month, ladder = sources.ledger_month(args.ledger), sources.ladder(args.ladder)
    diagnosis = sources.diagnosis(args.diagnose)
    inputs = (acts, cost, month, ladder, diagnosis)
    if all(isinstance(i, sources.Absent) for i in inputs):
        raise CheckFailed(
            f"nothing to report: none of {args.acts}, {args.store}, {args.ledger}, {args.ladder}, "
            f"{args.diagnose} exists; run `make acts` (or give the inputs' paths)"
        )
    subtitle = (
        f"Target {acts.target}, finished {acts.finished}."
        if isinstance(acts, sources.ActsRun)
        else "No acts run."
    )
    sections = [
        section_acts.section(acts, args.out.parent),
        section_cost.section(cost),
        section_ops.ledger_section(month, ladder),
        section_ops.diagnosis_section(diagnosis),
    ]
    return document("gpu-finops run report", subtitle, sections)


def run(args: argparse.Namespace) -> int:
    page = build(args)
    write_output(args.out, page, "--out")
    print(f"report: {args.out.resolve()}")
    return 0
