"""Stack 2, cluster: EKS with secrets encryption and a system node group (IMDSv2 required), access
entries, pod identity; Karpenter's controller role (tag-scoped), node role and instance profile; the
interruption queue and its EventBridge rules; the FIS spot-interruption template
(infra/cluster_karpenter.py); the cost table, the collector's identity and image repository and the FOCUS
export bucket (infra/cluster_data.py).

Everything that launches nodes depends on `egress` (a terraform_data holding the network stack's NAT
routes), so no node boots before the private subnets have a way out. The EC2 spot service-linked role
is account-wide: `make up`'s preflight creates it only when absent and records that; here it is only
read (a data source), so no plan can ever turn it into a destroy."""

from __future__ import annotations

from cdktn import DataResource, Fn, TerraformOutput, TerraformStack
from cdktn_provider_aws.cloudwatch_log_group import CloudwatchLogGroup
from cdktn_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from cdktn_provider_aws.data_aws_eks_addon_version import DataAwsEksAddonVersion
from cdktn_provider_aws.data_aws_iam_role import DataAwsIamRole
from cdktn_provider_aws.ec2_tag import Ec2Tag
from cdktn_provider_aws.eks_access_entry import EksAccessEntry
from cdktn_provider_aws.eks_access_policy_association import EksAccessPolicyAssociation
from cdktn_provider_aws.eks_addon import EksAddon
from cdktn_provider_aws.eks_cluster import EksCluster
from cdktn_provider_aws.eks_node_group import EksNodeGroup
from cdktn_provider_aws.iam_role import IamRole
from cdktn_provider_aws.iam_role_policy_attachment import IamRolePolicyAttachment
from cdktn_provider_aws.kms_key import KmsKey
from cdktn_provider_aws.launch_template import LaunchTemplate
from cdktn_provider_aws.security_group import SecurityGroup
from constructs import Construct

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import LABEL_DISCOVERY
from gpu_finops.facts.names import SPOT_SLR
from iam import iam_policies as pol
from iam import vpc_cni
from iam.ci_policies import boundary_arn
from infra.cluster_data import CostDataInputs, add_cost_data
from infra.cluster_karpenter import KarpenterInputs, add_karpenter
from infra.cluster_node_role import MANAGED, node_role_with_policies
from infra.jsii_structs import camel
from infra.network import NetworkStack, aws_provider


