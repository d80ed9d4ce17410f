"""Storage and key registrations: EBS volumes, the collector's ECR repository, the FOCUS export bucket
and the KMS key that encrypts the cluster's secrets, logs, queue and table. Each is ours by tag."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from teardown.listing import owned, pages, unless_gone
from teardown.model import Context, Resource, gone_ok
from teardown.registry import ResourceType, register

KMS_MIN_WINDOW_DAYS = 7  # the shortest deletion window KMS allows (7-30)
KMS_PENDING = "PendingDeletion"


# --- EBS volumes ----------------------------------------------------------------------------------------
def list_volumes(ctx: Context) -> list[Resource]:
    """Leaked volumes: PVs the EBS CSI driver created (tagged `kubernetes.io/cluster/<c>=owned`) and
    volumes of nodes launched with our tags whose DeleteOnTermination was off."""
    out = []
    for v in pages(ctx, "ec2", "describe_volumes", "Volumes"):
        if v.get("State") == "deleted":
            continue
        r = owned(
            ctx,
            "ebs_volume",
            v["VolumeId"],
            v.get("Tags"),
            v.get("State", "available"),
            attached_to=[a["InstanceId"] for a in v.get("Attachments", [])],
        )
        if r:
            out.append(r)
    return out


@gone_ok
def delete_volume(ctx: Context, r: Resource) -> None:
    if r.state != "deleting":
        ctx.client("ec2").delete_volume(VolumeId=r.id)  # in use: VolumeInUse, retried until its node is gone


register(
    ResourceType(
        "ebs_volume",
        list_volumes,
        delete_volume,
        depends_on=("ec2_instance", "eks_nodegroup", "eks_cluster"),
        why_left="a PersistentVolume's disk (the EBS CSI driver's) outlives its cluster unless the PV "
        "was deleted first; still attached while its instance shuts down",
    )
)


# --- ECR repository -------------------------------------------------------------------------------------
def list_repositories(ctx: Context) -> list[Resource]:
    """Ours by tag, among repositories named like ours (`<cluster>/collector`): the nightly's role may
    read the tags of our repositories only, and reading every repository's would cost a call each."""
    out = []
    ecr = ctx.client("ecr")
    for repo in pages(ctx, "ecr", "describe_repositories", "repositories"):
        if not ctx.config.owns_name(repo["repositoryName"]):
            continue
        arn = repo["repositoryArn"]
        tags = unless_gone(lambda arn=arn: ecr.list_tags_for_resource(resourceArn=arn).get("tags", []))
        r = (
            None
            if tags is None
            else owned(ctx, "ecr_repository", repo["repositoryName"], tags, name=repo["repositoryName"])
        )
        if r:
            out.append(r)
    return out


@gone_ok
def delete_repository(ctx: Context, r: Resource) -> None:
    ctx.client("ecr").delete_repository(repositoryName=r.id, force=True)  # images and all


register(ResourceType("ecr_repository", list_repositories, delete_repository))


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
    for b in s3.list_buckets().get("Buckets", []):
        name = b["Name"]
        if not ctx.config.owns_name(name):
            continue
        if unless_gone(lambda name=name: _bucket_region(s3, name, owner)) != ctx.config.region:
            continue
        tags = unless_gone(lambda name=name: _bucket_tags(s3, name, owner))
        r = None if tags is None else owned(ctx, "s3_bucket", name, tags, name=name)
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
                ExpectedBucketOwner=owner,
                Delete={"Objects": batch[i : i + 1000], "Quiet": True},
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
    )
)


# --- the KMS key ----------------------------------------------------------------------------------------
def list_keys(ctx: Context) -> list[Resource]:
    """Customer-managed keys, ours by tag. A key pending deletion is listed in that state, which counts
    as gone (KMS deletes it when its window ends; nothing more can be done but wait)."""
    out = []
    kms = ctx.client("kms")
    for k in pages(ctx, "kms", "list_keys", "Keys"):
        key_id = k["KeyId"]
        meta = unless_gone(lambda key_id=key_id: kms.describe_key(KeyId=key_id)["KeyMetadata"])
        if (
            meta is None
            or meta.get("KeyManager") != "CUSTOMER"
            or meta.get("KeyState") == "PendingReplicaDeletion"
        ):
            continue
        tags = unless_gone(lambda key_id=key_id: kms.list_resource_tags(KeyId=key_id).get("Tags", []))
        tag_list = [{"Key": t["TagKey"], "Value": t["TagValue"]} for t in tags or []]
        r = owned(
            ctx,
            "kms_key",
            key_id,
            tag_list,
            meta.get("KeyState", "Enabled"),
            name=meta.get("Description") or key_id,
            deletion_date=str(meta.get("DeletionDate") or ""),
        )
        if r:
            out.append(r)
    return out


@gone_ok
def delete_key(ctx: Context, r: Resource) -> None:
    """Schedule deletion with the shortest window KMS allows; the key is unusable from now on."""
    if r.state != KMS_PENDING:
        ctx.client("kms").schedule_key_deletion(KeyId=r.id, PendingWindowInDays=KMS_MIN_WINDOW_DAYS)


register(
    ResourceType(
        "kms_key",
        list_keys,
        delete_key,
        # everything it encrypts goes first: EKS secrets, the log group, the queue, the table, the images
        depends_on=(
            "eks_cluster",
            "log_group",
            "sqs_queue",
            "dynamodb_table",
            "ecr_repository",
            "s3_bucket",
            "ebs_volume",
        ),
        why_left="KMS refuses to schedule deletion of a key it cannot find in this region, or the caller "
        "lacks kms:ScheduleKeyDeletion",
        gone_states=(KMS_PENDING,),
    )
)
