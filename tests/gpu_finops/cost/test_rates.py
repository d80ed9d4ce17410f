"""Rates through botocore's Stubber with AWS-shaped responses: pricing filters, pagination, spot steps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.stub import Stubber

from gpu_finops.cost.rates import (
    OnDemandPrices,
    RateUnavailable,
    SpotPriceCurve,
    SpotPrices,
    SpotStep,
    pricing_filters,
)
from tests.gpu_finops.cost.aws_shapes import price_list_item, spot_record

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def pricing():
    client = boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stub:
        yield client, stub


@pytest.fixture
def ec2():
    client = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        yield client, stub


def expect_products(
    stub: Stubber, items: list[str], token: str | None = None, after: str | None = None
) -> None:
    params = {
        "ServiceCode": "AmazonEC2",
        "Filters": pricing_filters("g6e.xlarge", "us-east-1"),
        "FormatVersion": "aws_v1",
        "MaxResults": 100,
    }
    if after:
        params["NextToken"] = after
    response = {"FormatVersion": "aws_v1", "PriceList": items}
    if token:
        response["NextToken"] = token
    stub.add_response("get_products", response, params)


def test_filters_select_plain_on_demand_linux_not_capacity_blocks():
    fields = {f["Field"]: f["Value"] for f in pricing_filters("p5.48xlarge", "us-west-2")}
    assert fields == {
        "instanceType": "p5.48xlarge",
        "regionCode": "us-west-2",
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        "marketoption": "OnDemand",
    }


def test_on_demand_price_follows_pages_and_is_cached(pricing):
    client, stub = pricing
    expect_products(stub, [], token="page2")  # a short first page with a NextToken
    expect_products(stub, [price_list_item("g6e.xlarge", "us-east-1", "1.8610000000")], after="page2")
    prices = OnDemandPrices(client, clock=lambda: 1000.0)
    assert prices.get("g6e.xlarge", "us-east-1").usd_per_hour == pytest.approx(1.861)
    assert prices.get("g6e.xlarge", "us-east-1").usd_per_hour == pytest.approx(1.861)  # cached: no 3rd call
    stub.assert_no_pending_responses()
    assert prices.api_calls == 2


def test_on_demand_price_refreshes_after_12h_and_keeps_last_good_price_flagged_when_api_fails(pricing):
    client, stub = pricing
    now = [0.0]
    expect_products(stub, [price_list_item("g6e.xlarge", "us-east-1", "1.861")])
    stub.add_client_error("get_products", "ThrottlingException", "Rate exceeded")
    prices = OnDemandPrices(client, clock=lambda: now[0])
    fresh = prices.get("g6e.xlarge", "us-east-1")
    assert not fresh.stale
    now[0] = 12 * 3600 + 1
    stale = prices.get("g6e.xlarge", "us-east-1")
    assert stale.stale and stale.usd_per_hour == pytest.approx(1.861)


def test_no_price_and_nothing_cached_is_an_error_not_zero(pricing):
    client, stub = pricing
    stub.add_client_error("get_products", "ServiceUnavailableException", "down")
    with pytest.raises(RateUnavailable, match="no on-demand price for g6e.xlarge"):
        OnDemandPrices(client).get("g6e.xlarge", "us-east-1")


def test_two_different_prices_for_one_filter_is_refused(pricing):
    client, stub = pricing
    expect_products(
        stub,
        [
            price_list_item("g6e.xlarge", "us-east-1", "1.861"),
            price_list_item("g6e.xlarge", "us-east-1", "0.93", capacity="AllocatedCapacityReservation"),
        ],
    )
    with pytest.raises(RateUnavailable, match="2 different on-demand prices"):
        OnDemandPrices(client).get("g6e.xlarge", "us-east-1")


def test_spot_history_unsorted_duplicated_paged_and_mixed_zones(ec2):
    client, stub = ec2
    page1 = [
        spot_record("g6e.xlarge", "us-east-1a", "0.60", T0 + timedelta(seconds=30)),
        spot_record("g6e.xlarge", "us-east-1b", "9.99", T0),  # another zone: ignored
        spot_record("g6e.xlarge", "us-east-1a", "0.50", T0 - timedelta(hours=3)),
    ]
    page2 = [
        spot_record("g6e.xlarge", "us-east-1a", "0.60", T0 + timedelta(seconds=30)),  # duplicate
        spot_record("g6e.xlarge", "us-east-1a", "0.40", T0 - timedelta(hours=5)),
    ]
    stub.add_response("describe_spot_price_history", {"SpotPriceHistory": page1, "NextToken": "t2"})
    stub.add_response("describe_spot_price_history", {"SpotPriceHistory": page2, "NextToken": ""})
    curve = SpotPrices(client).curve("g6e.xlarge", "us-east-1a", T0, T0 + timedelta(seconds=60))
    assert [s.usd_per_hour for s in curve.steps] == [0.40, 0.50, 0.60]
    # 30 s at 0.50 $/h, then 30 s at 0.60 $/h
    assert curve.cost(T0, T0 + timedelta(seconds=60)) == pytest.approx((0.50 * 30 + 0.60 * 30) / 3600)


def test_spot_price_before_first_record_is_an_error():
    curve = SpotPriceCurve([SpotStep(T0, 0.5)])
    with pytest.raises(RateUnavailable, match="no spot price in effect"):
        curve.cost(T0 - timedelta(seconds=10), T0 + timedelta(seconds=10))


def test_spot_price_at_is_latest_record_at_or_before_t():
    curve = SpotPriceCurve([SpotStep(T0 + timedelta(seconds=10), 0.7), SpotStep(T0, 0.5)])
    assert curve.price_at(T0) == 0.5
    assert curve.price_at(T0 + timedelta(seconds=9)) == 0.5
    assert curve.price_at(T0 + timedelta(seconds=10)) == 0.7


def test_empty_spot_history_is_an_error(ec2):
    client, stub = ec2
    stub.add_response("describe_spot_price_history", {"SpotPriceHistory": []})
    with pytest.raises(RateUnavailable, match="no spot price history"):
        SpotPrices(client).curve("g6e.xlarge", "us-east-1a", T0, T0 + timedelta(seconds=60))
