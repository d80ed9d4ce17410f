"""What traffic the synthesized security groups let through, for the flows EKS documents nodes need
(docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html): nodes reach the internet and the VPC's
endpoints on 443, nodes reach the control plane on 443, the control plane reaches the kubelet on 10250,
nodes reach each other on every port.

The group EKS creates for the cluster is not in our Terraform; its rules are EKS's documented defaults
(all inbound from itself, all outbound), and it is attached to the control plane's ENIs with the groups in
`vpc_config.security_group_ids`. A Karpenter node gets every group its EC2NodeClass selects by tag (terms
ORed, tags within a term ANDed), tags from `aws_ec2_tag` included. Security groups are stateful, so a flow
needs an egress rule on the source side and an ingress rule on the destination side; to a CIDR, only the
egress."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any

ALL = "-1"
EKS_CLUSTER_SG = re.compile(r"^\$\{aws_eks_cluster\.[\w-]+\.vpc_config(\[0\])?\.cluster_security_group_id\}$")


@dataclass(frozen=True)
class Rule:
    protocol: str  # "-1" (all), "tcp", "udp"
    from_port: int = 0
    to_port: int = 65535
    cidr: str | None = None
    group: str | None = None  # a referenced group's id token
    self_: bool = False

    def carries(self, protocol: str, port: int | None) -> bool:
        if self.protocol == ALL:
            return True
        return protocol != ALL and self.protocol == protocol and self.from_port <= (port or 0) <= self.to_port


@dataclass
class Group:
    id: str
    name: str
    tags: dict[str, str] = field(default_factory=dict)
    ingress: list[Rule] = field(default_factory=list)
    egress: list[Rule] = field(default_factory=list)


# EKS's cluster security group as EKS creates it: all traffic from itself in, all traffic out.
EKS_DEFAULT_INGRESS = (Rule(ALL, self_=True),)
EKS_DEFAULT_EGRESS = (Rule(ALL, cidr="0.0.0.0/0"),)


def _proto(p: Any) -> str:
    p = str(p).lower()
    return ALL if p in ("-1", "all") else p


def _inline(r: dict[str, Any]) -> list[Rule]:
    out = [Rule(_proto(r["protocol"]), r.get("from_port", 0), r.get("to_port", 65535), cidr=c)
           for c in r.get("cidr_blocks") or []]  # fmt: skip
    out += [Rule(_proto(r["protocol"]), r.get("from_port", 0), r.get("to_port", 65535), group=g)
            for g in r.get("security_groups") or []]  # fmt: skip
    if r.get("self"):
        out.append(Rule(_proto(r["protocol"]), r.get("from_port", 0), r.get("to_port", 65535), self_=True))
    return out


def groups_of(
    cluster: dict[str, Any], *, eks_ingress=EKS_DEFAULT_INGRESS, eks_egress=EKS_DEFAULT_EGRESS
) -> dict[str, Group]:
    """Every group of the cluster stack by its id token, EKS's cluster group included."""
    res = cluster.get("resource", {})
    groups = {}
    for name, sg in res.get("aws_security_group", {}).items():
        gid = f"${{aws_security_group.{name}.id}}"
        g = Group(gid, name, dict(sg.get("tags") or {}))
        for r in sg.get("ingress") or []:
            g.ingress += _inline(r)
        for r in sg.get("egress") or []:
            g.egress += _inline(r)
        groups[gid] = g
    for rtype in ("aws_ec2_tag", "aws_vpc_security_group_ingress_rule", "aws_vpc_security_group_egress_rule",
                  "aws_security_group_rule"):  # fmt: skip
        for r in res.get(rtype, {}).values():
            gid = r.get("resource_id") or r.get("security_group_id")
            if gid not in groups and gid and EKS_CLUSTER_SG.match(gid):
                groups[gid] = Group(
                    gid, "EKS cluster security group", {}, list(eks_ingress), list(eks_egress)
                )
    for r in res.get("aws_ec2_tag", {}).values():
        if r["resource_id"] in groups:
            groups[r["resource_id"]].tags[r["key"]] = r["value"]
    for rtype, direction in (("aws_vpc_security_group_ingress_rule", "ingress"),
                             ("aws_vpc_security_group_egress_rule", "egress")):  # fmt: skip
        for r in res.get(rtype, {}).values():
            rule = Rule(_proto(r["ip_protocol"]), r.get("from_port", 0), r.get("to_port", 65535),
                        cidr=r.get("cidr_ipv4"), group=r.get("referenced_security_group_id"))  # fmt: skip
            getattr(groups[r["security_group_id"]], direction).append(rule)
    for r in res.get("aws_security_group_rule", {}).values():
        getattr(groups[r["security_group_id"]], r["type"]).extend(
            _inline(
                r
                | {
                    "security_groups": [r["source_security_group_id"]]
                    if r.get("source_security_group_id")
                    else []
                }
            )
        )
    return groups


