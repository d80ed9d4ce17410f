"""The cluster stack's data: the cost table, the collector's identity and image repository, and the FOCUS
export bucket.

`add_cost_data(scope, CostDataInputs) -> CostDataResources` is a construct-like builder: everything it
reads comes in through the frozen inputs, everything the rest of the stack reads goes out through the
frozen result, and it knows nothing of `ClusterStack` (infra/cluster.py calls it, never the reverse).
It creates its resources directly in the `scope` it is given (the cluster stack), not in a nested
Construct: CDK Terrain derives a resource's Terraform logical ID from its construct path, so a nested
construct would rename every resource and Terraform would plan to destroy and recreate the cost table
(and its data) on an applied stack."""

from __future__ import annotations

from dataclasses import dataclass

from cdktn_provider_aws.dynamodb_table import DynamodbTable
from cdktn_provider_aws.ecr_repository import EcrRepository
from cdktn_provider_aws.eks_pod_identity_association import EksPodIdentityAssociation
from cdktn_provider_aws.iam_role import IamRole
from cdktn_provider_aws.iam_role_policy import IamRolePolicy
from cdktn_provider_aws.s3_bucket import S3Bucket
from constructs import Construct

from gpu_finops.facts.config import Config
from gpu_finops.facts.names import COLLECTOR
from iam import iam_policies as pol
from infra.buckets import private_versioned
from infra.jsii_structs import camel

EXPORT_NONCURRENT_DAYS = 30  # an overwritten FOCUS partition stays recoverable this long


@dataclass(frozen=True)
class CostDataInputs:
    """What the cost data needs from the rest of the cluster stack."""

    config: Config
    account: str  # the account the stack applies to (the export bucket's name carries it)
    boundary: str  # the permissions boundary ARN every role carries (iam/ci_boundary.py)
    key_arn: str  # the cluster's customer-managed KMS key (table, image repository, export bucket)
    cluster_name: str  # the EKS cluster's name attribute, so pod identity depends on it


@dataclass(frozen=True)
class CostDataResources:
    """What the cluster stack's outputs and the addons stack read back."""

    table: DynamodbTable
    collector_role: IamRole
    ecr: EcrRepository
    export_bucket: S3Bucket


def add_cost_data(scope: Construct, given: CostDataInputs) -> CostDataResources:
    """The cost table, the collector's identity and image repository, then the FOCUS export bucket; all
    created in `scope` with the logical IDs they have always had (see the module docstring)."""
    table, collector_role, ecr = _add_cost_table(scope, given)
    return CostDataResources(
        table=table,
        collector_role=collector_role,
        ecr=ecr,
        export_bucket=_add_export_bucket(scope, given),
    )


def _add_cost_table(scope: Construct, given: CostDataInputs) -> tuple[DynamodbTable, IamRole, EcrRepository]:
    """The cost table, and the collector's identity and image repository."""
    c = given.config
    table = DynamodbTable(
        scope,
        "cost-table",
        name=c.cost_table,
        billing_mode="PAY_PER_REQUEST",
        hash_key="ResourceId",
        range_key="ChargePeriodStart",
        attribute=camel([{"name": "ResourceId", "type": "S"}, {"name": "ChargePeriodStart", "type": "S"}]),
        server_side_encryption={"enabled": True, "kms_key_arn": given.key_arn},
        point_in_time_recovery={"enabled": True},
        deletion_protection_enabled=False,
    )
    collector_role = IamRole(
        scope,
        "collector-role",
        name=c.collector_role,
        assume_role_policy=pol.POD_IDENTITY_TRUST,
        permissions_boundary=given.boundary,
    )
    IamRolePolicy(
        scope,
        "collector-policy",
        role=collector_role.name,
        policy=pol.collector(table.arn, given.key_arn, c.region),
    )
    EksPodIdentityAssociation(
        scope,
        "collector-pod-identity",
        cluster_name=given.cluster_name,
        namespace=c.monitoring_namespace,
        service_account=COLLECTOR,
        role_arn=collector_role.arn,
    )
    ecr = EcrRepository(
        scope,
        "collector-repo",
        name=c.collector_repository,
        image_tag_mutability="IMMUTABLE",
        image_scanning_configuration={"scan_on_push": True},
        encryption_configuration=camel([{"encryption_type": "KMS", "kms_key": given.key_arn}]),
        force_delete=True,
    )
    return table, collector_role, ecr


def _add_export_bucket(scope: Construct, given: CostDataInputs) -> S3Bucket:
    """The FOCUS export bucket (`gpu-finops cost export --to s3://<bucket>/focus`): ours by tag, versioned,
    KMS-encrypted with the cluster key, no public access, old versions expired. Teardown empties and
    deletes it; Terraform never force-destroys data."""
    c = given.config
    export_bucket = S3Bucket(scope, "focus-export", bucket=c.export_bucket(given.account), tags=c.tags)
    private_versioned(
        scope, "focus-export", export_bucket.id, noncurrent_days=EXPORT_NONCURRENT_DAYS, kms_key=given.key_arn
    )
    return export_bucket
