"""Teardown's side of the VPC CNI's tag `cluster.k8s.amazonaws.com/name=
<cluster>` makes nothing ours. A foreign interface carrying only it, even inside our subnet (where
containment would prove it ours were the tag ours), is not planned for deletion but reported, with the
reason; an interface as our CNI now makes it (its own tags and ours, iam/vpc_cni.py) is planned. The
policies' side is tests/infra/test_vpc_cni_ownership.py."""

from __future__ import annotations

import json
from pathlib import Path

from gpu_finops.cli import main
from teardown.model import TeardownConfig
from tests.teardown.account import VPC_CNI, build
from tests.teardown.test_provenance import PAIRS, cli, theirs

CONFIG = TeardownConfig(region="us-east-1", allowed_accounts=("123456789012",))  # cluster gpu-finops
CNI = "cluster.k8s.amazonaws.com/name"
OURS = [{"Key": "gpu-finops.io/project", "Value": "gpu-finops"}, {"Key": "gpu-finops.io/cluster", "Value": "gpu-finops"}]  # fmt: skip
NOT_OURS = (
    f"tagged {CNI}=gpu-finops, the VPC CNI's tag (anyone allowed to tag can set it; our CNI's interfaces carry "
    "our tags), but none of our tags (gpu-finops.io/project=gpu-finops or the cluster's)"
)


def test_the_cnis_tag_alone_is_not_ours_and_is_reported_with_the_reason():
    cni_only = {t["Key"]: t["Value"] for t in VPC_CNI}
    assert CONFIG.owns_tags(cni_only) is None
    r = CONFIG.classify("network_interface", "eni-1", cni_only, None)
    assert (r.ours, r.lookalike) == (False, NOT_OURS)
    # with ours beside it, as our CNI now tags: ours by the project tag, never by the CNI's
    both = {**cni_only, **{t["Key"]: t["Value"] for t in OURS}}
    assert CONFIG.owns_tags(both) == "gpu-finops.io/project=gpu-finops"
    # naming another cluster, it still marks the interface foreign, whatever else it carries
    other = {**both, CNI: "demo"}
    assert CONFIG.owns_tags(other) is None and CONFIG.foreign_tag(other) == f"{CNI}=demo"
    assert CNI not in {k for k, _ in PAIRS}


def plan(capsys) -> dict:
    assert main(cli("plan", "--out", "plan.json")) == 0
    capsys.readouterr()
    return json.loads(Path("plan.json").read_text())


def test_a_foreign_interface_in_our_subnet_with_only_the_cnis_tag_is_not_planned(boto_session, capsys):
    """The nightly deletes what its plan holds (`destroy --yes` surveys the same way)."""
    acct = build(boto_session, storage=False)
    ec2 = boto_session.client("ec2")
    subnet = acct.ours["subnet"][1]  # ours: in our Terraform state (build)
    made = {
        who: ec2.create_network_interface(
            SubnetId=subnet, Description="aws-K8S-i-0fedcba9876543210",
            TagSpecifications=[{"ResourceType": "network-interface", "Tags": tags}],
        )["NetworkInterface"]["NetworkInterfaceId"]
        for who, tags in (("theirs", VPC_CNI), ("our cni's", [*VPC_CNI, *OURS]))
    }  # fmt: skip
    doc = plan(capsys)
    planned = {r["id"]: r for r in doc["resources"] if r["type"] == "network_interface"}
    assert made["theirs"] not in planned
    ours = planned[made["our cni's"]]
    assert (ours["owned_by"], ours["provenance"]) == (
        "gpu-finops.io/project=gpu-finops",
        f"inside subnet/{subnet}, which is ours",
    )
    reported = {r["id"]: r["looks_like_ours"] for r in doc["looks_like_ours"]}
    assert reported[made["theirs"]] == NOT_OURS


def test_the_cnis_tag_on_their_resources_makes_none_of_them_ours(boto_session, capsys):
    foreign = theirs(boto_session, CNI, "gpu-finops")
    doc = plan(capsys)
    reported = {r["id"]: r["looks_like_ours"] for r in doc["looks_like_ours"]}
    for rtype, rid in foreign.items():
        assert rid not in {r["id"] for r in doc["resources"]}, rtype
        assert reported[rid] == NOT_OURS, rtype
