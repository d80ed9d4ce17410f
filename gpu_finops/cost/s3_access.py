"""S3 for the FOCUS export and the report that reads it: every call names the bucket owner it expects, and
every object key copied to disk is checked to stay under the folder it is copied to.

Bucket names are global: without `ExpectedBucketOwner` a writer whose bucket was deleted (or never made)
writes our cost data into whoever owns that name now, and a reader reads their files. The owner is the
caller's account (STS), unless the caller names one. Keys come from the bucket, which is data, not ours
to trust: a key with a `..` segment or a leading `/` would be written outside the copy's folder.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from gpu_finops.facts.errors import UsageError, excerpt


def split_s3(url: str) -> tuple[str, str]:
    """s3://bucket/prefix -> (bucket, prefix without slashes at either end)."""
    rest = url.removeprefix("s3://")
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise UsageError(f"{excerpt(url)}: not an s3:// URL with a bucket; write s3://BUCKET/PREFIX")
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", bucket):  # S3's own rule for a bucket name
        raise UsageError(
            f"{excerpt(url)}: {excerpt(bucket, 70)!r} is not an S3 bucket name (3-63 of a-z, 0-9, '.' and '-', "
            "starting and ending with a letter or digit)"
        )
    return bucket, prefix.strip("/")


def caller_account(session: Any = None) -> str:
    """The account of the credentials in use (STS GetCallerIdentity): the owner our buckets must have."""
    if session is None:
        import boto3

        session = boto3.Session()
    return session.client("sts").get_caller_identity()["Account"]


def relative_key(bucket: str, key: str, prefix: str, folder: Path) -> PurePosixPath:
    """`key` below `prefix`, as a relative path that stays under `folder`; a UsageError naming the key if
    it is absolute or has a `..` segment (S3 allows both; a file system resolves them)."""
    rest = key[len(prefix) + 1 :] if prefix else key
    if "\0" in rest:  # S3 allows it; no file system does
        raise UsageError(
            f"s3://{bucket}/{excerpt(repr(key))}: an object key holding a NUL byte, which no local file name "
            "can; nothing was copied: remove or rename that object"
        )
    relative = PurePosixPath(rest)
    inside = (folder / relative).resolve().is_relative_to(folder.resolve())
    if rest.startswith("/") or ".." in relative.parts or not inside:
        raise UsageError(
            f"s3://{bucket}/{excerpt(key)}: an object key that would be copied outside {folder} (an absolute "
            "path or a '..' segment); nothing was copied: remove or rename that object"
        )
    return relative


@dataclass
class S3Prefix:
    """One s3://bucket/prefix, read and written with the expected owner on every call."""

    bucket: str
    prefix: str
    client: Any
    owner: str

    @classmethod
    def at(cls, url: str, client: Any = None, owner: str | None = None) -> S3Prefix:
        bucket, prefix = split_s3(url)
        if client is None:
            import boto3

            client = boto3.client("s3")
        return cls(bucket, prefix, client, owner or caller_account())

    def key(self, relative: str) -> str:
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def keys(self) -> list[str]:
        """Every object key under the prefix."""
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket,
            Prefix=f"{self.prefix}/" if self.prefix else "",
            ExpectedBucketOwner=self.owner,
        )
        return [obj["Key"] for page in pages for obj in page.get("Contents", [])]

    def put(self, relative: str, data: bytes) -> str:
        key = self.key(relative)
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data, ExpectedBucketOwner=self.owner)
        return f"s3://{self.bucket}/{key}"

    def copy_to(self, folder: Path, wanted: str) -> Path:
        """The objects whose relative key starts with `wanted`, copied under `folder`. Every key under the
        prefix is checked before the first is copied, so a bad key leaves nothing behind; folder markers
        (keys ending in `/`) are skipped."""
        paths = {
            k: relative_key(self.bucket, k, self.prefix, folder) for k in self.keys() if not k.endswith("/")
        }
        for key, relative in paths.items():
            if not str(relative).startswith(wanted):
                continue  # the unpriced list and anything else beside the dataset
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            body = self.client.get_object(Bucket=self.bucket, Key=key, ExpectedBucketOwner=self.owner)["Body"]
            with path.open("wb") as out:
                shutil.copyfileobj(body, out)
        return folder
