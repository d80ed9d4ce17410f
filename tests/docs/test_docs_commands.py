"""A doc cannot show a command that does not exist: every `gpu-finops …` and `make …` command in README.md,
docs/*.md and docs/log/*.md parses with the CLI's real parsers and names targets and variables make knows
(tests/docs/doc_commands.py says how, and why parsing rather than running)."""

from __future__ import annotations

import textwrap

import pytest

from tests.docs import doc_commands as dc

DOCS = dc.documents()


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_command_a_doc_shows_parses(doc):
    _count, problems = dc.problems_in(str(doc.relative_to(dc.ROOT)), doc.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_the_extraction_finds_the_commands_a_reader_sees():
    """Not vacuous: the docs' commands are found, from code blocks, inline code and README's table."""
    found = {}
    for doc in DOCS:
        for s in dc.shown_in(doc.name, doc.read_text(encoding="utf-8"))[0]:
            found.setdefault(" ".join(s.words), s)
    total = len(found)
    assert total >= 60, f"only {total} distinct commands found in the docs"
    for command in ("make demo", "make up", "make acts TARGET=aws", "gpu-finops guard estimate"):
        assert command in found, f"{command!r} not extracted"
    assert "gpu-finops check-metrics-csv FILE" in found  # README's table cell `check-metrics-csv FILE`
    assert any(c.startswith("gpu-finops diagnose --all --prometheus-url") for c in found)  # a synopsis line


NEAR_MISSES = textwrap.dedent(
    """\
    # A doc

    Run `gpu-finops ledger month --month 2026-07` and `gpu-finops ledgr month --month 2026-07`.

    ```bash
    make demo
    make destory
    gpu-finops report --out reports/index.html
    gpu-finops report --outt reports/index.html   # a made-up flag
    make acts TARGET=aws
    make acts TARGT=aws
    exec .venv/bin/gpu-finops guard run --deadline-file d.json -- make upp
    gpu-finops ledger month
    gpu-finops diagnose POD [-n NS]
        [--windw 5m]
    gpu-finops gpus --window WINDOW
    ```

    | subcommand | what |
    |---|---|
    | `cost report\\|reprot` | two, one wrong |
    """
)


def _problems(text: str) -> list[str]:
    return dc.problems_in("docs/near.md", text)[1]


def test_near_misses_each_fail_naming_file_line_command_and_why():
    problems = _problems(NEAR_MISSES)
    expected = [
        (
            "docs/near.md:3: `gpu-finops ledgr month --month 2026-07`",
            "gpu-finops: argument COMMAND: invalid choice: 'ledgr'",
        ),
        (
            "docs/near.md:7: `make destory`",
            "make has no target 'destory' (targets starting alike: demo, destroy)",
        ),
        (
            "docs/near.md:9: `gpu-finops report --outt reports/index.html`",
            "gpu-finops report: unrecognized arguments: --outt",
        ),
        (
            "docs/near.md:11: `make acts TARGT=aws`",
            "make variable TARGT: neither the Makefile nor the code reads it",
        ),
        ("docs/near.md:12: ", "make upp: make has no target 'upp'"),
        (
            "docs/near.md:13: `gpu-finops ledger month`",
            "gpu-finops ledger: one of the arguments --month --from is required",
        ),
        (
            "docs/near.md:14: `gpu-finops diagnose POD [-n NS] [--windw 5m]`",
            "unrecognized arguments: --windw",
        ),
        ("docs/near.md:16: `gpu-finops gpus --window WINDOW`", "placeholder 'WINDOW' has no sample value"),
        (
            "docs/near.md:21: `gpu-finops cost report|reprot`",
            "gpu-finops cost: argument ACTION: invalid choice",
        ),
    ]
    for where, why in expected:
        assert any(p.startswith(where) and why in p for p in problems), (where, why, problems)
    assert len(problems) == len(expected), "\n".join(problems)


def test_the_near_misses_fixed_pass():
    fixed = (
        NEAR_MISSES.replace("ledgr", "ledger")
        .replace("destory", "destroy")
        .replace("--outt", "--out")
        .replace("TARGT", "TARGET")
        .replace("make upp", "make up")
        .replace("gpu-finops ledger month\n", "gpu-finops ledger month --from 2026-07-01 --to 2026-07-02\n")
        .replace("--windw", "--window")
        .replace("WINDOW", "5m")
        .replace("\\|reprot", "")
    )
    count, problems = dc.problems_in("docs/near.md", fixed)
    assert problems == []
    assert count >= 15  # every variant of the notation was parsed, none skipped


def test_usage_notation_expands_to_each_alternative():
    assert dc.expand("gpu-finops diagnose [POD \\| --workload NAME \\| --all]") == [
        "gpu-finops diagnose POD",
        "gpu-finops diagnose --workload NAME",
        "gpu-finops diagnose --all",
        "gpu-finops diagnose ",
    ]
    assert dc.expand("make acts TARGET=local|aws") == ["make acts TARGET=local", "make acts TARGET=aws"]
    assert dc.commands_in(dc._words('make destroy TEARDOWN_ARGS="--plan p.json" || make resume')) == [
        ["make", "destroy", "TEARDOWN_ARGS=--plan p.json"],
        ["make", "resume"],
    ]


def test_make_targets_come_from_makes_database_not_a_list(tmp_path):
    makefile = tmp_path / "Makefile"
    makefile.write_text("X ?= 1\nreal: ## a target\n\t@echo never run > ran\n.PHONY: real\n")
    targets, variables = dc.make_database(makefile)
    assert "real" in targets and "X" in variables and "unreal" not in targets
    assert dc.make_problem(["make", "real", "X=2"], makefile) is None
    assert dc.make_problem(["make", "unreal"], makefile) == "make has no target 'unreal'"
    assert not (tmp_path / "ran").exists()  # make printed its database and ran nothing


def test_a_shell_variable_takes_the_value_the_same_doc_exports_and_an_unset_one_is_named():
    text = '```sh\nexport PROMETHEUS_URL=http://127.0.0.1:9090\ngpu-finops gpus --prometheus-url "$PROMETHEUS_URL"\n```\n'
    assert _problems(text) == []
    unset = '```sh\ngpu-finops gpus --prometheus-url "$PROM"\n```\n'
    (problem,) = _problems(unset)
    assert "shell variable $PROM is never set in this doc" in problem
    wrong = "```sh\nexport PROMETHEUS_URL=localhost\ngpu-finops gpus --prometheus-url $PROMETHEUS_URL\n```\n"
    (problem,) = _problems(wrong)
    assert "expected an http(s) URL" in problem
