"""EC2 and VPC rows: instances, launch templates, ENIs, NAT gateways, EIPs, IGWs, route tables, subnets,
security groups, VPCs. Each is a declarative row (`teardown.row.Row`: the list side on its first line,
the delete call and its id parameter on the second); the `prepare` steps are what must happen before
the delete call (detach, disassociate)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu_finops.facts.kube_keys import LABEL_NODEPOOL
from teardown.model import Context, Resource, tags_of
from teardown.registry import register_row
from teardown.row import Row, as_time

INSTANCE_STATES = ("pending", "running", "shutting-down", "stopping", "stopped")  # every non-terminal one


def earliest_start(i: Mapping[str, Any]) -> Any:
    """When an instance was first launched: LaunchTime moves on each start after a stop, its primary
    ENI's attachment time does not. The earlier of the two (a stopped and restarted old instance is
    not made young)."""
    times = [i.get("LaunchTime")] + [
        (n.get("Attachment") or {}).get("AttachTime")
        for n in i.get("NetworkInterfaces", [])
        if (n.get("Attachment") or {}).get("DeviceIndex") == 0
    ]
    found = [t for t in (as_time(t) for t in times) if t is not None]
    return min(found) if found else None


register_row(Row(
    "ec2_instance", "ec2", "describe_instances", "Reservations", "InstanceId",
    "terminate_instances", "InstanceIds", id_as_list=True, on_its_way=("shutting-down",),
    unnest="Instances",  # a reservation holds its instances
    list_kwargs={"Filters": [{"Name": "instance-state-name", "Values": list(INSTANCE_STATES)}]},
    state="State.Name", created=earliest_start,
    details={
        "karpenter": lambda i: LABEL_NODEPOOL in tags_of(i.get("Tags")),
        "lifecycle": lambda i: i.get("InstanceLifecycle", "on-demand"),
    },
    depends_on=("eks_nodegroup",), wait_gone=600,
    why_left="launched by Karpenter, so not in Terraform state: delete NodePools first so "
    "Karpenter drains its own nodes",
))  # fmt: skip

register_row(Row(
    "launch_template", "ec2", "describe_launch_templates", "LaunchTemplates", "LaunchTemplateId",
    "delete_launch_template", "LaunchTemplateId",
    name_field="LaunchTemplateName", created="CreateTime", depends_on=("ec2_instance", "eks_nodegroup"),
    why_left="Karpenter creates one per EC2NodeClass and AMI; Terraform never knew it",
))  # fmt: skip


def detach_eni(ctx: Context, r: Resource) -> None:
    """An ENI still attached (its node dying) is detached by force first."""
    if r.details.get("attachment") and r.state == "in-use":
        ctx.client("ec2").detach_network_interface(AttachmentId=r.details["attachment"], Force=True)


register_row(Row(
    "network_interface", "ec2", "describe_network_interfaces", "NetworkInterfaces", "NetworkInterfaceId",
    "delete_network_interface", "NetworkInterfaceId", prepare=detach_eni,
    tags=("TagSet", "Tags"), state="Status", inside={"subnet": "SubnetId"},  # AWS gives no creation time
    details={
        "description": lambda e: e.get("Description", ""),
        "subnet": "SubnetId",
        "attachment": "Attachment.AttachmentId",
    },
    why_left="a VPC-CNI ENI (description aws-K8S-i-...) left 'available' when its node died; "
    "it holds its subnet and security group",
    depends_on=("ec2_instance", "eks_cluster", "nat_gateway"),
))  # fmt: skip

register_row(Row(
    "nat_gateway", "ec2", "describe_nat_gateways", "NatGateways", "NatGatewayId",
    "delete_nat_gateway", "NatGatewayId", on_its_way=("deleting",),  # already on its way: wait it out
    state="State", terminal=("deleted",), created="CreateTime",
    details={
        "allocations": lambda n: [
            a["AllocationId"] for a in n.get("NatGatewayAddresses", []) if a.get("AllocationId")
        ]
    },
    depends_on=("ec2_instance", "eks_cluster", "eks_nodegroup"), wait_gone=900,
    why_left="NAT gateways take minutes in 'deleting'; their EIP is released only after",
))  # fmt: skip

register_row(Row(
    "eip", "ec2", "describe_addresses", "Addresses", "AllocationId",
    "release_address", "AllocationId",
    token="NextToken",  # no paginator, and one page: no NextToken comes back
    state=lambda a: "associated" if a.get("AssociationId") else "unassociated",
    details={"public_ip": "PublicIp"}, depends_on=("nat_gateway", "ec2_instance"),
    why_left="an EIP is billed while unassociated; it frees once its NAT gateway is deleted",
))  # fmt: skip


def detach_igw(ctx: Context, r: Resource) -> None:
    """An internet gateway is detached from its VPCs before it can be deleted."""
    for vpc in r.details.get("vpcs", []):
        ctx.client("ec2").detach_internet_gateway(InternetGatewayId=r.id, VpcId=vpc)


register_row(Row(
    "internet_gateway", "ec2", "describe_internet_gateways", "InternetGateways", "InternetGatewayId",
    "delete_internet_gateway", "InternetGatewayId", prepare=detach_igw,
    state=lambda g: "attached" if g.get("Attachments") else "detached",
    details={"vpcs": lambda g: [a["VpcId"] for a in g.get("Attachments", [])]},
    # no `inside`: whoever made a gateway can attach it to our VPC, so being attached proves nothing (ours is
    # in the network stack's state, or in the journal's plan)
    depends_on=("nat_gateway", "eip", "ec2_instance"),
    why_left="cannot detach while public addresses (EIPs, NAT) remain mapped in the VPC",
))  # fmt: skip


def disassociate_route_table(ctx: Context, r: Resource) -> None:
    """A route table is disassociated from its subnets before it can be deleted."""
    for assoc in r.details.get("associations", []):
        ctx.client("ec2").disassociate_route_table(AssociationId=assoc)


register_row(Row(
    "route_table", "ec2", "describe_route_tables", "RouteTables", "RouteTableId",
    "delete_route_table", "RouteTableId", prepare=disassociate_route_table,
    # the main table goes with its VPC
    skip=lambda rt: any(a.get("Main") for a in rt.get("Associations", [])),
    details={
        "associations": lambda rt: [
            a["RouteTableAssociationId"]
            for a in rt.get("Associations", [])
            if a.get("RouteTableAssociationId")
        ]
    },
    inside={"vpc": "VpcId"}, depends_on=("nat_gateway",),
))  # fmt: skip

register_row(Row(
    "subnet", "ec2", "describe_subnets", "Subnets", "SubnetId",
    "delete_subnet", "SubnetId",
    state="State", default_state="available", details={"vpc": "VpcId"}, inside={"vpc": "VpcId"},
    depends_on=("network_interface", "ec2_instance", "nat_gateway", "eks_cluster", "route_table"),
    why_left="a network interface in it remains (often a leaked VPC-CNI ENI)",
))  # fmt: skip

register_row(Row(
    "security_group", "ec2", "describe_security_groups", "SecurityGroups", "GroupId",
    "delete_security_group", "GroupId",
    skip=lambda sg: sg.get("GroupName") == "default",  # goes with its VPC
    details={"vpc": "VpcId", "group_name": "GroupName"}, inside={"vpc": "VpcId"},
    depends_on=("network_interface", "ec2_instance", "eks_cluster", "eks_nodegroup"),
    why_left="still referenced by a network interface or another group's rule",
))  # fmt: skip

register_row(Row(
    "vpc", "ec2", "describe_vpcs", "Vpcs", "VpcId",
    "delete_vpc", "VpcId",
    state="State", default_state="available", details={"cidr": "CidrBlock"},
    depends_on=(
        "subnet", "internet_gateway", "security_group", "route_table", "nat_gateway", "network_interface",
    ),
    why_left="a dependency (subnet, gateway, ENI, security group) is still in it",
))  # fmt: skip
