"""Preflight's checks of the nightly's permissions boundary (moto) and of spot offerings of each GPU instance
type in each zone of our subnets (botocore's Stubber): the passing outcome and each failing one, with the
message that names the missing thing and what to do."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from gpu_finops.facts.config import Config
from iam.ci_policies import boundary_arn, boundary_policy_name
from infra.preflight import Preflight

ACCOUNT = "123456789012"  # moto's
C = Config(allowed_accounts=(ACCOUNT,))
ZONES, TYPES = list(C.availability_zones), list(C.gpu_instance_types)


def test_the_boundary_that_exists_passes(boto_session):
    doc = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    boto_session.client("iam").create_policy(
        PolicyName=boundary_policy_name(C), PolicyDocument=json.dumps(doc)
    )
    check = Preflight(C, boto_session).boundary(ACCOUNT)
    assert check.ok and check.detail == f"{boundary_arn(C, ACCOUNT)} exists"


def test_a_missing_boundary_names_it_and_the_stack_that_makes_it(boto_session):
    check = Preflight(C, boto_session).boundary(ACCOUNT)
    assert not check.ok
    assert check.detail.startswith(f"arn:aws:iam::{ACCOUNT}:policy/{boundary_policy_name(C)} does not exist")
    assert "apply the ci-role stack first" in check.detail


def test_run_reports_the_boundary_check(boto_session):
    checks = {c.name: c for c in Preflight(C, boto_session, which=lambda _: "/usr/bin/x").run()}
    assert not checks["permissions boundary"].ok


def stubbed(offered: set[tuple[str, str]], priced: set[tuple[str, str]]) -> Preflight:
    ec2 = boto3.client("ec2", region_name=C.region, aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(ec2)
    stub.add_response(
        "describe_instance_type_offerings",
        {
            "InstanceTypeOfferings": [
                {"InstanceType": t, "LocationType": "availability-zone", "Location": z}
                for t, z in sorted(offered)
            ]
        },
        {
            "LocationType": "availability-zone",
            "Filters": [{"Name": "instance-type", "Values": TYPES}, {"Name": "location", "Values": ZONES}],
        },
    )
    stub.add_response(
        "describe_spot_price_history",
        {
            "SpotPriceHistory": [
                {
                    "InstanceType": t,
                    "AvailabilityZone": z,
                    "SpotPrice": "0.95",
                    "ProductDescription": "Linux/UNIX",
                    "Timestamp": datetime.now(UTC),
                }
                for t, z in sorted(priced)
            ]
        },
        {"InstanceTypes": TYPES, "ProductDescriptions": ["Linux/UNIX"], "StartTime": ANY},
    )
    stub.activate()
    session: Any = type("S", (), {"client": lambda self, *a, **k: ec2})()
    return Preflight(C, session)


EVERY = {(t, z) for t in TYPES for z in ZONES}


def test_every_type_spot_in_every_zone_passes():
    check = stubbed(EVERY, EVERY).spot_offerings()
    assert check.ok, check.detail
    assert check.detail == f"{', '.join(TYPES)} spot in {', '.join(ZONES)}"


def test_a_type_not_offered_in_a_zone_is_named_with_what_to_do():
    gone = (TYPES[0], ZONES[1])
    check = stubbed(EVERY - {gone}, EVERY - {gone}).spot_offerings()
    assert not check.ok
    assert check.detail.startswith(f"{gone[0]} in {gone[1]}: not offered: choose availability_zones")
    assert "gpu_finops/facts/config.yaml" in check.detail


def test_a_type_offered_but_without_spot_price_is_named():
    gone = (TYPES[-1], ZONES[0])
    check = stubbed(EVERY, EVERY - {gone}).spot_offerings()
    assert not check.ok
    assert check.detail.startswith(f"{gone[0]} in {gone[1]}: no spot price: choose")


def test_an_unreadable_offerings_api_is_a_failed_check_not_a_pass():
    ec2 = boto3.client("ec2", region_name=C.region, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_instance_type_offerings", "UnauthorizedOperation", "denied")
        session: Any = type("S", (), {"client": lambda self, *a, **k: ec2})()
        check = Preflight(C, session).spot_offerings()
    assert not check.ok and "UnauthorizedOperation" in check.detail


@pytest.mark.parametrize("types", [TYPES])
def test_moto_answers_both_calls_for_our_types(boto_session, types):
    """The real request shapes against moto's EC2 (botocore validates the parameters on the way out)."""
    check = Preflight(C, boto_session).spot_offerings()
    assert check.name == "spot offerings" and (check.ok or "gpu_finops/facts/config.yaml" in check.detail), (
        check.detail
    )
