"""Stack 2, cluster: EKS with secrets encryption and a system node group (IMDSv2 required), access
entries, pod identity; Karpenter's controller role (tag-scoped), node role and instance profile; the
interruption queue and its EventBridge rules; the FIS spot-interruption template; the cost table.

Everything that launches nodes depends on `egress` (a terraform_data holding the network stack's NAT
routes), so no node boots before the private subnets have a way out. The EC2 spot service-linked role
is account-wide: `make up`'s preflight creates it only when absent and records that; here it is only
read (a data source), so no plan can ever turn it into a destroy."""

from __future__ import annotations

from cdktn import DataResource, Fn, TerraformOutput, TerraformStack
from cdktn_provider_aws.cloudwatch_event_rule import CloudwatchEventRule
from cdktn_provider_aws.cloudwatch_event_target import CloudwatchEventTarget
from cdktn_provider_aws.cloudwatch_log_group import CloudwatchLogGroup
from cdktn_provider_aws.data_aws_caller_identity import DataAwsCallerIdentity
from cdktn_provider_aws.data_aws_eks_addon_version import DataAwsEksAddonVersion
from cdktn_provider_aws.data_aws_iam_role import DataAwsIamRole
from cdktn_provider_aws.dynamodb_table import DynamodbTable
from cdktn_provider_aws.ecr_repository import EcrRepository
from cdktn_provider_aws.eks_access_entry import EksAccessEntry
from cdktn_provider_aws.eks_access_policy_association import EksAccessPolicyAssociation
from cdktn_provider_aws.eks_addon import EksAddon
from cdktn_provider_aws.eks_cluster import EksCluster
from cdktn_provider_aws.eks_node_group import EksNodeGroup
from cdktn_provider_aws.eks_pod_identity_association import EksPodIdentityAssociation
from cdktn_provider_aws.fis_experiment_template import FisExperimentTemplate
from cdktn_provider_aws.iam_instance_profile import IamInstanceProfile
from cdktn_provider_aws.iam_role import IamRole
from cdktn_provider_aws.iam_role_policy import IamRolePolicy
from cdktn_provider_aws.iam_role_policy_attachment import IamRolePolicyAttachment
from cdktn_provider_aws.kms_key import KmsKey
from cdktn_provider_aws.launch_template import LaunchTemplate
from cdktn_provider_aws.s3_bucket import S3Bucket
from cdktn_provider_aws.s3_bucket_lifecycle_configuration import S3BucketLifecycleConfiguration
from cdktn_provider_aws.s3_bucket_public_access_block import S3BucketPublicAccessBlock
from cdktn_provider_aws.s3_bucket_server_side_encryption_configuration import (
    S3BucketServerSideEncryptionConfigurationA,
)
from cdktn_provider_aws.s3_bucket_versioning import S3BucketVersioningA
from cdktn_provider_aws.security_group import SecurityGroup
from cdktn_provider_aws.sqs_queue import SqsQueue
from cdktn_provider_aws.sqs_queue_policy import SqsQueuePolicy
from constructs import Construct

from facts.config import Config
from facts.kube_keys import LABEL_DISCOVERY, LABEL_NODEPOOL
from facts.names import COLLECTOR, SPOT_SLR, TAG_PROJECT
from infra import iam_policies as pol
from infra.ci_policies import boundary_arn
from infra.jsii_structs import camel
from infra.network import NetworkStack, aws_provider, local_state

MANAGED = "arn:aws:iam::aws:policy/"
INTERRUPTION_EVENTS = {
    "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
    "health": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
}


EXPORT_NONCURRENT_DAYS = 30  # an overwritten FOCUS partition stays recoverable this long

NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",
)


