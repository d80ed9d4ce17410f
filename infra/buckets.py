"""A private, versioned, encrypted S3 bucket: what the FOCUS export bucket and the state bucket share.

No public access, versioning on, encryption by default (`sse`: S3's own KMS key, or the given one), and a
lifecycle that expires earlier versions after `noncurrent_days` and aborts multipart uploads after 7 days.
Each part's construct id is `<name>-<part>`, so a bucket built here keeps the ids it was applied with."""

from __future__ import annotations

from typing import Any

from cdktn_provider_aws.s3_bucket_lifecycle_configuration import S3BucketLifecycleConfiguration
from cdktn_provider_aws.s3_bucket_public_access_block import S3BucketPublicAccessBlock
from cdktn_provider_aws.s3_bucket_server_side_encryption_configuration import (
    S3BucketServerSideEncryptionConfigurationA,
)
from cdktn_provider_aws.s3_bucket_versioning import S3BucketVersioningA
from constructs import Construct

from infra.jsii_structs import camel


def private_versioned(
    scope: Construct, name: str, bucket: Any, *, noncurrent_days: int, kms_key: Any = None
) -> None:
    """The public access block, versioning, default encryption and lifecycle of `bucket` (its id)."""
    S3BucketPublicAccessBlock(
        scope,
        f"{name}-public-access",
        bucket=bucket,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
    )
    S3BucketVersioningA(
        scope, f"{name}-versioning", bucket=bucket, versioning_configuration={"status": "Enabled"}
    )
    default = {"sse_algorithm": "aws:kms", **({"kms_master_key_id": kms_key} if kms_key is not None else {})}
    S3BucketServerSideEncryptionConfigurationA(
        scope,
        f"{name}-sse",
        bucket=bucket,
        rule=camel([{"apply_server_side_encryption_by_default": default, "bucket_key_enabled": True}]),
    )
    S3BucketLifecycleConfiguration(
        scope,
        f"{name}-lifecycle",
        bucket=bucket,
        rule=camel(
            [
                {
                    "id": "expire-noncurrent-and-abort-uploads",
                    "status": "Enabled",
                    "filter": [{"prefix": ""}],
                    "noncurrent_version_expiration": [{"noncurrent_days": noncurrent_days}],
                    "abort_incomplete_multipart_upload": [{"days_after_initiation": 7}],
                }
            ]
        ),
    )
