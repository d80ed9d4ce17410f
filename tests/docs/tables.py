"""Markdown tables as the docs write them, read line by line: each body row with its 1-based line and its
cells, and the code spans in a cell. A table is a run of lines starting with `|`; its first line is the
header and its second the `|---|` separator. `\\|` inside a cell is a literal bar, not a cell boundary."""

from __future__ import annotations

import re
from dataclasses import dataclass

CODE = re.compile(r"`([^`]+)`")
SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
# a file named without a folder: `collector.py`, `rules.yaml`, `dcgm_field_names.json`
BARE_FILE = re.compile(r"^[\w.-]+\.(?:py|ya?ml|json|toml|go|mod|sum|csv|txt|cfg|ini)$")


@dataclass(frozen=True)
class Row:
    line: int  # 1-based line of the row in its document
    cells: tuple[str, ...]
    header: tuple[str, ...]  # the table's header cells


def cells(line: str) -> tuple[str, ...]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return tuple(c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body))


def rows(text: str) -> list[Row]:
    """Every body row of every table in `text` (header and separator lines are not rows)."""
    out: list[Row] = []
    lines = text.splitlines()
    in_fence = False
    header: tuple[str, ...] | None = None
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            header = None
            continue
        if in_fence or not line.lstrip().startswith("|"):
            header = None
            continue
        if header is None:
            header = cells(line)
        elif not SEPARATOR.match(line.strip()):
            out.append(Row(n, cells(line), header))
    return out


def codes(cell: str) -> list[str]:
    """The code spans of a cell, in order."""
    return CODE.findall(cell)


def section(text: str, heading: str) -> tuple[int, str]:
    """(the 0-based line offset, the text) of the `## heading` section: up to the next heading of its level
    or above, outside code blocks; (0, "") when there is no such heading."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == heading), None)
    if start is None:
        return 0, ""
    level = len(heading.split(" ", 1)[0])
    in_fence, end = False, len(lines)
    for i in range(start + 1, len(lines)):
        if lines[i].lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and re.match(rf"^#{{1,{level}}} ", lines[i]):
            end = i
            break
    return start, "\n".join(lines[start:end])
