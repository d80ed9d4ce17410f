"""The terminal the CLIs write their tables to."""

from __future__ import annotations


def console():
    """A rich console that does not squash tables to 80 columns when output is captured (CI, pipes)."""
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=180, soft_wrap=True)
