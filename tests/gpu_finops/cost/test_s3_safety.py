"""S3 reads and writes of the FOCUS export: a key from the bucket never writes outside
the folder it is copied to, and every S3 call names the bucket owner it expects."""

from __future__ import annotations

import boto3
import pytest

from gpu_finops.cost.tenant_report import by_tenant
from gpu_finops.facts.errors import UsageError

BUCKET = "gpu-finops-focus-123456789012"


@pytest.fixture
def s3(aws_env):
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


@pytest.mark.parametrize(
    "key",
    [
        "focus/billing_period=2026-11/../../../escaped.txt",
        "focus/billing_period=2026-11/../../escaped.txt",
        "focus/billing_period=2026-11/./../../escaped.txt",
    ],
)
def test_a_key_with_dot_dot_is_refused_naming_it_and_nothing_is_written_outside(
    s3, tmp_path, monkeypatch, key
):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"pwned")
    with pytest.raises(UsageError) as caught:
        by_tenant(f"s3://{BUCKET}/focus")
    assert f"s3://{BUCKET}/{key}: an object key that would be copied outside" in str(caught.value)
    assert not list(tmp_path.rglob("escaped.txt")), "a key wrote outside its folder"


def test_an_absolute_key_is_refused(s3, tmp_path, monkeypatch):
    s3.put_object(Bucket=BUCKET, Key="/billing_period=2026-11/focus.parquet", Body=b"x")
    with pytest.raises(UsageError, match="an object key that would be copied outside"):
        by_tenant(f"s3://{BUCKET}")


def _calls(client) -> list[tuple[str, dict]]:
    seen: list[tuple[str, dict]] = []
    client.meta.events.register(
        "provide-client-params.s3.*", lambda params, model, **_: seen.append((model.name, dict(params)))
    )
    return seen


def test_every_s3_call_of_the_report_names_the_expected_bucket_owner(s3, tmp_path):
    s3.put_object(Bucket=BUCKET, Key="focus/billing_period=2026-11/focus.parquet", Body=b"not parquet")
    client = boto3.client("s3", region_name="us-east-1")
    seen = _calls(client)
    with pytest.raises(Exception, match="focus.parquet"):  # not Parquet: refused after the copy
        by_tenant(f"s3://{BUCKET}/focus", s3_client=client)
    assert [name for name, _ in seen] == ["ListObjectsV2", "GetObject"]
    assert all(p.get("ExpectedBucketOwner") == "123456789012" for _, p in seen), seen


def test_every_s3_call_of_the_export_names_the_expected_bucket_owner(s3, tmp_path):
    from gpu_finops.cost.export import Destination

    client = boto3.client("s3", region_name="us-east-1")
    seen = _calls(client)
    Destination(f"s3://{BUCKET}/focus", client).put("billing_period=2026-11/focus.parquet", b"x")
    assert [name for name, _ in seen] == ["PutObject"]
    assert all(p.get("ExpectedBucketOwner") == "123456789012" for _, p in seen), seen


def test_a_named_owner_is_the_one_every_call_expects(s3):
    """The owner is the caller's account unless named (the configured account): S3 itself refuses a
    bucket another account owns (403 AccessDenied, exit 3); moto does not check, so the parameter is."""
    from gpu_finops.cost.s3_access import S3Prefix

    client = boto3.client("s3", region_name="us-east-1")
    seen = _calls(client)
    S3Prefix.at(f"s3://{BUCKET}/focus", client, owner="210987654321").keys()
    assert [p["ExpectedBucketOwner"] for _, p in seen] == ["210987654321"]


def test_the_absolute_key_check_is_by_segment_not_by_prefix(tmp_path):
    from gpu_finops.cost.s3_access import relative_key

    assert str(relative_key("b", "focus/billing_period=..x/f", "focus", tmp_path)) == "billing_period=..x/f"
    for key in ("focus/a/../../x", "focus//etc/passwd", "focus/.."):
        with pytest.raises(UsageError, match=f"s3://b/{key}: an object key"):
            relative_key("b", key, "focus", tmp_path)