class ClusterStack(TerraformStack):
    def __init__(self, scope: Construct, c: Config, net: NetworkStack):
        super().__init__(scope, "cluster")
        aws_provider(self, c)
        self.account = DataAwsCallerIdentity(self, "account").account_id
        # Every role here carries the nightly's permissions boundary (iam/ci_boundary.py).
        self.boundary = boundary_arn(c, self.account)
        # Read, never managed: preflight guarantees it exists (see module docstring).
        self.spot_slr = DataAwsIamRole(self, "spot-slr", name=SPOT_SLR)
        # Nodes boot only with egress: this holds the NAT routes, and every node launcher depends on it.
        self.egress = DataResource(self, "egress", input={"nat_routes": net.egress_route_ids})
        # One method per concern, in the order their resources are declared.
        self.add_encryption(c)
        self.add_control_plane(c, net)
        self.add_system_nodes(c, net)
        # In this stack's own scope, so the logical IDs stay what they were (see their module docstrings).
        karpenter = add_karpenter(
            self,
            KarpenterInputs(
                config=c, account=self.account, boundary=self.boundary, cluster_name=self.cluster.name
            ),
        )
        self.node_role, self.queue = karpenter.node_role, karpenter.queue
        self.fis_template = karpenter.fis_template
        data = add_cost_data(
            self,
            CostDataInputs(
                config=c,
                account=self.account,
                boundary=self.boundary,
                key_arn=self.key.arn,
                cluster_name=self.cluster.name,
            ),
        )
        self.table, self.ecr, self.export_bucket = data.table, data.ecr, data.export_bucket
        self.add_outputs()

    def add_encryption(self, c: Config) -> None:
        """One KMS key for EKS secrets, the control-plane logs, the queue and the cost table."""
        name, account = c.cluster_name, self.account
        self.key = KmsKey(
            self,
            "kms",
            description=f"{name}: EKS secrets, logs, queue and cost table",
            enable_key_rotation=True,
            deletion_window_in_days=7,
            policy=Fn.jsonencode(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "Account",
                            "Effect": "Allow",
                            "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
                            "Action": "kms:*",
                            "Resource": "*",
                        },
                        {
                            "Sid": "Logs",
                            "Effect": "Allow",
                            "Principal": {"Service": f"logs.{c.region}.amazonaws.com"},
                            "Action": [
                                "kms:Encrypt*",
                                "kms:Decrypt*",
                                "kms:ReEncrypt*",
                                "kms:GenerateDataKey*",
                                "kms:Describe*",
                            ],
                            "Resource": "*",
                        },
                    ],
                }
            ),
        )
        self.log_group = CloudwatchLogGroup(
            self,
            "cluster-logs",
            name=c.cluster_log_group,
            retention_in_days=c.log_retention_days,
            kms_key_id=self.key.arn,
        )

    def add_control_plane(self, c: Config, net: NetworkStack) -> None:
        """The EKS cluster, its role and security group, and the configured admins' access entries."""
        name = c.cluster_name
        cluster_role = IamRole(
            self,
            "cluster-role",
            name=c.cluster_role,
            assume_role_policy=pol.trust("eks.amazonaws.com", actions=("sts:AssumeRole", "sts:TagSession")),
            permissions_boundary=self.boundary,
        )
        IamRolePolicyAttachment(
            self, "cluster-policy", role=cluster_role.name, policy_arn=MANAGED + "AmazonEKSClusterPolicy"
        )
        # An additional group on the control plane's ENIs only, with no rules: never a node's group, so it
        # carries no discovery tag (a node that had only it could reach nothing).
        cluster_sg = SecurityGroup(
            self,
            "cluster-sg",
            name=c.cluster_role,
            vpc_id=net.vpc.id,
            description="EKS control plane, additional group (no rules)",
            tags={"Name": c.cluster_role},
        )
        self.cluster = EksCluster(
            self,
            "eks",
            name=name,
            version=c.versions.kubernetes,
            role_arn=cluster_role.arn,
            vpc_config={
                "subnet_ids": net.private_subnet_ids,
                "security_group_ids": [cluster_sg.id],
                "endpoint_private_access": True,
                "endpoint_public_access": True,
                "public_access_cidrs": list(c.api_public_cidrs),
            },
            encryption_config={"resources": ["secrets"], "provider": {"key_arn": self.key.arn}},
            enabled_cluster_log_types=["api", "audit", "authenticator", "controllerManager", "scheduler"],
            access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
            depends_on=[self.log_group, self.egress],
        )
        # Karpenter's getting-started: its nodes use the group EKS creates for the cluster (all traffic from
        # itself, all out; also on the control plane's ENIs and the system nodes), found by this tag.
        Ec2Tag(
            self,
            "cluster-sg-discovery",
            resource_id=self.cluster.vpc_config.cluster_security_group_id,
            key=LABEL_DISCOVERY,
            value=name,
        )

        for i, arn in enumerate(c.admin_principal_arns):
            EksAccessEntry(self, f"admin-{i}", cluster_name=self.cluster.name, principal_arn=arn)
            EksAccessPolicyAssociation(
                self,
                f"admin-policy-{i}",
                cluster_name=self.cluster.name,
                principal_arn=arn,
                policy_arn="arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
                access_scope={"type": "cluster"},
            )

    def add_system_nodes(self, c: Config, net: NetworkStack) -> None:
        """The system managed node group (IMDSv2 required through its launch template) and the EKS add-ons."""
        name = c.cluster_name
        system_role = node_role_with_policies(self, "system-node", c.system_node_role, self.boundary)
        system_lt = LaunchTemplate(
            self,
            "system-lt",
            name=f"{name}-system",
            metadata_options={
                "http_endpoint": "enabled",
                "http_tokens": "required",
                "http_put_response_hop_limit": 1,
            },
            block_device_mappings=camel(
                [
                    {
                        "device_name": "/dev/xvda",
                        "ebs": {"volume_size": 50, "volume_type": "gp3", "encrypted": "true"},
                    }
                ]
            ),
            # the primary interface too: the VPC CNI (under the boundary) adds and removes its addresses
            # only on an interface that carries our tags (iam/ci_boundary.py)
            tag_specifications=camel(
                [{"resource_type": kind, "tags": c.tags} for kind in ("instance", "network-interface")]
            ),
        )
        self.system_nodes = EksNodeGroup(
            self,
            "system",
            cluster_name=self.cluster.name,
            node_group_name="system",
            node_role_arn=system_role.arn,
            subnet_ids=net.private_subnet_ids,
            instance_types=[c.system_instance_type],
            capacity_type="ON_DEMAND",
            scaling_config={
                "desired_size": c.system_node_count,
                "min_size": c.system_node_count,
                "max_size": c.system_node_count,
            },
            launch_template={"id": system_lt.id, "version": Fn.tostring(system_lt.latest_version)},
            depends_on=[self.egress],
        )
        for addon, pinned in c.versions.eks_addons().items():
            # A pin where one was confirmed for the Kubernetes minor; else EKS's default version for it,
            # resolved at plan time (never "whatever is newest").
            version = pinned or (
                DataAwsEksAddonVersion(
                    self,
                    f"addon-{addon}-default",
                    addon_name=addon,
                    kubernetes_version=self.cluster.version,
                    most_recent=False,
                ).version
            )
            EksAddon(
                self,
                f"addon-{addon}",
                cluster_name=self.cluster.name,
                addon_name=addon,
                addon_version=version,
                # EKS installs vpc-cni, kube-proxy and CoreDNS itself; take them over instead of failing.
                resolve_conflicts_on_create="OVERWRITE",
                # the VPC CNI's interfaces carry our tags, set on create (iam/vpc_cni.py): the boundary
                # lets it change only what carries them, and its own tag makes nothing ours
                configuration_values=vpc_cni.configuration_values(c) if addon == vpc_cni.ADDON else None,
                depends_on=[self.system_nodes] if addon == "coredns" else None,
            )

    def add_outputs(self) -> None:
        """What `make up`, the addons stack and the acts read back."""
        for out, value in {
            "cluster_name": self.cluster.name,
            "cluster_endpoint": self.cluster.endpoint,
            "interruption_queue": self.queue.name,
            "cost_table": self.table.name,
            "fis_template_id": self.fis_template.id,
            "node_role": self.node_role.name,
            "collector_repository": self.ecr.repository_url,
            "export_bucket": self.export_bucket.bucket,
        }.items():
            TerraformOutput(self, out, value=value)
