"""What teardown works on: its configuration, the account context, and one found resource."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from facts.kube_keys import cluster_tag
from facts.names import PROJECT, TAG_PROJECT


@dataclass(frozen=True)
class TeardownConfig:
    """Which account and which resources are ours."""

    region: str
    cluster_name: str = PROJECT
    project: str = PROJECT
    allowed_accounts: tuple[str, ...] = ()
    project_tag: str = TAG_PROJECT

    def owns_tags(self, tags: Mapping[str, str]) -> str | None:
        """The tag that makes a resource ours, or None. Karpenter and the VPC CNI tag by cluster."""
        c = self.cluster_name
        checks = (
            (self.project_tag, self.project),
            (cluster_tag(c), "owned"),
            ("eks:eks-cluster-name", c),
            ("karpenter.k8s.aws/cluster", c),
            ("cluster.k8s.amazonaws.com/name", c),
        )
        for key, value in checks:
            if tags.get(key) == value:
                return f"{key}={value}"
        return None

    def owns_name(self, name: str) -> bool:
        """For types that carry no tags: names the demo derived start with the cluster name."""
        return name.startswith(
            (f"{self.cluster_name}-", f"{self.cluster_name}_", f"/aws/eks/{self.cluster_name}/")
        )


def tags_of(items: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or []}


@dataclass(frozen=True)
class Resource:
    """One resource found in the account."""

    type: str
    id: str
    state: str = "present"
    name: str | None = None
    owned_by: str = ""  # the tag or name rule that makes it ours
    details: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.type}/{self.id}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "id": self.id,
            "state": self.state,
            "name": self.name,
            "owned_by": self.owned_by,
            "details": dict(self.details),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Resource:
        return cls(
            d["type"],
            d["id"],
            d.get("state", "present"),
            d.get("name"),
            d.get("owned_by", ""),
            d.get("details") or {},
        )


class Context:
    """boto3 clients for one region (AWS_ENDPOINT_URL is honoured by boto3 itself) and an API-call counter."""

    def __init__(self, config: TeardownConfig, session: boto3.Session | None = None):
        self.config = config
        self.session = session or boto3.Session(region_name=config.region)
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.api_calls = 0

    def _count(self, **_: Any) -> None:
        with self._lock:
            self.api_calls += 1

    def client(self, service: str) -> Any:
        with self._lock:
            if service not in self._clients:
                c = self.session.client(
                    service,
                    region_name=self.config.region,
                    config=Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=32),
                )
                c.meta.events.register("before-call.*.*", self._count)
                self._clients[service] = c
            return self._clients[service]

    def account(self) -> str:
        return self.client("sts").get_caller_identity()["Account"]


def is_gone(exc: ClientError) -> bool:
    """Does this error say the resource does not exist (any service's way of saying it)?"""
    code = exc.response["Error"]["Code"]
    return (
        "NotFound" in code
        or "NonExistent" in code
        or code in ("NoSuchEntity", "NoSuchEntityException", "InvalidInstanceID.Malformed")
    )


def gone_ok(delete: Callable[[Context, Resource], None]) -> Callable[[Context, Resource], None]:
    """Deleting something already gone is success: resume re-runs deletions an earlier run finished."""

    @functools.wraps(delete)
    def wrapper(ctx: Context, r: Resource) -> None:
        try:
            delete(ctx, r)
        except ClientError as exc:
            if not is_gone(exc):
                raise

    return wrapper