class ClusterStack(TerraformStack):
    def node_role_with_policies(self, prefix: str, name: str) -> IamRole:
        """An EC2 node role named `name` with the managed policies every EKS node needs."""
        role = IamRole(
            self,
            f"{prefix}-role",
            name=name,
            assume_role_policy=pol.trust("ec2.amazonaws.com"),
            permissions_boundary=self.boundary,
        )
        for i, p in enumerate(NODE_POLICIES):
            IamRolePolicyAttachment(self, f"{prefix}-policy-{i}", role=role.name, policy_arn=MANAGED + p)
        return role

    def __init__(self, scope: Construct, c: Config, net: NetworkStack):
        super().__init__(scope, "cluster")
        aws_provider(self, c)
        local_state(self, c, "cluster")
        self.account = DataAwsCallerIdentity(self, "account").account_id
        # Every role here carries the nightly's permissions boundary (infra/ci_boundary.py).
        self.boundary = boundary_arn(c, self.account)
        # Read, never managed: preflight guarantees it exists (see module docstring).
        self.spot_slr = DataAwsIamRole(self, "spot-slr", name=SPOT_SLR)
        # Nodes boot only with egress: this holds the NAT routes, and every node launcher depends on it.
        self.egress = DataResource(self, "egress", input={"nat_routes": net.egress_route_ids})
        # One method per concern, in the order their resources are declared.
        self.add_encryption(c)
        self.add_control_plane(c, net)
        self.add_system_nodes(c, net)
        self.add_karpenter(c)
        self.add_fis(c)
        self.add_cost_table(c)
        self.add_export_bucket(c)
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
        cluster_sg = SecurityGroup(
            self,
            "cluster-sg",
            name=c.cluster_role,
            vpc_id=net.vpc.id,
            description="EKS cluster and Karpenter nodes",
            tags={LABEL_DISCOVERY: name, "Name": c.cluster_role},
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
        system_role = self.node_role_with_policies("system-node", c.system_node_role)
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
            tag_specifications=camel([{"resource_type": "instance", "tags": c.tags}]),
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
                depends_on=[self.system_nodes] if addon == "coredns" else None,
            )

    def add_karpenter(self, c: Config) -> None:
        """Karpenter's node role and instance profile, its interruption queue with the EventBridge rules
        feeding it, and its controller role (tag-scoped) through pod identity."""
        name, account = c.cluster_name, self.account
        self.node_role = self.node_role_with_policies("karpenter-node", c.karpenter_node_role)
        IamInstanceProfile(
            self, "karpenter-node-profile", name=c.karpenter_node_role, role=self.node_role.name
        )
        EksAccessEntry(
            self,
            "karpenter-node-access",
            cluster_name=self.cluster.name,
            principal_arn=self.node_role.arn,
            type="EC2_LINUX",
        )

        self.queue = SqsQueue(
            self,
            "interruption-queue",
            name=c.interruption_queue,
            message_retention_seconds=300,
            sqs_managed_sse_enabled=True,
        )
        SqsQueuePolicy(
            self,
            "interruption-queue-policy",
            queue_url=self.queue.url,
            policy=pol.interruption_queue(self.queue.arn),
        )
        for rule_name, pattern in INTERRUPTION_EVENTS.items():
            rule = CloudwatchEventRule(
                self, f"rule-{rule_name}", name=f"{name}-{rule_name}", event_pattern=Fn.jsonencode(pattern)
            )
            CloudwatchEventTarget(
                self, f"rule-{rule_name}-target", rule=rule.name, target_id="karpenter", arn=self.queue.arn
            )

        self.controller_role = IamRole(
            self,
            "karpenter-controller-role",
            name=c.karpenter_controller_role,
            assume_role_policy=pol.POD_IDENTITY_TRUST,
            permissions_boundary=self.boundary,
        )
        IamRolePolicy(
            self,
            "karpenter-controller-policy",
            role=self.controller_role.name,
            policy=pol.karpenter_controller(name, c.region, account, self.node_role.arn, self.queue.arn),
        )
        EksPodIdentityAssociation(
            self,
            "karpenter-pod-identity",
            cluster_name=self.cluster.name,
            namespace="kube-system",
            service_account="karpenter",
            role_arn=self.controller_role.arn,
        )

    def add_fis(self, c: Config) -> None:
        """FIS: interrupt only this project's spot GPU instances."""
        name, account = c.cluster_name, self.account
        fis_role = IamRole(
            self,
            "fis-role",
            name=c.fis_role,
            assume_role_policy=pol.trust("fis.amazonaws.com"),
            permissions_boundary=self.boundary,
        )
        IamRolePolicy(
            self,
            "fis-policy",
            role=fis_role.name,
            policy=pol.fis_spot(c.region, account, c.nodepool_name, c.project),
        )
        self.fis_template = FisExperimentTemplate(
            self,
            "fis-spot",
            description=f"{name}: interrupt one spot GPU node of NodePool {c.nodepool_name}",
            role_arn=fis_role.arn,
            stop_condition=camel([{"source": "none"}]),
            target=camel(
                [
                    {
                        "name": "SpotGpuNodes",
                        "resource_type": "aws:ec2:spot-instance",
                        "selection_mode": "COUNT(1)",
                        "resource_tag": [
                            {"key": LABEL_NODEPOOL, "value": c.nodepool_name},
                            {"key": TAG_PROJECT, "value": c.project},
                        ],
                        "filter": [{"path": "State.Name", "values": ["running"]}],
                    }
                ]
            ),
            action=camel(
                [
                    {
                        "name": "interrupt",
                        "action_id": "aws:ec2:send-spot-instance-interruptions",
                        "parameter": [{"key": "durationBeforeInterruption", "value": "PT2M"}],
                        "target": {"key": "SpotInstances", "value": "SpotGpuNodes"},
                    }
                ]
            ),
            tags={"Name": f"{name}-spot-interruption"},
        )

    def add_cost_table(self, c: Config) -> None:
        """The cost table, and the collector's identity and image repository."""
        self.table = DynamodbTable(
            self,
            "cost-table",
            name=c.cost_table,
            billing_mode="PAY_PER_REQUEST",
            hash_key="ResourceId",
            range_key="ChargePeriodStart",
            attribute=camel(
                [{"name": "ResourceId", "type": "S"}, {"name": "ChargePeriodStart", "type": "S"}]
            ),
            server_side_encryption={"enabled": True, "kms_key_arn": self.key.arn},
            point_in_time_recovery={"enabled": True},
            deletion_protection_enabled=False,
        )
        collector_role = IamRole(
            self,
            "collector-role",
            name=c.collector_role,
            assume_role_policy=pol.POD_IDENTITY_TRUST,
            permissions_boundary=self.boundary,
        )
        IamRolePolicy(
            self, "collector-policy", role=collector_role.name, policy=pol.collector(self.table.arn, c.region)
        )
        EksPodIdentityAssociation(
            self,
            "collector-pod-identity",
            cluster_name=self.cluster.name,
            namespace=c.monitoring_namespace,
            service_account=COLLECTOR,
            role_arn=collector_role.arn,
        )
        self.ecr = EcrRepository(
            self,
            "collector-repo",
            name=c.collector_repository,
            image_tag_mutability="IMMUTABLE",
            image_scanning_configuration={"scan_on_push": True},
            encryption_configuration=camel([{"encryption_type": "KMS", "kms_key": self.key.arn}]),
            force_delete=True,
        )

    def add_export_bucket(self, c: Config) -> None:
        """The FOCUS export bucket (`gpu-finops cost export --to s3://<bucket>/focus`): ours by tag, versioned,
        KMS-encrypted with the cluster key, no public access, old versions expired. Teardown empties and
        deletes it; Terraform never force-destroys data."""
        self.export_bucket = S3Bucket(self, "focus-export", bucket=c.export_bucket, tags=c.tags)
        bucket = self.export_bucket.id
        S3BucketPublicAccessBlock(
            self,
            "focus-export-public-access",
            bucket=bucket,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
        )
        S3BucketVersioningA(
            self, "focus-export-versioning", bucket=bucket, versioning_configuration={"status": "Enabled"}
        )
        S3BucketServerSideEncryptionConfigurationA(
            self,
            "focus-export-sse",
            bucket=bucket,
            rule=camel(
                [
                    {
                        "apply_server_side_encryption_by_default": {
                            "sse_algorithm": "aws:kms",
                            "kms_master_key_id": self.key.arn,
                        },
                        "bucket_key_enabled": True,
                    }
                ]
            ),
        )
        S3BucketLifecycleConfiguration(
            self,
            "focus-export-lifecycle",
            bucket=bucket,
            rule=camel(
                [
                    {
                        "id": "expire-noncurrent-and-abort-uploads",
                        "status": "Enabled",
                        "filter": [{"prefix": ""}],
                        "noncurrent_version_expiration": [{"noncurrent_days": EXPORT_NONCURRENT_DAYS}],
                        "abort_incomplete_multipart_upload": [{"days_after_initiation": 7}],
                    }
                ]
            ),
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
