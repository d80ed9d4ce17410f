"""Every command's --help says the one exit-code contract, nested subcommands (`cost report`, `twin run`,
`teardown begin`, `local up` ...) included."""

from __future__ import annotations

import argparse

import pytest

from gpu_finops.cli import SUBCOMMANDS, command_parser, with_contract
from gpu_finops.facts.errors import CONTRACT


def helps(parser: argparse.ArgumentParser, prog: str) -> list[tuple[str, str]]:
    out = [(prog, parser.format_help())]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                out += helps(child, f"{prog} {name}")
    return out


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_help_ends_with_the_exit_codes(command):
    _, parser = command_parser(command)
    missing = [prog for prog, text in helps(parser, command) if CONTRACT.splitlines()[-1] not in text]
    assert missing == [], f"--help without the exit codes: {missing}"


def test_the_contract_is_added_once_and_keeps_its_table():
    parser = argparse.ArgumentParser(prog="x", epilog="see also: y")
    sub = parser.add_subparsers()
    sub.add_parser("child")
    with_contract(parser)
    with_contract(parser)
    text = parser.format_help()
    assert text.count("exit codes (every subcommand):") == 1 and "see also: y" in text
    # the table's rows stay rows (the default formatter would join them into one paragraph)
    assert "\n  0    ok\n" in text
    assert "\n  0    ok\n" in sub.choices["child"].format_help()
