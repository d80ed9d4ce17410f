"""EC2 and VPC registrations: instances, launch templates, ENIs, NAT gateways, EIPs, IGWs, route
tables, subnets, security groups, VPCs."""

from __future__ import annotations

from facts.kube_keys import LABEL_NODEPOOL
from teardown.listing import owned, pages
from teardown.model import Context, Resource, gone_ok, tags_of
from teardown.registry import ResourceType, register


# --- instances ---------------------------------------------------------------------------------------
def list_instances(ctx: Context) -> list[Resource]:
    out = []
    states = ["pending", "running", "shutting-down", "stopping", "stopped"]  # every non-terminal state
    for reservation in pages(
        ctx,
        "ec2",
        "describe_instances",
        "Reservations",
        Filters=[{"Name": "instance-state-name", "Values": states}],
    ):
        for i in reservation["Instances"]:
            tags = tags_of(i.get("Tags"))
            r = owned(
                ctx,
                "ec2_instance",
                i["InstanceId"],
                i.get("Tags"),
                i["State"]["Name"],
                karpenter=LABEL_NODEPOOL in tags,
                lifecycle=i.get("InstanceLifecycle", "on-demand"),
            )
            if r:
                out.append(r)
    return out


@gone_ok
def delete_instance(ctx: Context, r: Resource) -> None:
    if r.state != "shutting-down":
        ctx.client("ec2").terminate_instances(InstanceIds=[r.id])


register(
    ResourceType(
        "ec2_instance",
        list_instances,
        delete_instance,
        depends_on=("eks_nodegroup",),
        why_left="launched by Karpenter, so not in Terraform state: delete NodePools first so "
        "Karpenter drains its own nodes",
        wait_gone=600,
    )
)


# --- launch templates -----------------------------------------------------------------------------------
def list_launch_templates(ctx: Context) -> list[Resource]:
    out = []
    for lt in pages(ctx, "ec2", "describe_launch_templates", "LaunchTemplates"):
        r = owned(
            ctx, "launch_template", lt["LaunchTemplateId"], lt.get("Tags"), name=lt["LaunchTemplateName"]
        )
        if r:
            out.append(r)
    return out


@gone_ok
def delete_launch_template(ctx: Context, r: Resource) -> None:
    ctx.client("ec2").delete_launch_template(LaunchTemplateId=r.id)


register(
    ResourceType(
        "launch_template",
        list_launch_templates,
        delete_launch_template,
        depends_on=("ec2_instance", "eks_nodegroup"),
        why_left="Karpenter creates one per EC2NodeClass and AMI; Terraform never knew it",
    )
)


# --- network interfaces -----------------------------------------------------------------------------------
def list_enis(ctx: Context) -> list[Resource]:
    out = []
    for eni in pages(ctx, "ec2", "describe_network_interfaces", "NetworkInterfaces"):
        tags = eni.get("TagSet") or eni.get("Tags")
        r = owned(
            ctx,
            "network_interface",
            eni["NetworkInterfaceId"],
            tags,
            eni.get("Status", "present"),
            description=eni.get("Description", ""),
            subnet=eni.get("SubnetId"),
            attachment=(eni.get("Attachment") or {}).get("AttachmentId"),
        )
        if r:
            out.append(r)
    return out


@gone_ok
def delete_eni(ctx: Context, r: Resource) -> None:
    ec2 = ctx.client("ec2")
    if r.details.get("attachment") and r.state == "in-use":
        ec2.detach_network_interface(AttachmentId=r.details["attachment"], Force=True)
    ec2.delete_network_interface(NetworkInterfaceId=r.id)


register(
    ResourceType(
        "network_interface",
        list_enis,
        delete_eni,
        depends_on=("ec2_instance", "eks_cluster", "nat_gateway"),
        why_left="a VPC-CNI ENI (description aws-K8S-i-...) left 'available' when its node died; "
        "it holds its subnet and security group",
    )
)


# --- NAT gateways ---------------------------------------------------------------------------------------
def list_nat_gateways(ctx: Context) -> list[Resource]:
    out = []
    for nat in pages(ctx, "ec2", "describe_nat_gateways", "NatGateways"):
        if nat["State"] == "deleted":  # terminal: gone
            continue
        allocations = [a["AllocationId"] for a in nat.get("NatGatewayAddresses", []) if a.get("AllocationId")]
        r = owned(
            ctx, "nat_gateway", nat["NatGatewayId"], nat.get("Tags"), nat["State"], allocations=allocations
        )
        if r:
            out.append(r)
    return out


@gone_ok
def delete_nat_gateway(ctx: Context, r: Resource) -> None:
    if r.state != "deleting":  # already on its way: wait it out
        ctx.client("ec2").delete_nat_gateway(NatGatewayId=r.id)


register(
    ResourceType(
        "nat_gateway",
        list_nat_gateways,
        delete_nat_gateway,
        depends_on=("ec2_instance", "eks_cluster", "eks_nodegroup"),
        why_left="NAT gateways take minutes in 'deleting'; their EIP is released only after",
        wait_gone=900,
    )
)


# --- Elastic IPs ----------------------------------------------------------------------------------------
def list_eips(ctx: Context) -> list[Resource]:
    out = []
    for addr in ctx.client("ec2").describe_addresses().get("Addresses", []):
        r = owned(
            ctx,
            "eip",
            addr["AllocationId"],
            addr.get("Tags"),
            "associated" if addr.get("AssociationId") else "unassociated",
            public_ip=addr.get("PublicIp"),
        )
        if r:
            out.append(r)
    return out


