"""Every `gpu-finops …` and `make …` command the docs show, and whether the real CLI and Makefile know it.

Extraction reads Markdown with markdown-it-py (the CommonMark parser rich renders Markdown with, so it comes
with rich, a runtime dependency): fenced and indented code blocks line by line, inline code spans, and the
first column of a table headed `subcommand` (README's command table, whose cells omit `gpu-finops`). A
command is found at the start of a shell segment (after `&&`, `||`, `;`, `|`, `exec`, `$ ` and `VAR=value`
prefixes) and after `--` (`guard run -- make up`). Usage notation is expanded before parsing: `[a | b]` is
each alternative and nothing, `a|b` (no spaces) each alternative, an UPPERCASE word or `<word>` a
placeholder with a sample value (an unknown one is itself a failure, so a new placeholder is a decision).

Checking never runs a command. `gpu-finops` argv goes through the parsers `gpu_finops.cli` builds for a
real run (`cli.build_parser`, `cli.command_parser`: each subcommand module's own `add_arguments`, argument
types included), with `error`/`exit` raising instead of exiting: that is the whole of what the console
script does before `module.run`, so a command that parses here is one the CLI accepts. `--help` counts as
parsed. `make` targets and variables are read from make's own database (`make -p -n -q` of the Makefile:
nothing is executed, not even `$(MAKE)` lines, since the goal asked for does not exist).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import re
import shlex
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from markdown_it import MarkdownIt

from gpu_finops import cli

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ("gpu-finops", "make")
# A sample value for each placeholder the docs use; parsing sees the value, so it must satisfy the type.
PLACEHOLDERS = {
    "FILE": "reports/out.json",
    "POD": "pod-0",
    "NAME": "job-0",
    "NS": "team-a",
    "URL": "http://127.0.0.1:9090",
    "PATH": "kubeconfig",
    "COMMAND": "report",
    "YYYY-MM": "2026-07",
    "ACCOUNT": "123456789012",
    "DIR": "reports/focus",
    "START": "2026-07-01T00:00:00Z",
    "END": "2026-07-02T00:00:00Z",
    "ACTION": "plan",
}
# Command substitutions the docs show, each with the sample value its output would be.
SUBSTITUTIONS = {  # a command substitution a doc shows -> a sample of what it prints
    "$(date -u +%Y-%m)": "2026-07",
    "$(terraform -chdir=cdktf.out/stacks/cluster output -raw export_bucket)": "gpu-finops-export-123456789012",
}
SHELL_VARIABLE = re.compile(r"^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$")
ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Z_][A-Z0-9_]*)=(\S+)", re.M)
ELIDED = ("...", "…")  # after an option: some value (`--store ...`); elsewhere: arguments left out
REQUIRED = re.compile(r"the following arguments are required|one of the arguments .* is required")
PLACEHOLDER = re.compile(r"^(<[^<>]+>|[A-Z][A-Z0-9_]*(-[A-Z0-9]+)*)$")
OPERATORS = {"|", "||", "&&", ";", "&", "(", ")"}
REDIRECTS = {">", ">>", "<", "<<", "2>", "&>"}
MAX_VARIANTS = 512


@dataclass(frozen=True)
class Shown:
    """One command as a doc shows it: where, the text, and the words of one expansion of its notation."""

    file: str
    line: int
    text: str
    words: tuple[str, ...]
    inline: bool = False  # inline code may name a subcommand without its required arguments

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: `{self.text}`"


class _Refused(Exception):
    pass


class _Exited(Exception):
    pass


class _CheckingParser(cli.Parser):
    """The CLI's parser class, raising where it would exit; subparsers inherit it (argparse: type(self))."""

    def error(self, message: str):
        raise _Refused(message)

    def exit(self, status: int = 0, message: str | None = None):
        if status:
            raise _Refused(message or f"exit {status}")
        raise _Exited()


