"""Act 6's AWS reading path, offline: records the collector's own code priced from spot history go
through DynamoDB (moto), are read back per node, and are checked against prices the act derives itself
from the spot curve. A collector that fell back to on-demand, or priced the wrong zone, fails."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.stub import Stubber

from assertions.cost import CostObs, check_cost
from gpu_finops.clients.nodes import GpuNode
from gpu_finops.cost.collector import make_record
from gpu_finops.cost.pricing import AwsRates
from gpu_finops.cost.rates import OnDemandPrices, SpotPriceCurve, SpotPrices, SpotStep
from gpu_finops.cost.records import RATE_SPOT
from gpu_finops.facts import dcgm
from gpu_finops.facts.timestamps import iso
from harness.cost_table import expected_unit_prices, node_records, parse
from tests.gpu_finops.cost.aws_shapes import price_list_item, spot_record
from tests.gpu_finops.cost.test_store import _dynamo

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
NODE = GpuNode("ip-10-42-1-7.ec2.internal", "g6e.xlarge", "spot", "us-east-1a", "gpu-spot", "i-0abc", 1,
                 created=T0 + timedelta(seconds=20))  # fmt: skip
READINGS = {dcgm.GPU_UTIL: {"GPU-1": 100.0}, dcgm.SM_ACTIVE: {"GPU-1": 0.4582}}
# the spot price steps from 0.95 to 1.02 $/h in the middle of the second minute
HISTORY = [
    spot_record("g6e.xlarge", "us-east-1b", "0.30", T0 - timedelta(hours=1)),  # another zone: must be ignored
    spot_record("g6e.xlarge", "us-east-1a", "1.02", T0 + timedelta(seconds=90)),
    spot_record("g6e.xlarge", "us-east-1a", "0.95", T0 - timedelta(hours=2)),
]
CURVE = SpotPriceCurve([SpotStep(T0 - timedelta(hours=2), 0.95), SpotStep(T0 + timedelta(seconds=90), 1.02)])


def collector_records(spot_history: list[dict]) -> list:
    """What the in-cluster collector writes for three minutes of NODE, priced by its own rate book."""
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    pricing = boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    out = []
    with Stubber(ec2) as es, Stubber(pricing) as ps:
        ps.add_response("get_products", {"PriceList": [price_list_item("g6e.xlarge", "us-east-1", "1.861")]})
        rates = AwsRates(OnDemandPrices(pricing), SpotPrices(ec2))
        for i in range(3):
            start, end = T0 + timedelta(minutes=i), T0 + timedelta(minutes=i + 1)
            es.add_response(
                "describe_spot_price_history", {"SpotPriceHistory": spot_history, "NextToken": ""}
            )
            observed = (max(start, NODE.created), end)
            priced = rates.interval_cost(NODE, *observed)
            out.append(make_record(NODE, start, end, observed, priced, None, READINGS, grace_seconds=60))
    return out


def observe(boto_session, spot_history: list[dict]) -> CostObs:
    store = _dynamo(boto_session)
    store.upsert(collector_records(spot_history))
    records = node_records(store, NODE.name, iso(T0))
    prices = expected_unit_prices(records, CURVE.cost, NODE.created)
    return CostObs(
        NODE.name, records, prices, min_records=3, expected_rate_source=RATE_SPOT, node_created=NODE.created
    )


def test_records_read_back_from_dynamodb_agree_with_the_spot_curve(boto_session):
    o = observe(boto_session, HISTORY)
    v = check_cost(o)
    # the records alone: who held the node and that a load ran are the act's to observe, not the table's
    assert set(v.failed_clauses) == {"holdings_name_the_acts_pod", "sm_active_seen_while_the_load_ran"}, (
        v.render()
    )
    first = o.records[0]
    assert first["x_InstanceSeconds"] == 40  # the node came up 20 s into the first minute
    assert o.unit_price(first["ChargePeriodStart"]) == pytest.approx(0.95)
    assert o.unit_price(iso(T0 + timedelta(minutes=1))) == pytest.approx((0.95 * 30 + 1.02 * 30) / 60)


def test_a_collector_that_fell_back_to_on_demand_fails(boto_session):
    v = check_cost(observe(boto_session, []))  # no spot history: the collector charges on-demand, flagged
    assert not v.holds
    assert "charged from rate source 'fallback', expected 'spot'" in v.observed and "!= rate" in v.observed


def test_a_collector_that_priced_another_zone_fails(boto_session):
    other_zone = [{**r, "AvailabilityZone": "us-east-1a"} for r in HISTORY[:1]] + HISTORY[2:]
    v = check_cost(observe(boto_session, other_zone))
    assert not v.holds and "!= rate" in v.observed


def test_no_records_for_the_node_quotes_the_collector(boto_session):
    o = replace(
        observe(boto_session, HISTORY),
        records=[],
        collector_log=[
            "gpu-finops-collector-7d9: 2026-11-30 ERROR gpu_finops.cost.collector: no samples from Prometheus"
        ],
    )
    v = check_cost(o)
    assert not v.holds and "no samples from Prometheus" in v.observed


def test_no_collector_pod_is_said_and_quoted():
    from types import SimpleNamespace

    from harness.cost_table import collector_log

    core = SimpleNamespace(list_namespaced_pod=lambda ns, label_selector: SimpleNamespace(items=[]))
    log = collector_log(core, "gpu-monitoring")
    v = check_cost(CostObs(NODE.name, [], 1.0, collector_log=log, min_records=3))
    assert not v.holds and "no collector pod (app.kubernetes.io/name=gpu-finops-collector)" in v.observed


def test_expected_prices_cover_only_the_nodes_part_of_an_interval():
    records = [{"ChargePeriodStart": iso(T0), "ChargePeriodEnd": iso(T0 + timedelta(minutes=1))}]
    created = T0 + timedelta(seconds=80)  # after the interval: no part of it, no price
    assert expected_unit_prices(records, CURVE.cost, created) == {}
    assert parse("2026-11-30T12:00:00Z") == T0
