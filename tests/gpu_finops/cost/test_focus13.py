"""FOCUS 1.3's split cost allocation columns (`cost export --focus-version 1.3`): each normative requirement of
the columns we write (tests/gpu_finops/cost/focus13_requirements.py quotes them) holds on the export and fails, with its
reason, on a row that breaks it; and focus-validator (FOCUS 1.2 rules) still accepts the 1.3 dataset."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from gpu_finops.cli import main
from gpu_finops.cost.export import athena_ddl, schema, write_dataset
from gpu_finops.cost.focus import FOCUS_COLUMNS, columns, focus_dataset
from gpu_finops.cost.focus13 import FOCUS13_COLUMNS, ratios
from tests.gpu_finops.cost.focus13_requirements import REQUIREMENTS, SPEC
from tests.gpu_finops.cost.focus_fixtures import CTX
from tests.gpu_finops.cost.focus_validator import assert_accepted
from tests.gpu_finops.cost.test_focus_export import HOLDINGS, RECORDS, _store


@pytest.fixture(scope="module")
def rows13() -> list[dict]:
    return focus_dataset(RECORDS, HOLDINGS, CTX, "1.3").rows


@pytest.mark.parametrize("req", REQUIREMENTS, ids=[f"{r.column}:{r.text[:50]}" for r in REQUIREMENTS])
def test_each_requirement_holds_on_a_conformant_row_and_fails_on_a_violating_one(rows13, req):
    assert req.check(rows13) == [], f"{SPEC} {req.column}: {req.text}"
    broken = copy.deepcopy(rows13)
    req.violate(broken)
    violations = req.check(broken)
    assert len(violations) >= 1, f"{SPEC} {req.column}: the violating row passed: {req.text}"
    named = (
        req.column if not req.column.startswith("(") else ("differs" if "dimension" in req.text else "sums")
    )
    assert all(named in v for v in violations), violations


def test_the_written_parquet_meets_every_requirement(rows13, tmp_path):
    write_dataset(focus_dataset(RECORDS, HOLDINGS, CTX, "1.3"), str(tmp_path))
    read = [
        r
        for f in sorted(tmp_path.glob("billing_period=*/focus.parquet"))
        for r in pq.read_table(f).to_pylist()
    ]
    assert len(read) == len(rows13)
    for req in REQUIREMENTS:
        assert req.check(read) == [], (req.text, req.check(read))


def test_one_split_row_explained(rows13):
    """The row docs/finops.md explains: team-a's part of gpu-a's first minute."""
    row = rows13[0]
    assert (row["ResourceName"], row["x_Tenant"], row["EffectiveCost"]) == (
        "gpu-a",
        "team-a",
        Decimal("0.023263"),
    )
    assert json.loads(row["AllocatedMethodDetails"]) == {
        "Elements": [{"AllocatedRatio": 0.75, "UsageUnit": "GPU-Seconds", "UsageQuantity": 45.0}],
        "x_AllocatedRatioExact": "3/4",
    }
    assert (row["AllocatedMethodId"], row["AllocatedResourceId"], row["AllocatedResourceName"]) == (
        "gpu-finops/gpu-seconds", "team-a/team-a", "tenant team-a, namespace team-a")  # fmt: skip
    assert json.loads(row["AllocatedTags"]) == {
        "gpu-finops.io/tenant": "team-a",
        "kubernetes.io/namespace": "team-a",
    }
    assert json.loads(row["Tags"]) == {"karpenter.sh/nodepool": "gpu-spot"}
    assert row["ChargeDescription"] == "g6e.xlarge spot instance hours of GPU node gpu-a"
    assert (row["ServiceProviderName"], row["HostProviderName"], row["ProviderName"]) == ("AWS", "AWS", "AWS")
    docs = (Path(__file__).resolve().parents[3] / "docs" / "finops.md").read_text()
    for text in (row["AllocatedMethodDetails"], row["AllocatedTags"], row["Tags"], row["ChargeDescription"]):
        assert f"`{text}`" in docs, text


def test_ratios_sum_to_exactly_one_on_thirds():
    parts = ratios([Fraction(1, 3)] * 3)
    assert sum(parts) == 1 and parts == [
        Decimal("0.333333333334"),
        Decimal("0.333333333333"),
        Decimal("0.333333333333"),
    ]
    assert [repr(float(p)) for p in parts] == ["0.333333333334", "0.333333333333", "0.333333333333"]


def test_12_stays_the_default_and_13_adds_only_its_columns():
    assert list(columns("1.3")) == sorted(FOCUS_COLUMNS | FOCUS13_COLUMNS) + [
        c for c in columns("1.2") if c.startswith("x_")
    ]
    assert set(columns("1.3")) - set(columns("1.2")) == set(FOCUS13_COLUMNS)
    assert (
        schema() == schema("1.2")
        and "AllocatedTags" not in athena_ddl()
        and "`AllocatedTags` string" in athena_ddl(version="1.3")
    )
    with pytest.raises(ValueError, match=r"FOCUS version '1.4': expected one of 1.2, 1.3"):
        columns("1.4")


def test_cli_writes_13_by_flag(tmp_path, capsys):
    store = _store(tmp_path)
    out = tmp_path / "export13"
    assert main(["cost", "export", "--out", str(out), "--store", store, "--focus-version", "1.3",
                 "--holdings", f"file:{tmp_path / 'holdings.json'}"]) == 0  # fmt: skip
    assert "FOCUS 1.3:" in capsys.readouterr().out
    names = pq.read_table(out / "billing_period=2026-11" / "focus.parquet").column_names
    assert set(FOCUS13_COLUMNS) <= set(names)
    with pytest.raises(SystemExit) as exc:
        main(["cost", "export", "--out", str(out), "--store", store, "--focus-version", "1.4"])
    assert exc.value.code == 2 and "invalid choice: '1.4'" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("period", ["2026-11", "2026-12"])
def test_focus_validator_accepts_the_13_dataset_as_12(tmp_path, period):
    """2.2.1 knows FOCUS 1.2 only; it reads the 1.3 dataset whole (the 1.3 columns are outside its rules) and
    every 1.2 rule gives the same verdicts as on the 1.2 export."""
    write_dataset(focus_dataset(RECORDS, HOLDINGS, CTX, "1.3"), str(tmp_path / "focus13"))
    assert_accepted(tmp_path / "focus13" / f"billing_period={period}" / "focus.parquet", tmp_path)