def _alternatives(text: str) -> list[str]:
    """`[a | b]` contents -> ['a', 'b'] (a spaced bar; `[--x a|b]` is one alternative with a choice)."""
    return [part.strip() for part in re.split(r"\s\|\s", text)]


def expand(text: str) -> list[str]:
    """Usage notation -> concrete command lines: optional groups, then unspaced alternatives."""
    text = text.replace("\\|", "|")
    group = re.search(r"\[([^\[\]]*)\]", text)
    if group:
        rest = [text[: group.start()] + alt + text[group.end() :] for alt in [*_alternatives(group[1]), ""]]
        return [line for r in rest for line in expand(r)][: MAX_VARIANTS + 1]
    words = text.split(" ")
    choices = []
    for word in words:
        if brace := re.search(r"\{([^{}]*,[^{}]*)\}", word):  # argparse's own `{a,b}` choices
            choices.append([word[: brace.start()] + alt + word[brace.end() :] for alt in brace[1].split(",")])
        elif "|" in word and "||" not in word and len(word) > 1 and not word.startswith("|"):
            parts = word.split("|")
            key = parts[0].split("=", 1)[0] + "=" if "=" in parts[0] else ""
            choices.append([parts[0], *(p if "=" in p or not key else key + p for p in parts[1:])])
        else:
            choices.append([word])
    return [" ".join(c) for c in itertools.product(*choices)][: MAX_VARIANTS + 1]


