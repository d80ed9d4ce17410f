"""Stack 1, network: VPC, public and private subnets over >= 2 AZs, IGW, NAT gateway + EIP, and the
private route tables with the NAT default route. Nodes boot only with egress, so the cluster stack
depends on `egress_route_ids`."""

from __future__ import annotations

import ipaddress

from cdktn import TerraformOutput, TerraformStack
from cdktn_provider_aws.eip import Eip
from cdktn_provider_aws.internet_gateway import InternetGateway
from cdktn_provider_aws.nat_gateway import NatGateway
from cdktn_provider_aws.provider import AwsProvider
from cdktn_provider_aws.route import Route
from cdktn_provider_aws.route_table import RouteTable
from cdktn_provider_aws.route_table_association import RouteTableAssociation
from cdktn_provider_aws.subnet import Subnet
from cdktn_provider_aws.vpc import Vpc
from constructs import Construct

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import LABEL_DISCOVERY, cluster_tag


def aws_provider(scope: Construct, c: Config) -> AwsProvider:
    return AwsProvider(
        scope,
        "aws",
        region=c.region,
        allowed_account_ids=list(c.allowed_accounts) or None,
        default_tags=[{"tags": c.tags}],
    )


class NetworkStack(TerraformStack):
    def __init__(self, scope: Construct, c: Config):
        super().__init__(scope, "network")
        aws_provider(self, c)
        name = c.cluster_name
        self.vpc = Vpc(
            self,
            "vpc",
            cidr_block=c.vpc_cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={"Name": name},
        )
        # The VPC's default security group is left as AWS makes it and never adopted: IAM cannot tell our
        # VPC's default group from a foreign one, so a role allowed to tag it ours could claim any group
        # (infra/checkov-skips.yaml, CKV2_AWS_12). Nothing of ours uses it: every launch names its groups.
        blocks = list(ipaddress.ip_network(c.vpc_cidr).subnets(new_prefix=20))
        igw = InternetGateway(self, "igw", vpc_id=self.vpc.id, tags={"Name": name})
        public_rt = RouteTable(self, "public-rt", vpc_id=self.vpc.id, tags={"Name": f"{name}-public"})
        Route(
            self,
            "public-default",
            route_table_id=public_rt.id,
            destination_cidr_block="0.0.0.0/0",
            gateway_id=igw.id,
        )
        self.public_subnets, self.private_subnets, self.egress_routes = [], [], []
        shared = {cluster_tag(name): "shared"}
        for i, az in enumerate(c.availability_zones):
            pub = Subnet(
                self,
                f"public-{az}",
                vpc_id=self.vpc.id,
                availability_zone=az,
                cidr_block=str(blocks[i]),
                map_public_ip_on_launch=False,
                tags={"Name": f"{name}-public-{az}", "kubernetes.io/role/elb": "1", **shared},
            )
            RouteTableAssociation(self, f"public-rta-{az}", subnet_id=pub.id, route_table_id=public_rt.id)
            self.public_subnets.append(pub)
        eip = Eip(self, "nat-eip", domain="vpc", tags={"Name": f"{name}-nat"}, depends_on=[igw])
        self.nat = NatGateway(
            self,
            "nat",
            allocation_id=eip.id,
            subnet_id=self.public_subnets[0].id,
            tags={"Name": name},
            depends_on=[igw],
        )
        offset = len(c.availability_zones)
        for i, az in enumerate(c.availability_zones):
            priv = Subnet(
                self,
                f"private-{az}",
                vpc_id=self.vpc.id,
                availability_zone=az,
                cidr_block=str(blocks[offset + i]),
                tags={
                    "Name": f"{name}-private-{az}",
                    "kubernetes.io/role/internal-elb": "1",
                    LABEL_DISCOVERY: name,
                    **shared,
                },
            )
            rt = RouteTable(
                self, f"private-rt-{az}", vpc_id=self.vpc.id, tags={"Name": f"{name}-private-{az}"}
            )
            route = Route(
                self,
                f"private-default-{az}",
                route_table_id=rt.id,
                destination_cidr_block="0.0.0.0/0",
                nat_gateway_id=self.nat.id,
            )
            assoc = RouteTableAssociation(self, f"private-rta-{az}", subnet_id=priv.id, route_table_id=rt.id)
            self.private_subnets.append(priv)
            self.egress_routes.extend([route, assoc])
        TerraformOutput(self, "vpc_id", value=self.vpc.id)
        TerraformOutput(self, "private_subnet_ids", value=[s.id for s in self.private_subnets])

    @property
    def private_subnet_ids(self) -> list[str]:
        return [s.id for s in self.private_subnets]

    @property
    def public_subnet_ids(self) -> list[str]:
        return [s.id for s in self.public_subnets]

    @property
    def egress_route_ids(self) -> list[str]:
        """The NAT default routes and their subnet associations: proof private subnets have egress."""
        return [r.id for r in self.egress_routes]
