"""EKS: clusters (a row) and their managed node groups (code: they are listed per cluster)."""

from __future__ import annotations

from teardown.listing import owned, pages, unless_gone
from teardown.model import Context, Resource, gone_ok
from teardown.registry import ResourceType, register, register_row
from teardown.row import Call, Row, provenance_details

# Ours by tag; a cluster merely named like ours is reported, never deleted.
register_row(Row(
    "eks_cluster", "eks", "list_clusters", "clusters", "name",
    "delete_cluster", "name",
    describe=Call("describe_cluster", "name", None, "cluster"), tags="tags", name_field="name", created="createdAt",
    state="status", default_state="ACTIVE", on_its_way=("DELETING",), depends_on=("eks_nodegroup",),
    why_left="EKS refuses to delete a cluster while node groups remain", wait_gone=1200,
))  # fmt: skip


def list_nodegroups(ctx: Context) -> list[Resource]:
    """Ours by the node group's own tags (our stacks' default tags), in whichever cluster it is."""
    out = []
    eks = ctx.client("eks")
    for name in pages(ctx, "eks", "list_clusters", "clusters"):
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
                ctx, "eks_nodegroup", rid, desc.get("tags") or {}, desc.get("status") or "ACTIVE", name=rid,
                **provenance_details(desc.get("createdAt"), {}, desc),
            )  # fmt: skip
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
        irregular="listed per cluster (ListNodegroups takes the cluster), and its id is "
        "<cluster>:<nodegroup>, split again to delete it",
    )
)
