"""What teardown works on: its configuration, the account context, and one found resource."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from gpu_finops.facts.kube_keys import cluster_tag
from gpu_finops.facts.names import PROJECT, TAG_CLUSTER, TAG_PROJECT, TAG_VPC_CNI_CLUSTER

if TYPE_CHECKING:
    from gpu_finops.facts.config import Config

# Tags the cloud integrations set to a cluster's name (Karpenter, EKS itself): each, naming our cluster,
# is one of our tags (provenance must still show we made the resource, teardown/provenance.py).
CLUSTER_NAME_TAGS = (
    "eks:eks-cluster-name",
    "karpenter.k8s.aws/cluster",
    "karpenter.sh/managed-by",
)
# The VPC CNI's tag names a cluster too, but is never ours: any VPC CNI given the name sets it (a kops or
# self-managed cluster's too). Our add-on gives the CNI's interfaces our tags (iam/vpc_cni.py), so it
# only marks another cluster's resource (foreign) or one of ours-by-name-only (a lookalike, left).
FOREIGN_ONLY_TAGS = (TAG_VPC_CNI_CLUSTER,)


@dataclass(frozen=True)
class TeardownConfig:
    """Which account and which resources are ours."""

    region: str
    cluster_name: str = PROJECT
    project: str = PROJECT
    allowed_accounts: tuple[str, ...] = ()
    project_tag: str = TAG_PROJECT
    state_dir: str = ".state"  # infra's Terraform state: provenance (teardown.provenance)
    state_backend: str = "local"  # "s3": the state bucket holds state, run record and journal too

    @classmethod
    def from_config(cls, c: Config, **overrides: Any) -> TeardownConfig:
        """The same cluster, region, project tag and allowlist as `infra`; a given override wins."""
        base = {
            "region": c.region,
            "cluster_name": c.cluster_name,
            "project": c.project,
            "allowed_accounts": tuple(c.allowed_accounts),
            "state_dir": c.state_dir,
            "state_backend": c.state_backend,
        }
        return cls(**{**base, **{k: v for k, v in overrides.items() if v is not None}})

    def foreign_tag(self, tags: Mapping[str, str]) -> str | None:
        """A tag that names another project or cluster (`key=value`), or None."""
        c = self.cluster_name
        for key, want in ((self.project_tag, self.project), (TAG_CLUSTER, c)):
            if key in tags and tags[key] != want:
                return f"{key}={tags[key]}"
        for key in (*CLUSTER_NAME_TAGS, *FOREIGN_ONLY_TAGS):
            if key in tags and tags[key] != c:
                return f"{key}={tags[key]}"
        for key, value in tags.items():  # another cluster's `owned` wins beside our cluster's own tag
            if key.startswith("kubernetes.io/cluster/") and key != cluster_tag(c) and value == "owned":
                return f"{key}={value}"
        return None

    def owns_tags(self, tags: Mapping[str, str]) -> str | None:
        """The tag that makes a resource ours, or None. Our stacks tag by project and cluster; Karpenter
        and the EBS CSI driver tag by cluster; the VPC CNI's own tag never counts (FOREIGN_ONLY_TAGS). A
        tag naming another project or cluster wins: such a resource is never ours, whatever else it carries."""
        if self.foreign_tag(tags):
            return None
        c = self.cluster_name
        checks = (
            (self.project_tag, self.project),
            (TAG_CLUSTER, c),
            (cluster_tag(c), "owned"),
            *((key, c) for key in CLUSTER_NAME_TAGS),
        )
        for key, value in checks:
            if tags.get(key) == value:
                return f"{key}={value}"
        return None

    def names_our_cluster(self, tags: Mapping[str, str]) -> str | None:
        """A tag of ours that names this cluster itself (not the project tag, which every cluster of the
        project shares), whatever else the resource carries; None without one."""
        c = self.cluster_name
        for key, value in (
            (TAG_CLUSTER, c),
            (cluster_tag(c), "owned"),
            *((key, c) for key in CLUSTER_NAME_TAGS),
        ):
            if tags.get(key) == value:
                return f"{key}={value}"
        return None

    def owns_name(self, name: str | None) -> bool:
        """Named the way our stacks and Karpenter name things. A name alone never makes a resource ours:
        it only marks one that *looks like ours* (reported, left alone) when its tags do not agree."""
        c = self.cluster_name
        return bool(name) and (
            name == c or name.startswith((f"{c}-", f"{c}_", f"{c}/", f"{c}:", f"/aws/eks/{c}/"))
        )

    def classify(
        self,
        rtype: str,
        rid: str,
        tags: Mapping[str, str],
        name: str | None,
        state: str = "present",
        **details: Any,
    ) -> Resource | None:
        """Ours (by tag), looks like ours (our kind of name or the VPC CNI's tag for our cluster, tags
        missing or foreign), or None."""
        rule = self.owns_tags(tags)
        if rule:
            return Resource(rtype, rid, state, name, rule, details)
        foreign = self.foreign_tag(tags)
        ours = self.names_our_cluster(tags)
        if foreign and ours:  # never deleted (the foreign tag wins), never invisible (verify fails on it)
            return Resource(
                rtype, rid, state, name, "", details,
                lookalike=f"tagged {ours} and {foreign}: tags naming our cluster and someone else's; never deleted",
                tagged_as=ours,
            )  # fmt: skip
        cni = next((k for k in FOREIGN_ONLY_TAGS if tags.get(k) == self.cluster_name), None)
        if not self.owns_name(name) and not cni:
            return None
        why = (
            f"tagged {foreign}"
            if foreign
            else f"none of our tags ({self.project_tag}={self.project} or the cluster's)"
        )
        what = (
            f"name {name!r} matches ours"
            if self.owns_name(name)
            else f"tagged {cni}={self.cluster_name}, the VPC CNI's tag (anyone allowed to tag can set it; our "
            "CNI's interfaces carry our tags)"
        )
        return Resource(rtype, rid, state, name, "", details, lookalike=f"{what}, but {why}")


def tags_of(items: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or []}


@dataclass(frozen=True)
class Resource:
    """One resource found in the account."""

    type: str
    id: str
    state: str = "present"
    name: str | None = None
    owned_by: str = ""  # the tag that makes it ours; empty when it only looks like ours
    details: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    lookalike: str = ""  # why it looks like ours but is not tagged as ours (left alone)
    provenance: str = ""  # what shows we made it (teardown.provenance): our tag alone never suffices
    tagged_as: str = ""  # the tag of ours an unproven resource carries (owned_by cleared): never deleted

    @property
    def unproven(self) -> bool:
        """Tagged as ours, but nothing shows we made it: never deleted, never called gone."""
        return bool(self.tagged_as) and not self.owned_by

    @property
    def ours(self) -> bool:
        return bool(self.owned_by)

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
            **({"provenance": self.provenance} if self.provenance else {}),
            **({"looks_like_ours": self.lookalike} if self.lookalike else {}),
            **({"tagged_as": self.tagged_as} if self.tagged_as else {}),
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
            d.get("looks_like_ours", ""),
            d.get("provenance", ""),
            d.get("tagged_as", ""),
        )


class Context:
    """boto3 clients for one region (AWS_ENDPOINT_URL is honoured by boto3 itself) and an API-call counter."""

    def __init__(self, config: TeardownConfig, session: boto3.Session | None = None, sources: Any = None):
        self.config = config
        # where the provenance evidence lies (teardown.provenance.Sources; its defaults when None)
        self.sources = sources
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
        or code in ("NoSuchEntity", "NoSuchEntityException", "InvalidInstanceID.Malformed", "NoSuchBucket")
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
