"""Teardown's evidence off the runner: the state bucket (`state_backend: s3`, infra/state.py).

One cluster's objects lie under `names.state_prefix(region, cluster)` in `Config.state_bucket(account)`:

- `terraform.<stack>.tfstate`: the cluster stacks' state, written by Terraform's S3 backend (provenance);
- `run.json`: the run record, written by `teardown begin` before anything is created, created only when
  absent (S3's conditional write, `If-None-Match: *`), so two runners never both begin;
- `journal/<process>.jsonl`: the journal, one object per teardown process holding that process's entries
  (S3 has no append; no two processes write one object), read back as one journal with the local file.

Every call names the account as the bucket's expected owner: a bucket of that name in another account (the
name was free once ours was deleted) is refused by S3, never read or written. A missing bucket is an
EvidenceError saying how to create it; any other refusal is AWS's (exit 3).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from gpu_finops.facts.errors import Unreachable, printable
from gpu_finops.facts.names import CLUSTER_STACKS, JOURNAL_FOLDER, state_file, state_prefix


class RemoteEvidenceError(ValueError):
    """The state bucket is missing, or holds an object teardown cannot take as evidence (exit 2)."""


CREATE_RACED = ("PreconditionFailed", "412", "ConditionalRequestConflict", "409")


class TransferCut(Unreachable):
    """An object arrived shorter than S3 said it is (exit 3): never read as a whole, never as bad evidence."""


class RecordExists(Exception):
    """A run record appeared in the bucket between reading and creating it (another runner began)."""


@dataclass
class Remote:
    """The state bucket's objects for one account, region and cluster."""

    s3: Any  # a boto3 S3 client
    bucket: str
    account: str  # the bucket's expected owner
    region: str
    cluster: str
    _parts: dict[str, tuple[str, bytes]] = field(default_factory=dict, repr=False)  # key -> (ETag, body)

    @property
    def prefix(self) -> str:
        return state_prefix(self.region, self.cluster)

    def uri(self, name: str = "") -> str:
        """An object's address, for messages (a key's control characters escaped)."""
        return printable(f"s3://{self.bucket}/{self.prefix}{name}")

    def _call(self, method: str, **kw: Any) -> Any:
        try:
            return getattr(self.s3, method)(Bucket=self.bucket, ExpectedBucketOwner=self.account, **kw)
        except ClientError as exc:
            self._refuse_if_missing(exc)
            raise

    def _refuse_if_missing(self, exc: ClientError) -> None:
        """A missing bucket is a RemoteEvidenceError with its advice."""
        if exc.response.get("Error", {}).get("Code") == "NoSuchBucket":
            raise RemoteEvidenceError(
                f"state bucket {self.bucket} does not exist in account {self.account}: apply the bootstrap "
                "stack that creates it (docs/runbook.md, the nightly's role), or set state_backend: local "
                "to keep state and evidence on this machine alone"
            ) from None

    def get(self, name: str, limit: int) -> bytes | None:
        """An object under the prefix, or None when there is none; larger than `limit` is refused."""
        try:
            obj = self._call("get_object", Key=self.prefix + name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise
        if obj.get("ContentLength", 0) > limit:
            obj["Body"].close()
            raise RemoteEvidenceError(
                f"{self.uri(name)} is {obj['ContentLength']} bytes, more than the {limit} it can be: it was not "
                "written by Terraform or teardown; look at it, and move it away"
            )
        body = obj["Body"].read(limit + 1)
        if "ContentLength" in obj and len(body) != obj["ContentLength"]:
            raise TransferCut(
                f"{self.uri(name)}: read {len(body)} of its {obj['ContentLength']} bytes (the transfer was cut); "
                "nothing is taken from it: run the command again"
            )
        return body

    def put(self, name: str, body: bytes, *, create: bool = False) -> None:
        """Write an object under the prefix; `create`: only if none is there (else RecordExists)."""
        extra = {"IfNoneMatch": "*"} if create else {}
        try:
            self._call(
                "put_object", Key=self.prefix + name, Body=body, ContentType="application/json", **extra
            )
        except ClientError as exc:
            # 412: the object is there; 409: a concurrent conditional write is under way (S3 says to retry):
            # either way, read what is there now
            if create and exc.response.get("Error", {}).get("Code") in CREATE_RACED:
                raise RecordExists(self.uri(name)) from None
            raise

    def delete(self, name: str) -> None:
        self._call("delete_object", Key=self.prefix + name)

    def states(self, limit: int) -> Iterator[tuple[str, bytes]]:
        """Each cluster stack's Terraform state object that exists, as (its URI, its bytes)."""
        for stack in CLUSTER_STACKS:
            body = self.get(state_file(stack), limit)
            if body is not None:
                yield self.uri(state_file(stack)), body

    def journal_parts(self, limit: int) -> Iterator[tuple[str, bytes]]:
        """Every journal part, as (its URI, its bytes), in key order; a part already read with the same ETag
        is not downloaded again (a part of a finished process never changes)."""
        pages = self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, ExpectedBucketOwner=self.account, Prefix=self.prefix + JOURNAL_FOLDER
        )
        try:
            listed = [o for p in pages for o in p.get("Contents", [])]
        except ClientError as exc:
            self._refuse_if_missing(exc)
            raise
        for o in sorted(listed, key=lambda o: o["Key"]):
            key, etag = o["Key"], o.get("ETag", "")
            cached = self._parts.get(key)
            if cached is None or cached[0] != etag:
                body = self.get(key[len(self.prefix) :], limit)
                if body is None:  # deleted between the listing and the read
                    continue
                self._parts[key] = (etag, body)
            yield printable(f"s3://{self.bucket}/{key}"), self._parts[key][1]


def journal_part_name() -> str:
    """This process's journal part: its start time first, so parts sort by when their process began."""
    started = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    host = "".join(ch if ch.isalnum() or ch in "-." else "-" for ch in socket.gethostname())[:40] or "host"
    return f"{JOURNAL_FOLDER}{started}-{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
