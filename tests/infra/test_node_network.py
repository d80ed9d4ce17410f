"""A Karpenter GPU node gets a network: the security groups its EC2NodeClass selects, with EKS's cluster
group, allow every flow EKS documents nodes need (tests/infra/node_network.py)."""

from __future__ import annotations

import copy

import pytest

from gpu_finops.facts.config import load_config
from gpu_finops.facts.kube_keys import LABEL_DISCOVERY
from tests.infra.node_network import EKS_CLUSTER_SG, Rule, node_network_failures

C = load_config()


@pytest.fixture(scope="module")
def cluster(synthesized) -> dict:
    return synthesized.stack("cluster")


@pytest.fixture(scope="module")
def nodeclass(synthesized) -> dict:
    return next(d for d in synthesized.chart_docs("karpenter.yaml") if d["kind"] == "EC2NodeClass")


def test_a_gpu_node_can_make_every_flow_eks_documents(cluster, nodeclass):
    assert node_network_failures(cluster, nodeclass, C.vpc_cidr) == []


def test_the_node_class_selects_the_eks_cluster_group_by_its_discovery_tag(cluster, nodeclass):
    tags = cluster["resource"].get("aws_ec2_tag", {}).values()
    tagged = [t for t in tags if EKS_CLUSTER_SG.match(t["resource_id"]) and t["key"] == LABEL_DISCOVERY]
    assert [t["value"] for t in tagged] == [C.cluster_name]
    assert nodeclass["spec"]["securityGroupSelectorTerms"] == [{"tags": {LABEL_DISCOVERY: C.cluster_name}}]


def test_without_the_tag_a_node_gets_only_a_group_with_no_rules(cluster, nodeclass):
    """Today's main: the EC2NodeClass selects only cluster-sg, which has no rules at all."""
    broken = copy.deepcopy(cluster)
    broken["resource"].pop("aws_ec2_tag", None)
    broken["resource"]["aws_security_group"]["cluster-sg"]["tags"][LABEL_DISCOVERY] = C.cluster_name
    assert node_network_failures(broken, nodeclass, C.vpc_cidr) == [
        "node -> internet (ECR, STS, S3 through the NAT) (tcp/443): no egress rule on ['cluster-sg'] lets it out",
        "node -> VPC endpoints (tcp/443): no egress rule on ['cluster-sg'] lets it out",
        "node -> control plane (tcp/443): no egress rule on ['cluster-sg'] lets it out",
        "control plane -> kubelet (tcp/10250): no ingress rule on ['cluster-sg'] admits it from "
        "['EKS cluster security group', 'cluster-sg']",
        "node <-> node (all traffic): no egress rule on ['cluster-sg'] lets it out",
    ]


def test_a_node_class_selecting_nothing_is_named(cluster, nodeclass):
    other = copy.deepcopy(nodeclass)
    other["spec"]["securityGroupSelectorTerms"] = [{"tags": {LABEL_DISCOVERY: "someone-else"}}]
    assert "node -> internet (ECR, STS, S3 through the NAT) (tcp/443): the source has no security group" in (
        node_network_failures(cluster, other, C.vpc_cidr)
    )


def test_each_flow_breaks_alone_when_its_rule_is_missing(cluster, nodeclass):
    """EKS's defaults narrowed one way at a time: each missing rule fails exactly its flows."""
    no_egress = node_network_failures(cluster, nodeclass, C.vpc_cidr, eks_egress=())
    assert [f.split(" (")[0] for f in no_egress] == [
        "node -> internet", "node -> VPC endpoints", "node -> control plane", "control plane -> kubelet",
        "node <-> node",
    ]  # fmt: skip
    https_only = node_network_failures(
        cluster, nodeclass, C.vpc_cidr, eks_ingress=(Rule("tcp", 443, 443, self_=True),)
    )
    assert https_only == [
        "control plane -> kubelet (tcp/10250): no ingress rule on ['EKS cluster security group'] admits it "
        "from ['EKS cluster security group', 'cluster-sg']",
        "node <-> node (all traffic): no ingress rule on ['EKS cluster security group'] admits it from "
        "['EKS cluster security group']",
    ]