def eks_cluster_group(groups: dict[str, Group]) -> Group | None:
    return next((g for gid, g in groups.items() if EKS_CLUSTER_SG.match(gid)), None)


def control_plane_groups(cluster: dict[str, Any], groups: dict[str, Group]) -> list[Group]:
    """EKS's cluster group (created by EKS whatever we synthesize) and the additional ones we attach."""
    eks = next(iter(cluster["resource"]["aws_eks_cluster"].values()))
    extra = [groups[g] for g in eks["vpc_config"]["security_group_ids"]]
    created = eks_cluster_group(groups) or Group("(EKS cluster group)", "EKS cluster security group", {},
                                                 list(EKS_DEFAULT_INGRESS), list(EKS_DEFAULT_EGRESS))  # fmt: skip
    return [created, *extra]


def node_groups(nodeclass: dict[str, Any], groups: dict[str, Group]) -> list[Group]:
    terms = nodeclass["spec"]["securityGroupSelectorTerms"]
    return [g for g in groups.values()
            if any(all(g.tags.get(k) == v for k, v in t["tags"].items()) for t in terms)]  # fmt: skip


def _covers(cidr: str, target: str) -> bool:
    return ipaddress.ip_network(target).subnet_of(ipaddress.ip_network(cidr))


def _admits(rule: Rule, owner: Group, peers: list[Group], peer_cidr: str) -> bool:
    ids = {p.id for p in peers}
    return (
        (rule.group in ids)
        or (rule.self_ and owner.id in ids)
        or (rule.cidr is not None and _covers(rule.cidr, peer_cidr))
    )


def _names(gs: list[Group]) -> list[str]:
    return [g.name for g in gs]


def flow(what: str, src: list[Group], dst: list[Group] | str, protocol: str, port: int | None,
         vpc_cidr: str) -> str | None:  # fmt: skip
    """None when `src` can reach `dst` (groups, or a CIDR) on protocol/port; else the reason it cannot."""
    to = f"{protocol}/{port}" if protocol != ALL else "all traffic"
    if not src:
        return f"{what} ({to}): the source has no security group"
    target = dst if isinstance(dst, str) else vpc_cidr
    out = any(r.carries(protocol, port) and _admits(r, g, [] if isinstance(dst, str) else dst, target)
              for g in src for r in g.egress)  # fmt: skip
    if not out:
        return f"{what} ({to}): no egress rule on {_names(src)} lets it out"
    if isinstance(dst, str):
        return None
    if not dst:
        return f"{what} ({to}): the destination has no security group"
    if not any(r.carries(protocol, port) and _admits(r, g, src, vpc_cidr) for g in dst for r in g.ingress):
        return f"{what} ({to}): no ingress rule on {_names(dst)} admits it from {_names(src)}"
    return None


def node_network_failures(cluster: dict[str, Any], nodeclass: dict[str, Any], vpc_cidr: str,
                          **eks_rules: Any) -> list[str]:  # fmt: skip
    """Each flow EKS documents that a Karpenter node of this EC2NodeClass could not make."""
    groups = groups_of(cluster, **eks_rules)
    nodes, plane = node_groups(nodeclass, groups), control_plane_groups(cluster, groups)
    checks = [
        flow("node -> internet (ECR, STS, S3 through the NAT)", nodes, "0.0.0.0/0", "tcp", 443, vpc_cidr),
        flow("node -> VPC endpoints", nodes, vpc_cidr, "tcp", 443, vpc_cidr),
        flow("node -> control plane", nodes, plane, "tcp", 443, vpc_cidr),
        flow("control plane -> kubelet", plane, nodes, "tcp", 10250, vpc_cidr),
        flow("node <-> node", nodes, nodes, ALL, None, vpc_cidr),
    ]
    return [f for f in checks if f]
