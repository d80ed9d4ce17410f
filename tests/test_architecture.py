"""The tree's shape (docs/architecture.md): small rooms, so no Python file of the repository is over
MAX_LINES lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 400


def python_files(root: Path = ROOT) -> list[Path]:
    """The repository's Python files: tracked, plus new ones git does not ignore (not .venv, not .local)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.py"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.fail(f"the tree's shape needs git to list the repository's files in {root}: {exc}")
    return [root / p for p in out.splitlines() if (root / p).is_file()]


def files_over(paths: list[Path], limit: int = MAX_LINES, root: Path = ROOT) -> list[str]:
    """Each file over `limit` lines, named with its count and what to do."""
    over = []
    for path in sorted(paths):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            over.append(
                f"{path.relative_to(root)}: {lines} lines, over {limit}: split it by concern "
                "(pure moves, a module per concern)"
            )
    return over


def test_no_python_file_is_over_the_limit():
    files = python_files()
    assert len(files) > 100, f"expected the repository's Python files, git listed {len(files)}"
    over = files_over(files)
    assert not over, "\n".join(over)


def test_a_file_at_the_limit_passes_and_one_line_over_is_named(tmp_path):
    at, over = tmp_path / "at.py", tmp_path / "over.py"
    at.write_text("x = 1\n" * MAX_LINES)
    over.write_text("x = 1\n" * (MAX_LINES + 1))
    assert files_over([at], root=tmp_path) == []
    assert files_over([at, over], root=tmp_path) == [
        f"over.py: {MAX_LINES + 1} lines, over {MAX_LINES}: split it by concern (pure moves, a module per concern)"
    ]
