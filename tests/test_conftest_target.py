"""The --target switch: tests for a target not selected are skipped with the reason, never run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_pytest(tmp_path: Path, target: str) -> str:
    test = tmp_path / "test_markers_probe.py"
    test.write_text(
        textwrap.dedent("""
        import pytest

        @pytest.mark.live
        def test_needs_aws():
            raise AssertionError("a live test must never run without TARGET=aws")

        @pytest.mark.local
        def test_needs_local():
            pass
    """)
    )
    # The project's own conftest.py, next to a probe test, in a folder of its own.
    (tmp_path / "conftest.py").write_text((ROOT / "conftest.py").read_text())
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n  live: x\n  local: x\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider", f"--target={target}", str(test)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    return result.stdout + result.stderr


def test_live_tests_skip_with_reason_on_local(tmp_path):
    out = run_pytest(tmp_path, "local")
    assert "1 passed, 1 skipped" in out
    assert "needs TARGET=aws" in out


def test_local_tests_skip_with_reason_on_aws(tmp_path):
    out = run_pytest(tmp_path, "aws")
    assert "1 skipped" in out and "1 failed" in out  # the live test ran (and raised) only on aws
    assert "needs TARGET=local" in out
