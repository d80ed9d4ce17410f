"""The FOCUS project's own focus-validator, run over an exported Parquet file (shared by the fixture test in
tests/finops and the local target's exports in tests/local)."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
VALIDATOR = ROOT / ".tools" / "focus-validator" / "bin" / "focus-validator"
OVERRIDES = ROOT / "finops" / "focus-validator-overrides.yaml"


def validate(data: Path, tmp_path: Path, overrides: Path | None = OVERRIDES) -> dict[str, set[str]]:
    """Run focus-validator over one Parquet file; the rule ids it failed and errored, from its JUnit XML."""
    if not VALIDATOR.exists():
        pytest.fail(f"focus-validator not installed at {VALIDATOR}: run `make setup`")
    python = VALIDATOR.parent / "python"
    site = subprocess.run(
        [str(python), "-c", "import focus_validator, os; print(os.path.dirname(os.path.dirname(focus_validator.__file__)))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    report = tmp_path / f"validator-{data.parent.name}-{bool(overrides)}.xml"
    argv = [str(VALIDATOR), "--data-file", str(data), "--validate-version", "1.0",
            "--output-type", "unittest", "--output-destination", str(report)]  # fmt: skip
    if overrides:
        argv += ["--override-file", str(overrides)]
    # It reads its currency list from a path relative to the working directory: run it from site-packages.
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=site)
    assert result.returncode == 0 and report.exists(), result.stdout + result.stderr
    verdicts: dict[str, set[str]] = {"failed": set(), "errored": set(), "skipped": set(), "passed": set()}
    for case in ET.parse(report).getroot().iter("testcase"):
        rule = case.get("name", "").split(" :: ")[0]
        kind = next((k for k in ("failure", "error", "skipped") if case.find(k) is not None), None)
        verdicts[{"failure": "failed", "error": "errored", "skipped": "skipped", None: "passed"}[kind]].add(
            rule
        )
    return verdicts


def assert_accepted(data: Path, tmp_path: Path) -> dict[str, set[str]]:
    """focus-validator accepts the file: no rule failed or errored, exactly the overridden rules skipped,
    and the rules this project most needs to pass did."""
    verdicts = validate(data, tmp_path)
    assert verdicts["failed"] == set() and verdicts["errored"] == set(), (data, verdicts)
    assert verdicts["skipped"] == set(yaml.safe_load(OVERRIDES.read_text())["overrides"]), (data, verdicts)
    assert {"EffectiveCost_NotNull", "BilledCost_Required", "Tags_IsJSONObject"} <= verdicts["passed"], (
        data,
        verdicts,
    )
    return verdicts
