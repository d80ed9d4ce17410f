"""Capacity type where no label says it: EC2's InstanceLifecycle (botocore's Stubber checks each call
against the EC2 API model), cached per instance; and pricing says when it had to price without knowing."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import boto3
from botocore.stub import Stubber

from gpu_finops.clients.nodes import node_facts_from_dict
from gpu_finops.cost.lifecycle import SOURCE, Ec2Lifecycle, LifecycleNodeSource
from gpu_finops.cost.pricing import CatalogRates
from tests.gpu_finops.cost.conftest import FakeNodes, node

T0 = datetime(2026, 12, 1, tzinfo=UTC)
RATES = CatalogRates({("g6e.xlarge", "on-demand"): 1.861, ("g6e.xlarge", "spot"): 0.95})


def ec2_with(stub_answers: list[tuple[list[str], list[dict]]]):
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(ec2)
    for ids, instances in stub_answers:
        stubber.add_response("describe_instances", {"Reservations": [{"Instances": instances}]},
                             {"InstanceIds": ids})  # fmt: skip
    stubber.activate()
    return ec2, stubber


def test_unlabelled_nodes_get_ec2s_lifecycle_once_and_labelled_ones_are_left_alone():
    unlabelled = [dataclasses.replace(node(n), capacity_type=None, instance_id=i)
                  for n, i in (("self-a", "i-0a"), ("self-b", "i-0b"))]  # fmt: skip
    labelled = node("karp")  # karpenter.sh/capacity-type said on-demand
    ec2, stubber = ec2_with([(["i-0a", "i-0b"], [{"InstanceId": "i-0a", "InstanceLifecycle": "spot"},
                                                   {"InstanceId": "i-0b"}])])  # fmt: skip
    source = LifecycleNodeSource(FakeNodes([*unlabelled, labelled]), Ec2Lifecycle(ec2))
    for _ in range(3):  # a steady fleet: one call, then the cache
        got = {n.name: (n.capacity_type, n.capacity_source) for n in source.gpu_nodes()}
    stubber.assert_no_pending_responses()
    assert got == {"self-a": ("spot", SOURCE), "self-b": ("on-demand", SOURCE), "karp": ("on-demand", None)}
    assert source.lifecycle.calls == 1


def test_a_failed_call_leaves_the_capacity_unknown_and_pricing_says_so():
    ec2, stubber = ec2_with([])
    stubber.add_client_error("describe_instances", "UnauthorizedOperation", http_status_code=403)
    bare = dataclasses.replace(node("self-c"), capacity_type=None, instance_id="i-0c")
    (got,) = LifecycleNodeSource(FakeNodes([bare]), Ec2Lifecycle(ec2)).gpu_nodes()
    assert got.capacity_type is None
    priced = RATES.interval_cost(got, T0, T0 + timedelta(hours=1))
    assert (
        priced.cost == 1.861 and priced.message == "node self-c has no capacity type label: priced on-demand"
    )


def test_a_node_labelled_only_eks_spot_is_priced_spot():
    eks = node_facts_from_dict({
        "metadata": {"name": "mng-1", "creationTimestamp": "2026-12-01T00:00:00Z",
                     "labels": {"eks.amazonaws.com/capacityType": "SPOT",
                                "node.kubernetes.io/instance-type": "g6e.xlarge"}},
        "status": {"capacity": {"nvidia.com/gpu": "1"}},
    })  # fmt: skip
    priced = RATES.interval_cost(eks, T0, T0 + timedelta(hours=1))
    assert priced.cost == 0.95 and priced.message is None
