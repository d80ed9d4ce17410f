"""Teardown's S3 calls name our account as the bucket owner: a bucket of the export's
name that another account owns answers 403 on every call, so it is never read, emptied or deleted."""

from __future__ import annotations

from gpu_finops.facts.config import Config
from teardown.model import Context, TeardownConfig
from teardown.types.storage import delete_bucket, list_buckets

ACCOUNT = "123456789012"  # moto's
OURS = [
    {"Key": "gpu-finops.io/project", "Value": "gpu-finops"},
    {"Key": "gpu-finops.io/cluster", "Value": "gpu-finops"},
]


def test_every_s3_call_of_teardown_names_our_account_as_the_owner(boto_session):
    s3 = boto_session.client("s3")
    bucket = Config().export_bucket(ACCOUNT)
    assert bucket == f"gpu-finops-focus-{ACCOUNT}"
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": OURS})
    s3.put_object(Bucket=bucket, Key="focus/x", Body=b"x")
    ctx = Context(TeardownConfig(region="us-east-1", allowed_accounts=(ACCOUNT,)), boto_session)
    seen: list[tuple[str, dict]] = []
    ctx.client("s3").meta.events.register(
        "provide-client-params.s3.*", lambda params, model, **_: seen.append((model.name, dict(params)))
    )
    (found,) = list_buckets(ctx)
    delete_bucket(ctx, found)
    names = [name for name, _ in seen]
    assert names[0] == "ListBuckets" and {"GetBucketLocation", "GetBucketTagging", "ListObjectVersions",
                                          "DeleteObjects", "DeleteBucket"} <= set(names)  # fmt: skip
    assert {name: p.get("ExpectedBucketOwner") for name, p in seen[1:]} == dict.fromkeys(names[1:], ACCOUNT)
    assert not s3.list_buckets()["Buckets"]
