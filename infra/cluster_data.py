"""The cluster stack's data: the cost table, the collector's identity and image repository, and the FOCUS
export bucket. Called by `ClusterStack` (infra/cluster.py) in declaration order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdktn_provider_aws.dynamodb_table import DynamodbTable
from cdktn_provider_aws.ecr_repository import EcrRepository
from cdktn_provider_aws.eks_pod_identity_association import EksPodIdentityAssociation
from cdktn_provider_aws.iam_role import IamRole
from cdktn_provider_aws.iam_role_policy import IamRolePolicy
from cdktn_provider_aws.s3_bucket import S3Bucket
from cdktn_provider_aws.s3_bucket_lifecycle_configuration import S3BucketLifecycleConfiguration
from cdktn_provider_aws.s3_bucket_public_access_block import S3BucketPublicAccessBlock
from cdktn_provider_aws.s3_bucket_server_side_encryption_configuration import (
    S3BucketServerSideEncryptionConfigurationA,
)
from cdktn_provider_aws.s3_bucket_versioning import S3BucketVersioningA

from facts.config import Config
from facts.names import COLLECTOR
from infra import iam_policies as pol
from infra.jsii_structs import camel

if TYPE_CHECKING:
    from infra.cluster import ClusterStack

EXPORT_NONCURRENT_DAYS = 30  # an overwritten FOCUS partition stays recoverable this long


def add_cost_table(stack: ClusterStack, c: Config) -> None:
    """The cost table, and the collector's identity and image repository."""
    stack.table = DynamodbTable(
        stack,
        "cost-table",
        name=c.cost_table,
        billing_mode="PAY_PER_REQUEST",
        hash_key="ResourceId",
        range_key="ChargePeriodStart",
        attribute=camel([{"name": "ResourceId", "type": "S"}, {"name": "ChargePeriodStart", "type": "S"}]),
        server_side_encryption={"enabled": True, "kms_key_arn": stack.key.arn},
        point_in_time_recovery={"enabled": True},
        deletion_protection_enabled=False,
    )
    collector_role = IamRole(
        stack,
        "collector-role",
        name=c.collector_role,
        assume_role_policy=pol.POD_IDENTITY_TRUST,
        permissions_boundary=stack.boundary,
    )
    IamRolePolicy(
        stack, "collector-policy", role=collector_role.name, policy=pol.collector(stack.table.arn, c.region)
    )
    EksPodIdentityAssociation(
        stack,
        "collector-pod-identity",
        cluster_name=stack.cluster.name,
        namespace=c.monitoring_namespace,
        service_account=COLLECTOR,
        role_arn=collector_role.arn,
    )
    stack.ecr = EcrRepository(
        stack,
        "collector-repo",
        name=c.collector_repository,
        image_tag_mutability="IMMUTABLE",
        image_scanning_configuration={"scan_on_push": True},
        encryption_configuration=camel([{"encryption_type": "KMS", "kms_key": stack.key.arn}]),
        force_delete=True,
    )


def add_export_bucket(stack: ClusterStack, c: Config) -> None:
    """The FOCUS export bucket (`gpu-finops cost export --to s3://<bucket>/focus`): ours by tag, versioned,
    KMS-encrypted with the cluster key, no public access, old versions expired. Teardown empties and
    deletes it; Terraform never force-destroys data."""
    stack.export_bucket = S3Bucket(stack, "focus-export", bucket=c.export_bucket(stack.account), tags=c.tags)
    bucket = stack.export_bucket.id
    S3BucketPublicAccessBlock(
        stack,
        "focus-export-public-access",
        bucket=bucket,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
    )
    S3BucketVersioningA(
        stack, "focus-export-versioning", bucket=bucket, versioning_configuration={"status": "Enabled"}
    )
    S3BucketServerSideEncryptionConfigurationA(
        stack,
        "focus-export-sse",
        bucket=bucket,
        rule=camel(
            [
                {
                    "apply_server_side_encryption_by_default": {
                        "sse_algorithm": "aws:kms",
                        "kms_master_key_id": stack.key.arn,
                    },
                    "bucket_key_enabled": True,
                }
            ]
        ),
    )
    S3BucketLifecycleConfiguration(
        stack,
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
