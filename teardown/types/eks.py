"""EKS registrations: clusters and their managed node groups."""

from __future__ import annotations

from teardown.listing import owned, pages, unless_gone
from teardown.model import Context, Resource, gone_ok
from teardown.registry import ResourceType, register


def _cluster_names(ctx: Context) -> list[str]:
    return list(pages(ctx, "eks", "list_clusters", "clusters"))


def list_clusters(ctx: Context) -> list[Resource]:
    """Ours by tag; a cluster merely named like ours is reported, never deleted."""
    out = []
    eks = ctx.client("eks")
    for name in _cluster_names(ctx):
        cluster = unless_gone(lambda name=name: eks.describe_cluster(name=name)["cluster"])
        if cluster is None:
            continue  # deleted between list and describe
        r = owned(
            ctx, "eks_cluster", name, cluster.get("tags") or {}, cluster.get("status", "ACTIVE"), name=name
        )
        if r:
            out.append(r)
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
    """Ours by the node group's own tags (our stacks' default tags), in whichever cluster it is."""
    out = []
    eks = ctx.client("eks")
    for name in _cluster_names(ctx):
        groups = unless_gone(
            lambda name=name: [
                ng for page in eks.get_paginator("list_nodegroups").paginate(clusterName=name)
                for ng in page.get("nodegroups", [])
            ]
        )  # fmt: skip
        for ng in groups or []:
            desc = unless_gone(
                lambda name=name, ng=ng: eks.describe_nodegroup(clusterName=name, nodegroupName=ng)[
                    "nodegroup"
                ]
            )
            if desc is None:
                continue
            rid = f"{name}:{ng}"
            r = owned(
                ctx, "eks_nodegroup", rid, desc.get("tags") or {}, desc.get("status") or "ACTIVE", name=rid
            )
            if r:
                out.append(r)
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
