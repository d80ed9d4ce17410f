"""The system nodes' primary interfaces carry our tags (system-lt's tag
specification), so the VPC CNI, under the permissions boundary, may add and remove their addresses; the
same request on an untagged interface (how system-lt launched them before) is refused."""

from __future__ import annotations

from gpu_finops.facts.config import load_config
from iam.ci_boundary import boundary_policy
from iam.iam_eval import Request, decide
from tests.infra.test_stacks import resources

ACCOUNT = "123456789012"


def test_system_nodes_interfaces_carry_our_tags_so_the_cni_may_manage_their_addresses(synthesized):
    c = load_config()
    lt = resources(synthesized.stack("cluster"), "aws_launch_template")["system-lt"]
    specs = {s["resource_type"]: s["tags"] for s in lt["tag_specifications"]}
    assert specs.get("network-interface") == c.tags, specs
    eni = f"arn:aws:ec2:{c.region}:{ACCOUNT}:network-interface/eni-1"
    boundary = [boundary_policy(c, ACCOUNT)]
    tagged = {f"aws:ResourceTag/{k}": v for k, v in specs["network-interface"].items()}
    for action in ("ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"):
        ctx = {"aws:RequestedRegion": c.region}
        assert decide(boundary, Request(action, eni, {**ctx, **tagged})).allowed, action
        assert not decide(boundary, Request(action, eni, ctx)).allowed, action
