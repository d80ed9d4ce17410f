"""Storage and keys: EBS volumes, the collector's ECR repository and the KMS key that encrypts the
cluster's secrets, logs, queue and table as rows; the FOCUS export bucket as code. Each is ours by tag."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from teardown.listing import owned, pages, unless_gone
from teardown.model import Context, Resource, gone_ok
from teardown.registry import ResourceType, register, register_row
from teardown.row import Call, Row, provenance_details

S3_PAGE = 10_000  # the most ListBuckets returns in one page
KMS_MIN_WINDOW_DAYS = 7  # the shortest deletion window KMS allows (7-30)
KMS_PENDING = "PendingDeletion"

# Leaked volumes: PVs the EBS CSI driver created (tagged `kubernetes.io/cluster/<c>=owned`) and volumes
# of nodes launched with our tags whose DeleteOnTermination was off. A volume in use answers VolumeInUse,
# retried until its node is gone.
register_row(Row(
    "ebs_volume", "ec2", "describe_volumes", "Volumes", "VolumeId",
    "delete_volume", "VolumeId",
    state="State", default_state="available", terminal=("deleted",), on_its_way=("deleting",),
    created="CreateTime",
    details={"attached_to": lambda v: [a["InstanceId"] for a in v.get("Attachments", [])]},
    depends_on=("ec2_instance", "eks_nodegroup", "eks_cluster"),
    why_left="a PersistentVolume's disk (the EBS CSI driver's) outlives its cluster unless the PV "
    "was deleted first; still attached while its instance shuts down",
))  # fmt: skip

# Ours by tag, among repositories named like ours (`<cluster>/collector`): the nightly's role may read
# the tags of our repositories only, and reading every repository's would cost a call each. Deleted with
# `force`, images and all.
register_row(Row(
    "ecr_repository", "ecr", "describe_repositories", "repositories", "repositoryName",
    "delete_repository", "repositoryName", delete_kwargs={"force": True},
    tags=Call("list_tags_for_resource", "resourceArn", "repositoryArn", "tags"), name_field="repositoryName",
    only_named_ours=True, created="createdAt",
))  # fmt: skip


# --- the FOCUS export bucket ----------------------------------------------------------------------------
def _bucket_tags(s3: Any, name: str, owner: str) -> list[dict[str, str]]:
    try:
        return s3.get_bucket_tagging(Bucket=name, ExpectedBucketOwner=owner).get("TagSet", [])
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "NoSuchTagSet":
            return []
        raise


def _bucket_region(s3: Any, name: str, owner: str) -> str:
    return (
        s3.get_bucket_location(Bucket=name, ExpectedBucketOwner=owner).get("LocationConstraint")
        or "us-east-1"
    )


def list_buckets(ctx: Context) -> list[Resource]:
    """Buckets in our region, ours by tag, among those named like ours (the export bucket is
    `<cluster>-focus-<account>`): S3 lists every region's buckets, and the nightly's role may read the
    location and tags of our buckets only. Every call names our account as the owner: a bucket another
    account owns answers 403 instead of being read, emptied or deleted."""
    out = []
    s3, owner = ctx.client("s3"), ctx.account()
    # Paged (MaxBuckets): AWS answers an unpaged ListBuckets only under the default bucket quota; only
    # names from our cluster's (`owns_name` then decides which look like ours).
    listed = pages(ctx, "s3", "list_buckets", "Buckets", Prefix=ctx.config.cluster_name, MaxBuckets=S3_PAGE)
    for b in listed:
        name = b["Name"]
        if not ctx.config.owns_name(name):
            continue
        if unless_gone(lambda name=name: _bucket_region(s3, name, owner)) != ctx.config.region:
            continue
        tags = unless_gone(lambda name=name: _bucket_tags(s3, name, owner))
        born = provenance_details(b.get("CreationDate"), {}, b)
        r = None if tags is None else owned(ctx, "s3_bucket", name, tags, name=name, **born)
        if r:
            out.append(r)
    return out


@gone_ok
def delete_bucket(ctx: Context, r: Resource) -> None:
    """Empty it (every object version and delete marker, a thousand a call), then delete it."""
    s3, owner = ctx.client("s3"), ctx.account()
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=r.id, ExpectedBucketOwner=owner):
        batch = [
            {"Key": v["Key"], "VersionId": v["VersionId"]}
            for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
        ]
        for i in range(0, len(batch), 1000):
            result = s3.delete_objects(
                Bucket=r.id,
                Delete={"Objects": batch[i : i + 1000], "Quiet": True},
                ExpectedBucketOwner=owner,
            )
            if result.get("Errors"):
                first = result["Errors"][0]
                raise RuntimeError(
                    f"emptying s3://{r.id}: {len(result['Errors'])} object version(s) not deleted, first "
                    f"{first.get('Key')} ({first.get('Code')}: {first.get('Message')})"
                )
    s3.delete_bucket(Bucket=r.id, ExpectedBucketOwner=owner)


register(
    ResourceType(
        "s3_bucket",
        list_buckets,
        delete_bucket,
        why_left="the FOCUS export bucket: still holds object versions, or a writer added one meanwhile",
        irregular="S3 lists every region's buckets: each one's region is read, and a bucket without tags "
        "answers NoSuchTagSet; deleting it first empties every object version and delete marker",
    )
)


# --- the KMS key ----------------------------------------------------------------------------------------
# Customer-managed keys, ours by tag. A key pending deletion is listed in that state, which counts as gone
# (KMS deletes it when its window ends; nothing more can be done but wait). Deletion is ScheduleKeyDeletion
# with the shortest window KMS allows; the key is unusable from then on.
register_row(Row(
    "kms_key", "kms", "list_keys", "Keys", "KeyId",
    "schedule_key_deletion", "KeyId", delete_kwargs={"PendingWindowInDays": KMS_MIN_WINDOW_DAYS},
    describe=Call("describe_key", "KeyId", "KeyId", "KeyMetadata"),
    skip=lambda m: m.get("KeyManager") != "CUSTOMER" or m.get("KeyState") == "PendingReplicaDeletion",
    tags=Call("list_resource_tags", "KeyId", "KeyId", "Tags", pair=("TagKey", "TagValue")),
    name_field=lambda m: m.get("Description") or m["KeyId"], state="KeyState", default_state="Enabled",
    created="CreationDate",
    on_its_way=(KMS_PENDING,), details={"deletion_date": lambda m: str(m.get("DeletionDate") or "")},
    # everything it encrypts goes first: EKS secrets, the log group, the queue, the table, the images
    depends_on=(
        "eks_cluster", "log_group", "sqs_queue", "dynamodb_table", "ecr_repository", "s3_bucket",
        "ebs_volume",
    ),
    why_left="KMS refuses to schedule deletion of a key it cannot find in this region, or the caller "
    "lacks kms:ScheduleKeyDeletion",
    gone_states=(KMS_PENDING,),
))  # fmt: skip
