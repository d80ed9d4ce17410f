"""README's subcommand table names every command the CLI has, and each of its nested subcommands
(`teardown begin`, `local env`, `cost export` ...), and nothing the CLI does not have: a command added
without a row, or a row left after its command went, fails naming it."""

from __future__ import annotations

import argparse
import re

from gpu_finops.cli import SUBCOMMANDS, command_parser
from tests.docs import tables
from tests.docs.doc_commands import ROOT


def cli_commands() -> set[str]:
    """`command` and `command sub` for every subcommand and its nested subparsers (or the positional
    choice that plays their part: `infra up`)."""
    out = set()
    for command in SUBCOMMANDS:
        out.add(command)
        _, parser = command_parser(command)
        for action in parser._actions:  # argparse has no public walk of its subparsers
            if isinstance(action, argparse._SubParsersAction):
                out |= {f"{command} {name}" for name in action.choices}
            elif not action.option_strings and action.choices and action.nargs is None:
                out |= {f"{command} {name}" for name in action.choices}  # `infra up`: a positional choice
    return out


def table_commands(text: str) -> set[str]:
    """What the table's first cells name: `teardown begin|plan` is `teardown`, `teardown begin`, ...;
    placeholders and options (`FILE`, `[--once]`) are not commands."""
    out = set()
    for row in tables.rows(text):
        for code in tables.codes(row.cells[0]):
            words = [w for w in code.replace("\\|", "|").split() if re.fullmatch(r"[a-z][a-z0-9|-]*", w)]
            if not words or "|" in words[0]:
                continue
            out.add(words[0])
            if len(words) > 1:
                out |= {f"{words[0]} {sub}" for sub in words[1].split("|") if sub}
    return out


def section(text: str, heading_row: str) -> str:
    start = text.index(heading_row)
    end = text.find("\n\n", start)
    return text[start : end if end > 0 else None]


def test_readmes_subcommand_table_is_the_cli():
    readme = (ROOT / "README.md").read_text()
    named = table_commands(section(readme, "| subcommand | what it does |"))
    have = cli_commands()
    assert len([c for c in have if " " in c]) > 20, sorted(have)
    assert sorted(have - named) == [], f"commands with no row: {sorted(have - named)}"
    assert sorted(named - have) == [], f"rows naming no command: {sorted(named - have)}"


def test_a_command_without_a_row_and_a_row_without_a_command_are_named():
    table = (
        "| subcommand | what it does |\n|---|---|\n"
        "| `teardown plan\\|destroy` | x |\n| `collect [--once]` | y |\n| `gone` | z |\n"
    )
    named = table_commands(table)
    assert named == {"teardown", "teardown plan", "teardown destroy", "collect", "gone"}
    have = {"teardown", "teardown plan", "teardown destroy", "teardown begin", "collect"}
    assert sorted(have - named) == ["teardown begin"] and sorted(named - have) == ["gone"]
