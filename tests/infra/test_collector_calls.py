"""Every AWS call the collector makes, recorded from its code, is allowed by its role's policy
(synthesized) and by the permissions boundary, decided with iam/iam_eval.py.

The calls are not a hand-written list: `gpu-finops collect --once --rates aws --store dynamodb:...` runs
against the test Prometheus and the DCGM simulator, with every boto3 call recorded as botocore makes it
(`before-parameter-build`: the operation, its parameters and the client's region). EC2 and DynamoDB
answer from moto; the Pricing API and spot price history, which moto does not serve for these types,
answer from a canned AWS-shaped response, the way botocore's Stubber does (a `before-call` answer). One
node carries no capacity-type label (a self-managed node group's), so its capacity comes from EC2's
DescribeInstances (gpu_finops/cost/lifecycle.py); one is Karpenter's spot node. DynamoDB's calls on the table
encrypted with our key also make the KMS requests DynamoDB makes for the caller (test_collector_access.py's
table of them; a DynamoDB call not in it fails here, naming it)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from gpu_finops.cli import main
from gpu_finops.clients.promql import PrometheusClient
from gpu_finops.cost.collector import align
from gpu_finops.facts import dcgm
from harness.waits import eventually
from iam.ci_boundary import boundary_policy
from iam.iam_eval import Request, decide
from tests.gpu_finops.cost.aws_shapes import price_list_item, spot_record
from tests.gpu_finops.cost.conftest import gpu, prometheus, sim  # noqa: F401 (fixtures)
from tests.gpu_finops.cost.test_collector import wait_for_series
from tests.infra.test_collector_access import ACCOUNT, CALLS, KEY, KEY_TAGS, TABLE, VIA_DYNAMODB, C, resolved

ZONE = f"{C.region}a"


@dataclass(frozen=True)
class Call:
    action: str  # the IAM action: the service's signing name and the operation
    region: str
    params: dict[str, Any]


class Recorder:
    """Every API call of every boto3 client made from the default session after `install`."""

    def __init__(self) -> None:
        self.calls: list[Call] = []

    def install(self, session: boto3.Session) -> None:
        events = session._session.get_component("event_emitter")
        events.register("before-parameter-build.*.*", self.record)
        events.register("before-call.pricing.GetProducts", answer_get_products)
        events.register("before-call.ec2.DescribeSpotPriceHistory", answer_spot_history)

    def record(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        self.calls.append(
            Call(f"{model.service_model.signing_name}:{model.name}", context["client_region"], params)
        )


def _canned(parsed: dict[str, Any]) -> tuple[AWSResponse, dict[str, Any]]:
    return AWSResponse(None, 200, {}, None), {"ResponseMetadata": {"HTTPStatusCode": 200}, **parsed}


def answer_get_products(params: dict[str, Any], **_: Any):
    body = json.loads(params["body"])
    filters = {f["Field"]: f["Value"] for f in body["Filters"]}
    return _canned({"PriceList": [price_list_item(filters["instanceType"], filters["regionCode"], "1.861")],
                    "FormatVersion": "aws_v1"})  # fmt: skip


def answer_spot_history(params: dict[str, Any], **_: Any):
    body = params["body"]
    at = datetime.now(UTC) - timedelta(hours=2)
    return _canned(
        {"SpotPriceHistory": [spot_record(body["InstanceType.1"], body["AvailabilityZone"], "0.7", at)]}
    )


def requests_of(call: Call) -> list[Request]:
    """The IAM requests one recorded call makes: on the table (and DynamoDB's on our key), else on `*`
    (EC2's Describe calls and the Pricing API take no resource)."""
    region = {"aws:RequestedRegion": call.region}
    if not call.action.startswith("dynamodb:"):
        return [Request(call.action, "*", region)]
    tables = [call.params["TableName"]] if "TableName" in call.params else list(call.params["RequestItems"])
    assert tables == [C.cost_table], call
    op = call.action.split(":", 1)[1]
    assert op in CALLS, (
        f"{call.action}: add the KMS requests DynamoDB makes for it to test_collector_access.CALLS"
    )
    kms = [Request(a, KEY, region | VIA_DYNAMODB | KEY_TAGS) for a in CALLS[op][1]]
    return [Request(call.action, TABLE, region), *kms]


def nodes_file(path, spot_id: str, unlabelled_id: str) -> str:
    created = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def node(name: str, iid: str, capacity: dict[str, str]) -> dict:
        labels = {"node.kubernetes.io/instance-type": "g6e.xlarge", "topology.kubernetes.io/zone": ZONE}
        return {"metadata": {"name": name, "creationTimestamp": created, "labels": labels | capacity},
                "spec": {"providerID": f"aws:///{ZONE}/{iid}"},
                "status": {"capacity": {"nvidia.com/gpu": "1", "cpu": "4"}}}  # fmt: skip

    doc = {"apiVersion": "v1", "kind": "List", "items": [
        node("calls-spot", spot_id, {"karpenter.sh/capacity-type": "spot", "karpenter.sh/nodepool": "gpu-spot"}),
        node("calls-self-managed", unlabelled_id, {}),  # no capacity label: EC2 says
    ]}  # fmt: skip
    path.write_text(json.dumps(doc))
    return f"file:{path}"


@pytest.fixture
def recorded(sim, prometheus, boto_session, tmp_path, monkeypatch):  # noqa: F811
    """The calls of one `collect --once`, as its code makes them."""
    ec2 = boto_session.client("ec2")
    ids = [ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="g6e.xlarge")
           ["Instances"][0]["InstanceId"] for _ in range(2)]  # fmt: skip
    boto_session.resource("dynamodb").create_table(
        TableName=C.cost_table, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "ResourceId", "KeyType": "HASH"},
                   {"AttributeName": "ChargePeriodStart", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "ResourceId", "AttributeType": "S"},
                              {"AttributeName": "ChargePeriodStart", "AttributeType": "S"}],
    )  # fmt: skip
    sim.set_gpus([gpu("calls-spot", 0, sm=0.25), gpu("calls-self-managed", 0, sm=0.5)])
    prom = PrometheusClient(prometheus.url)
    for host in ("calls-spot", "calls-self-managed"):
        wait_for_series(prom, host, dcgm.SM_ACTIVE)
    seen = datetime.now(UTC)
    eventually(lambda: datetime.now(UTC), lambda t: align(t, 5) - timedelta(seconds=5) >= seen,
               timeout=15, interval=0.5, what="a complete 5 s interval with samples")  # fmt: skip
    session = boto3.Session(region_name=C.region)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", session)
    recorder = Recorder()
    recorder.install(session)
    code = main(["collect", "--once", "--interval", "5", "--prometheus-url", prometheus.url,
                 "--store", f"dynamodb:{C.cost_table}", "--nodes", nodes_file(tmp_path / "n.json", *ids),
                 "--rates", "aws", "--region", C.region, "--holdings", "none"])  # fmt: skip
    assert code == 0
    items = boto_session.resource("dynamodb").Table(C.cost_table).scan()["Items"]
    by_node = {i["ResourceName"]: i for i in items}
    assert by_node["calls-self-managed"]["x_CapacityType"] == "on-demand", by_node  # EC2's answer, used
    return recorder.calls


def test_every_aws_call_of_the_collector_is_allowed(recorded, synthesized):
    actions = {c.action for c in recorded}
    # what the run must have exercised for the test to mean anything (the list evaluated is `recorded`)
    assert {"ec2:DescribeInstances", "pricing:GetProducts", "ec2:DescribeSpotPriceHistory",
            "dynamodb:BatchWriteItem"} <= actions, sorted(actions)  # fmt: skip
    policy = synthesized.stack("cluster")["resource"]["aws_iam_role_policy"]["collector-policy"]["policy"]
    role, boundary = [resolved(policy)], [boundary_policy(C, ACCOUNT)]
    refused = [
        f"{r.action} on {r.resource} in {r.context['aws:RequestedRegion']} ({name}): {d.reason}"
        for call in recorded
        for r in requests_of(call)
        for name, policies in (("role policy", role), ("boundary", boundary))
        if not (d := decide(policies, r)).allowed
    ]
    assert refused == [], sorted(actions)