def _words(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;()<>")
    lexer.whitespace_split, lexer.commenters = True, ""
    words = list(lexer)
    cut = next((i for i, w in enumerate(words) if w.startswith("#")), len(words))
    return words[:cut]


def _segments(words: list[str]) -> list[list[str]]:
    """Shell words -> the simple commands in them, redirections dropped."""
    out, current, skip = [], [], False
    for word in words:
        if skip:
            skip = False
        elif word in REDIRECTS:
            skip = True
        elif word in OPERATORS:
            out.append(current)
            current = []
        else:
            current.append(word)
    return [*out, current]


def commands_in(words: list[str]) -> list[list[str]]:
    """Each `gpu-finops …` / `make …` among shell words, with `--` nesting (`guard run -- make up`)."""
    found = []
    for seg in _segments(words):
        while seg and (seg[0] in ("$", "exec") or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", seg[0])):
            seg = seg[1:]
        if not seg or Path(seg[0]).name not in PROGRAMS:
            continue
        if "--" in seg and Path(seg[0]).name == "gpu-finops":
            cut = seg.index("--")
            found += commands_in(seg[cut + 1 :])
        found.append(seg)
    return found


def _shown(file: str, line: int, text: str, inline: bool) -> tuple[list[Shown], list[str]]:
    """The commands of one doc line (every expansion), and the problems met reading it."""
    shown, problems = [], []
    variants = expand(text)
    if len(variants) > MAX_VARIANTS:
        return [], [f"{file}:{line}: `{text}`: more than {MAX_VARIANTS} expansions of its usage notation"]
    for variant in variants:
        try:
            words = _words(variant)
        except ValueError as exc:  # an unclosed quote: the doc shows a command no shell would run
            problems.append(f"{file}:{line}: `{text}`: not a shell command line: {exc}")
            continue
        for argv in commands_in(words):
            # a bare `gpu-finops` or `make` names the tool; `gpu-finops infra: ...` is an error line it printed
            if len(argv) > 1 and not argv[1].endswith(":"):
                shown.append(Shown(file, line, text, tuple(argv), inline))
    return shown, problems


def _block_lines(content: str, first: int) -> list[tuple[int, str]]:
    """A code block's command lines: `\\` continuations joined, an indented `[...]`/`-` line after a
    command line (a usage synopsis's option line) appended to it."""
    lines: list[tuple[int, str]] = []
    carry = False
    for n, raw in enumerate(content.splitlines(), first):
        code = _code(raw.strip())
        synopsis = bool(lines) and raw[:1].isspace() and code[:1] in "[-" and _has_program(lines[-1][1])
        if carry or synopsis:
            lines[-1] = (lines[-1][0], lines[-1][1] + " " + code)
        else:
            lines.append((n, code))
        carry = lines[-1][1].endswith("\\")
        if carry:
            lines[-1] = (lines[-1][0], lines[-1][1][:-1].rstrip())
    return lines


def _code(line: str) -> str:
    """A line without its `# comment` (at the start, or after whitespace)."""
    return "" if line.startswith("#") else re.split(r"\s#", line, maxsplit=1)[0].rstrip()


def _has_program(line: str) -> bool:
    return re.search(r"(^|[\s;&|(/$])(gpu-finops|make)(\s|$)", line) is not None


def _line_of(code: str, source: list[str], start: int, end: int) -> int:
    """The 1-based line an inline code span starts on (it may wrap across lines of its paragraph)."""
    block = "\n".join(source[start:end]).replace("\\|", "|")
    m = re.search("`+ ?" + r"\s+".join(map(re.escape, code.split())), block)
    return start + 1 + (block[: m.start()].count("\n") if m else 0)


def shown_in(file: str, text: str) -> tuple[list[Shown], list[str]]:
    """Every command a Markdown document shows, with its 1-based line."""
    md = MarkdownIt("commonmark").enable("table")
    source = text.splitlines()
    tokens = md.parse(text)
    shown, problems = [], []

    def add(line: int, command: str, inline: bool = False) -> None:
        if _has_program(command):
            s, p = _shown(file, line, command, inline)
            shown.extend(s)
            problems.extend(p)

    subcommand_table, column = False, 0
    for tok in tokens:
        if tok.type in ("fence", "code_block") and tok.map:
            first = tok.map[0] + (2 if tok.type == "fence" else 1)
            for n, line in _block_lines(tok.content, first):
                add(n, line)
        elif tok.type == "table_open":
            subcommand_table, column = False, 0
        elif tok.type == "tr_open":
            column = 0
        elif tok.type == "inline" and tok.map:
            column += 1
            start, end = tok.map
            for child in tok.children or []:
                if child.type != "code_inline":
                    continue
                code = child.content
                where = _line_of(code, source, start, end)
                if column == 1 and subcommand_table and not code.startswith(PROGRAMS):
                    code = f"gpu-finops {code}"
                add(where, code, inline=True)
            if tok.content.strip().lower() == "subcommand" and column == 1:
                subcommand_table = True
    return shown, problems


def _placeholders(shown: Shown, variables: dict[str, str] | None = None) -> tuple[list[str], str | None]:
    """The argv a reader would run: placeholders and elisions given sample values, `$NAME` the value the
    same doc assigns it (`export NAME=value`), known command substitutions their sample output."""
    argv: list[str] = []
    for word in shown.words:
        key, sep, value = word.partition("=") if word.startswith("--") else ("", "", word)
        substituted = [pattern for pattern in SUBSTITUTIONS if pattern in value]
        for pattern in substituted:  # whole (`$(date ...)`) or inside a word (`s3://$(terraform ...)/focus`)
            value = value.replace(pattern, SUBSTITUTIONS[pattern])
        if not substituted and (variable := SHELL_VARIABLE.match(value)):
            if variable.group(1) not in (variables or {}):
                return (
                    [],
                    f"shell variable ${variable.group(1)} is never set in this doc (export it before use)",
                )
            value = (variables or {})[variable.group(1)]
        if value in ELIDED:
            if argv and argv[-1].startswith("-"):
                argv.append("x")
            continue
        if PLACEHOLDER.match(value):
            if value not in PLACEHOLDERS:
                return (
                    [],
                    f"placeholder {value!r} has no sample value (PLACEHOLDERS in {Path(__file__).name})",
                )
            value = PLACEHOLDERS[value]
        argv.append(key + sep + value)
    return argv, None


def gpu_finops_problem(argv: list[str]) -> str | None:
    """Why the CLI would refuse argv before running anything, or None."""
    argv, _verbose = cli.strip_verbose(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            if command not in cli.SUBCOMMANDS:
                cli.build_parser(_CheckingParser).parse_args(argv)
                return None
            _module, parser = cli.command_parser(command, _CheckingParser)
            index = argv.index(command)
            parser.parse_args(argv[:index] + argv[index + 1 :])
    except _Exited:
        return None
    except _Refused as exc:
        where = cli.PROJECT + (f" {command}" if command in cli.SUBCOMMANDS else "")
        return f"{where}: {exc}"
    return None


@cache
def make_database(makefile: Path = ROOT / "Makefile") -> tuple[frozenset[str], frozenset[str]]:
    """(targets, variables) from make's own database: `make -p -n -q` of a goal that does not exist, so
    make reads the Makefile, prints what it knows and runs nothing."""
    out = subprocess.run(
        ["make", "-p", "-n", "-q", "-r", "-f", str(makefile), ".gpu-finops-docs-no-such-goal"],
        cwd=makefile.parent,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    targets, variables, lines = set(), set(), out.splitlines()
    for i, line in enumerate(lines):
        if i and lines[i - 1].startswith("# Not a target"):
            continue
        if m := re.match(r"^([A-Za-z0-9][^\s:#=]*):(?!=)", line):
            targets.add(m[1])
        elif m := re.match(r"^([A-Za-z_][A-Za-z0-9_]*) *(?::|\?|\+|::)?= ", line):
            variables.add(m[1])
    return frozenset(targets), frozenset(variables)


@cache
def _python_sources() -> str:
    """The project's Python, not its tests (which spell out made-up names on purpose)."""
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True).stdout
    ours = [f for f in files.split() if not f.startswith("tests/") and (ROOT / f).is_file()]
    return "\n".join((ROOT / f).read_text(encoding="utf-8") for f in ours)


def _read_by_code(name: str) -> bool:
    """An environment variable the code reads (make exports its command line's variables to the recipes)."""
    return re.search(rf"[\"']{re.escape(name)}[\"']", _python_sources()) is not None


def make_problem(argv: list[str], makefile: Path = ROOT / "Makefile") -> str | None:
    targets, variables = make_database(makefile)
    for word in argv[1:]:
        if word.startswith("-"):
            return f"make option {word}: the docs' make commands take targets and VAR=value only"
        if "=" in word:
            name = word.split("=", 1)[0]
            if name not in variables and not _read_by_code(name):
                return f"make variable {name}: neither the Makefile nor the code reads it"
        elif word not in targets:
            near = sorted(t for t in targets if t[:2] == word[:2])
            return f"make has no target {word!r}" + (
                f" (targets starting alike: {', '.join(near)})" if near else ""
            )
    return None


def problems_in(file: str, text: str, makefile: Path = ROOT / "Makefile") -> tuple[int, list[str]]:
    """(commands checked, one line per command the CLI or make would refuse: file:line, command, why)."""
    shown, problems = shown_in(file, text)
    variables = dict(ASSIGNMENT.findall(text))
    seen: set[tuple[str, str]] = set()
    for s in shown:
        argv, why = _placeholders(s, variables)
        if why is None:
            why = (
                gpu_finops_problem(argv[1:])
                if Path(argv[0]).name == "gpu-finops"
                else make_problem(argv, makefile)
            )
        if why and s.inline and REQUIRED.search(why):
            why = None  # prose naming `gpu-finops cost export`; a code block must show the whole command
        if why and (str(s), why) not in seen:  # one line per reason, not per expansion of the notation
            seen.add((str(s), why))
            problems.append(f"{s}: {' '.join(argv or s.words)}: {why}")
    return len(shown), problems


def documents(root: Path = ROOT) -> list[Path]:
    """README.md, the reference docs (docs/*.md) and the dated log (docs/log/*.md)."""
    return [
        root / "README.md",
        *sorted((root / "docs").glob("*.md")),
        *sorted((root / "docs" / "log").glob("*.md")),
    ]
