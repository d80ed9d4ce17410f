"""EKS registrations: clusters and their managed node groups."""

from __future__ import annotations

from botocore.exceptions import ClientError

from teardown.listing import pages
from teardown.model import Context, Resource, gone_ok
from teardown.registry import ResourceType, register


def _owned_cluster(ctx: Context, name: str) -> tuple[dict, str | None]:
    cluster = ctx.client("eks").describe_cluster(name=name)["cluster"]
    rule = ctx.config.owns_tags(cluster.get("tags") or {})
    if rule is None and name == ctx.config.cluster_name:
        rule = "name=cluster_name"
    return cluster, rule


def _cluster_names(ctx: Context) -> list[str]:
    return list(pages(ctx, "eks", "list_clusters", "clusters"))


def list_clusters(ctx: Context) -> list[Resource]:
    out = []
    for name in _cluster_names(ctx):
        try:
            cluster, rule = _owned_cluster(ctx, name)
        except ClientError:
            continue  # deleted between list and describe
        if rule:
            out.append(Resource("eks_cluster", name, cluster.get("status", "ACTIVE"), name, rule))
    return out


@gone_ok
def delete_cluster(ctx: Context, r: Resource) -> None:
    if r.state == "DELETING":
        return
    ctx.client("eks").delete_cluster(name=r.id)


register(
    ResourceType(
        "eks_cluster",
        list_clusters,
        delete_cluster,
        depends_on=("eks_nodegroup",),
        why_left="EKS refuses to delete a cluster while node groups remain",
        wait_gone=1200,
    )
)


def list_nodegroups(ctx: Context) -> list[Resource]:
    out = []
    eks = ctx.client("eks")
    for name in _cluster_names(ctx):
        try:
            _, rule = _owned_cluster(ctx, name)
        except ClientError:
            continue
        if not rule:
            continue
        for page in eks.get_paginator("list_nodegroups").paginate(clusterName=name):
            for ng in page.get("nodegroups", []):
                status = eks.describe_nodegroup(clusterName=name, nodegroupName=ng)["nodegroup"].get("status")
                out.append(Resource("eks_nodegroup", f"{name}:{ng}", status or "ACTIVE", ng, rule))
    return out


@gone_ok
def delete_nodegroup(ctx: Context, r: Resource) -> None:
    if r.state == "DELETING":
        return
    cluster, ng = r.id.split(":", 1)
    ctx.client("eks").delete_nodegroup(clusterName=cluster, nodegroupName=ng)


register(
    ResourceType(
        "eks_nodegroup",
        list_nodegroups,
        delete_nodegroup,
        why_left="managed node groups take minutes to drain and delete",
        wait_gone=1200,
    )
)
