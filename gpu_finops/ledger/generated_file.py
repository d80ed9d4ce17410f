"""The one command line of the ledger's generated files (`python -m gpu_finops.ledger.rules --write`,
`python -m gpu_finops.ledger.alerts --write`): render for the pinned exporter into the committed file, or for another
exporter's spelling to stdout. One function, so the two generators cannot drift in what `--write` means."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

from gpu_finops.facts.dcgm_inputs import SPELLING_HELP, spelling_argument
from gpu_finops.ledger.conventions import Conventions


def write_or_print(
    path: Path,
    render: Callable[[Conventions | None], str],
    description: str,
    argv: Sequence[str] | None = None,
) -> None:
    """Parse `--write` / `--exporter-spelling`, then write `path` or print the rendering."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--write", action="store_true", help=f"write {path}")
    parser.add_argument(
        "--exporter-spelling",
        type=spelling_argument,
        default=None,
        help=SPELLING_HELP + "; render for that fleet (to stdout: the committed file is the pinned one's)",
    )
    args = parser.parse_args(argv)
    if args.write and args.exporter_spelling:
        parser.error("--write renders the committed file, for the pinned exporter: drop --exporter-spelling")
    text = render(Conventions(spelling=args.exporter_spelling) if args.exporter_spelling else None)
    if args.write:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    else:
        print(text, end="")
