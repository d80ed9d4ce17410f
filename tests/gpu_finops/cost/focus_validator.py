"""The FOCUS project's own focus-validator, run over an exported Parquet file (shared by the fixture test in
tests/gpu_finops/cost and the local target's exports in tests/local).

`make setup` installs 2.2.1 (FOCUS 1.2 rules) with a Python 3.12 found on the machine, else 1.0.0 (FOCUS 1.0
rules, the newest release that installs on 3.11). Both run every rule they have, and the rules that fail must
be exactly those `gpu_finops/cost/focus-validator-overrides.yaml` lists for the installed version, each with its reason
(2.x has no override option, so nothing is skipped on our say-so)."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
VALIDATOR = ROOT / ".tools" / "focus-validator" / "bin" / "focus-validator"
OVERRIDES = ROOT / "gpu_finops" / "cost" / "focus-validator-overrides.yaml"

# FOCUS 1.2's applicability criteria that hold for EC2 GPU instances as the export prices them. A rule whose
# criteria are not all given is skipped as "not applicable", so each one left out is a rule not checked.
APPLICABILITY = {
    "AVAILABILITY_ZONE_SUPPORTED": "instances run in an availability zone: AvailabilityZone is set",
    "REGION_SUPPORTED": "instances run in a region: RegionId and RegionName are set",
    "TAGGING_SUPPORTED": "EC2 and Kubernetes labels: Tags carries tenant, namespace and node pool",
    "PUBLIC_PRICE_LIST_SUPPORTED": "EC2's on-demand price list: ListUnitPrice, ListCost",
    "UNIT_PRICING_SUPPORTED": "a price per instance-hour: the unit price columns",
    "USAGE_MEASUREMENT_SUPPORTED": "instance-hours measured: ConsumedQuantity, ConsumedUnit",
    "BILLING_BASED_ON_PROVISIONED_RESOURCES_SUPPORTED": "an instance is billed while it runs: ResourceId",
    "RESOURCE_TYPE_ASSIGNMENT_SUPPORTED": "ResourceType `Virtual Machine`",
    "MULTIPLE_PRICING_CATEGORIES_SUPPORTED": "on-demand (Standard) and spot (Dynamic)",
    "CAPACITY_RESERVATION_SUPPORTED": "EC2 sells capacity reservations (these rows use none: null)",
    "COMMITMENT_DISCOUNT_SUPPORTED": "Savings Plans and Reserved Instances (these rows use none: null)",
    "ACCOUNT_NAMING_SUPPORTED": "AWS accounts have names: BillingAccountName",
    "SUB_ACCOUNT_SUPPORTED": "AWS member accounts: SubAccountId/Name (null unless given)",
}
# Left out, and why: NEGOTIATED_PRICING_SUPPORTED (AWS negotiates private pricing, but no negotiated rate is
# known here, so ContractedUnitPrice is the list price and the rows claim none); PRICING_BILLING_CURRENCY_
# DIFFERENCES_SUPPORTED and VIRTUAL_CURRENCY_SUPPORTED (USD prices billed in USD); MULTIPLE_SUB_ACCOUNT_TYPES_
# SUPPORTED and MULTIPLE_BILLING_ACCOUNT_TYPES_SUPPORTED (one kind of AWS account; the export has no
# SubAccountType or BillingAccountType column).

# The rules this project most needs to pass, per validator version.
MUST_PASS = {
    "2.2.1": {
        "EffectiveCost-C-003-M",  # EffectiveCost MUST NOT be null.
        "EffectiveCost-C-001-M",  # EffectiveCost MUST be of type Decimal.
        "BilledCost-C-000-M",  # the BilledCost column's requirements, all of them
        "ListCost-C-009-C",  # ListUnitPrice x PricingQuantity MUST match ListCost
        "BillingCurrency-C-003-M",  # CurrencyFormat
        "ChargePeriodStart-C-002-M",  # DateTimeFormat
        "Tags-C-001-M",  # KeyValueFormat
        "SkuPriceId-C-005-C",  # not null on Usage rows
        "InvoiceId-C-004-C",  # null when the charge is not on an invoice
        "CapacityReservationStatus-C-003-C",  # null when CapacityReservationId is null
        "CommitmentDiscountStatus-C-003-C",  # null when CommitmentDiscountId is null
    },
    "1.0.0": {
        "EffectiveCost_NotNull",
        "BilledCost_Required",
        "ListCost_IsDecimal",
        "Tags_IsJSONObject",
        "BillingCurrency_IsCurrencyCode",
        "ChargePeriodStart_IsDateTime",
    },
}


@cache
def installed() -> tuple[str, str]:
    """(focus-validator's version, its site-packages) from its tool venv."""
    if not VALIDATOR.exists():
        pytest.fail(f"focus-validator not installed at {VALIDATOR}: run `make setup`")
    code = ("import importlib.metadata as m, os, focus_validator as f; "
            "print(m.version('focus-validator')); print(os.path.dirname(os.path.dirname(f.__file__)))")  # fmt: skip
    out = subprocess.run(
        [str(VALIDATOR.parent / "python"), "-c", code], capture_output=True, text=True, check=True
    )
    version, site = out.stdout.split()
    if version not in MUST_PASS:
        pytest.fail(
            f"focus-validator {version} at {VALIDATOR}: expected one of {sorted(MUST_PASS)}; rerun `make setup`"
        )
    return version, site


def expected_failures(version: str | None = None) -> dict[str, str]:
    """The rules `gpu_finops/cost/focus-validator-overrides.yaml` lists for this validator version, with their reasons."""
    return dict(yaml.safe_load(OVERRIDES.read_text())[version or installed()[0]])


def validate(data: Path, tmp_path: Path) -> dict[str, set[str]]:
    """Run focus-validator over one Parquet file; the rule ids that passed, failed, errored and were skipped,
    from its JUnit XML."""
    version, site = installed()
    report = tmp_path / f"validator-{data.parent.name}.xml"
    argv = [
        str(VALIDATOR),
        "--data-file",
        str(data),
        "--output-type",
        "unittest",
        "--output-destination",
        str(report),
    ]
    if version == "1.0.0":
        argv += ["--validate-version", "1.0"]
    else:  # the bundled 1.2 model only: nothing is downloaded
        argv += [
            "--validate-version",
            "1.2",
            "--block-download",
            "--applicability-criteria",
            ",".join(APPLICABILITY),
        ]
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
    assert verdicts["passed"], f"focus-validator {version} passed no rule on {data}: {result.stdout[-2000:]}"
    return verdicts


def assert_accepted(data: Path, tmp_path: Path) -> dict[str, set[str]]:
    """focus-validator accepts the file: no rule errored, the rules that failed are exactly those the overrides
    file lists (with reasons) for this version, and the rules this project most needs passed."""
    verdicts = validate(data, tmp_path)
    version = installed()[0]
    assert verdicts["errored"] == set(), (data, verdicts["errored"])
    assert verdicts["failed"] == set(expected_failures()), (data, version, verdicts["failed"])
    assert MUST_PASS[version] <= verdicts["passed"], (data, MUST_PASS[version] - verdicts["passed"])
    return verdicts