@gone_ok
def delete_eip(ctx: Context, r: Resource) -> None:
    ctx.client("ec2").release_address(AllocationId=r.id)


register(
    ResourceType(
        "eip",
        list_eips,
        delete_eip,
        depends_on=("nat_gateway", "ec2_instance"),
        why_left="an EIP is billed while unassociated; it frees once its NAT gateway is deleted",
    )
)


# --- internet gateways ----------------------------------------------------------------------------------
def list_igws(ctx: Context) -> list[Resource]:
    out = []
    for igw in pages(ctx, "ec2", "describe_internet_gateways", "InternetGateways"):
        vpcs = [a["VpcId"] for a in igw.get("Attachments", [])]
        r = owned(
            ctx,
            "internet_gateway",
            igw["InternetGatewayId"],
            igw.get("Tags"),
            "attached" if vpcs else "detached",
            vpcs=vpcs,
        )
        if r:
            out.append(r)
    return out


@gone_ok
def delete_igw(ctx: Context, r: Resource) -> None:
    ec2 = ctx.client("ec2")
    for vpc in r.details.get("vpcs", []):
        ec2.detach_internet_gateway(InternetGatewayId=r.id, VpcId=vpc)
    ec2.delete_internet_gateway(InternetGatewayId=r.id)


register(
    ResourceType(
        "internet_gateway",
        list_igws,
        delete_igw,
        depends_on=("nat_gateway", "eip", "ec2_instance"),
        why_left="cannot detach while public addresses (EIPs, NAT) remain mapped in the VPC",
    )
)


# --- route tables ---------------------------------------------------------------------------------------
def list_route_tables(ctx: Context) -> list[Resource]:
    out = []
    for rt in pages(ctx, "ec2", "describe_route_tables", "RouteTables"):
        if any(a.get("Main") for a in rt.get("Associations", [])):
            continue  # the main table goes with its VPC
        assoc = [
            a["RouteTableAssociationId"]
            for a in rt.get("Associations", [])
            if a.get("RouteTableAssociationId")
        ]
        r = owned(ctx, "route_table", rt["RouteTableId"], rt.get("Tags"), associations=assoc)
        if r:
            out.append(r)
    return out


@gone_ok
def delete_route_table(ctx: Context, r: Resource) -> None:
    ec2 = ctx.client("ec2")
    for assoc in r.details.get("associations", []):
        ec2.disassociate_route_table(AssociationId=assoc)
    ec2.delete_route_table(RouteTableId=r.id)


register(ResourceType("route_table", list_route_tables, delete_route_table, depends_on=("nat_gateway",)))


# --- subnets --------------------------------------------------------------------------------------------
def list_subnets(ctx: Context) -> list[Resource]:
    out = []
    for s in pages(ctx, "ec2", "describe_subnets", "Subnets"):
        r = owned(ctx, "subnet", s["SubnetId"], s.get("Tags"), s.get("State", "available"), vpc=s["VpcId"])
        if r:
            out.append(r)
    return out


@gone_ok
def delete_subnet(ctx: Context, r: Resource) -> None:
    ctx.client("ec2").delete_subnet(SubnetId=r.id)


register(
    ResourceType(
        "subnet",
        list_subnets,
        delete_subnet,
        depends_on=("network_interface", "ec2_instance", "nat_gateway", "eks_cluster", "route_table"),
        why_left="a network interface in it remains (often a leaked VPC-CNI ENI)",
    )
)


# --- security groups ------------------------------------------------------------------------------------
def list_security_groups(ctx: Context) -> list[Resource]:
    out = []
    for sg in pages(ctx, "ec2", "describe_security_groups", "SecurityGroups"):
        if sg.get("GroupName") == "default":
            continue  # goes with its VPC
        r = owned(
            ctx,
            "security_group",
            sg["GroupId"],
            sg.get("Tags"),
            vpc=sg.get("VpcId"),
            group_name=sg.get("GroupName"),
        )
        if r:
            out.append(r)
    return out


@gone_ok
def delete_security_group(ctx: Context, r: Resource) -> None:
    ctx.client("ec2").delete_security_group(GroupId=r.id)


register(
    ResourceType(
        "security_group",
        list_security_groups,
        delete_security_group,
        depends_on=("network_interface", "ec2_instance", "eks_cluster", "eks_nodegroup"),
        why_left="still referenced by a network interface or another group's rule",
    )
)


# --- VPCs -----------------------------------------------------------------------------------------------
def list_vpcs(ctx: Context) -> list[Resource]:
    out = []
    for v in pages(ctx, "ec2", "describe_vpcs", "Vpcs"):
        r = owned(ctx, "vpc", v["VpcId"], v.get("Tags"), v.get("State", "available"), cidr=v.get("CidrBlock"))
        if r:
            out.append(r)
    return out


@gone_ok
def delete_vpc(ctx: Context, r: Resource) -> None:
    ctx.client("ec2").delete_vpc(VpcId=r.id)


register(
    ResourceType(
        "vpc",
        list_vpcs,
        delete_vpc,
        depends_on=(
            "subnet",
            "internet_gateway",
            "security_group",
            "route_table",
            "nat_gateway",
            "network_interface",
        ),
        why_left="a dependency (subnet, gateway, ENI, security group) is still in it",
    )
)
