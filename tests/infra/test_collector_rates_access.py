"""The collector's price calls (`--rates aws`: gpu_finops/cost/cli_collect.py rate_book), with the region each client
really signs for, decided against the collector role's policy and the boundary (iam/iam_eval.py):
`pricing:GetProducts` goes to the Pricing API's endpoint region (gpu_finops.cost.rates.PRICING_REGION, us-east-1)
whatever the cluster's region; `ec2:DescribeSpotPriceHistory` to the cluster's region. The DynamoDB and KMS
calls are in test_collector_access.py. Both in the default region and in one where the two differ."""

from __future__ import annotations

import json

import pytest

from gpu_finops.cost.rates import PRICING_REGION
from gpu_finops.facts.config import Config
from iam.ci_boundary import boundary_policy
from iam.iam_eval import Request, decide
from iam.iam_policies import collector

ACCOUNT = "123456789012"
TABLE, KEY = "arn:aws:dynamodb:{r}:123456789012:table/t", "arn:aws:kms:{r}:123456789012:key/k"


def requests(c: Config) -> list[Request]:
    # gpu_finops/cost/rates.py: OnDemandPrices.get -> get_products (client in PRICING_REGION);
    # SpotPrices.curve -> describe_spot_price_history (client in the cluster's region)
    return [
        Request("pricing:GetProducts", "*", {"aws:RequestedRegion": PRICING_REGION}),
        Request("ec2:DescribeSpotPriceHistory", "*", {"aws:RequestedRegion": c.region}),
    ]


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1"])
def test_the_collectors_price_calls_are_allowed(region):
    c = Config(allowed_accounts=(ACCOUNT,), region=region, availability_zones=(f"{region}a", f"{region}b"))
    role = json.loads(collector(TABLE.format(r=region), KEY.format(r=region), region))
    refused = [
        f"{r.action} in {r.context['aws:RequestedRegion']} ({name}): {d.reason}"
        for r in requests(c)
        for name, policies in (("role policy", [role]), ("boundary", [boundary_policy(c, ACCOUNT)]))
        if not (d := decide(policies, r)).allowed
    ]
    assert refused == []


def test_spot_history_in_another_region_is_refused():
    c = Config(allowed_accounts=(ACCOUNT,))
    role = json.loads(collector(TABLE.format(r=c.region), KEY.format(r=c.region), c.region))
    other = Request("ec2:DescribeSpotPriceHistory", "*", {"aws:RequestedRegion": "eu-west-1"})
    assert not decide([role], other).allowed
