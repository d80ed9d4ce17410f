"""Registrations for SQS, EventBridge, FIS, CloudWatch Logs and the DynamoDB cost table."""

from __future__ import annotations

from teardown.listing import owned, pages, token_pages, unless_gone
from teardown.model import Context, Resource, gone_ok
from teardown.registry import ResourceType, register


def list_queues(ctx: Context) -> list[Resource]:
    out = []
    sqs = ctx.client("sqs")
    for url in pages(ctx, "sqs", "list_queues", "QueueUrls"):
        tags = unless_gone(lambda url=url: sqs.list_queue_tags(QueueUrl=url).get("Tags", {}))
        r = None if tags is None else owned(ctx, "sqs_queue", url, tags, name=url.rsplit("/", 1)[-1])
        if r:
            out.append(r)
    return out


@gone_ok
def delete_queue(ctx: Context, r: Resource) -> None:
    ctx.client("sqs").delete_queue(QueueUrl=r.id)


register(ResourceType("sqs_queue", list_queues, delete_queue, depends_on=("eventbridge_rule",)))


def list_rules(ctx: Context) -> list[Resource]:
    out = []
    events = ctx.client("events")
    for rule in pages(ctx, "events", "list_rules", "Rules"):
        r = owned(
            ctx,
            "eventbridge_rule",
            rule["Name"],
            events.list_tags_for_resource(ResourceARN=rule["Arn"]).get("Tags", []),
            rule.get("State", "ENABLED"),
            name=rule["Name"],
            bus=rule.get("EventBusName", "default"),
        )
        if r:
            out.append(r)
    return out


@gone_ok
def delete_rule(ctx: Context, r: Resource) -> None:
    events = ctx.client("events")
    targets = [t["Id"] for t in events.list_targets_by_rule(Rule=r.id).get("Targets", [])]
    if targets:
        events.remove_targets(Rule=r.id, Ids=targets, Force=True)
    events.delete_rule(Name=r.id, Force=True)


register(ResourceType("eventbridge_rule", list_rules, delete_rule))


def list_fis_templates(ctx: Context) -> list[Resource]:
    out = []
    for t in token_pages(ctx.client("fis").list_experiment_templates, "experimentTemplates"):
        r = owned(ctx, "fis_template", t["id"], t.get("tags") or {}, name=t.get("description"))
        if r:
            out.append(r)
    return out


@gone_ok
def delete_fis_template(ctx: Context, r: Resource) -> None:
    ctx.client("fis").delete_experiment_template(id=r.id)


register(ResourceType("fis_template", list_fis_templates, delete_fis_template))


def list_log_groups(ctx: Context) -> list[Resource]:
    """Ours by tag, among the groups named under `/aws/eks/<cluster>/` (the only place our stacks put
    one; reading every group's tags would cost a call per group in the account). EKS recreates
    `/aws/eks/<cluster>/cluster` untagged while a cluster still logs to it: that one looks like ours and
    is reported, not deleted."""
    out = []
    logs = ctx.client("logs")
    prefix = f"/aws/eks/{ctx.config.cluster_name}/"
    for g in pages(ctx, "logs", "describe_log_groups", "logGroups", logGroupNamePrefix=prefix):
        name = g["logGroupName"]
        tags = unless_gone(lambda name=name: logs.list_tags_log_group(logGroupName=name).get("tags", {}))
        r = None if tags is None else owned(ctx, "log_group", name, tags, name=name)
        if r:
            out.append(r)
    return out


@gone_ok
def delete_log_group(ctx: Context, r: Resource) -> None:
    ctx.client("logs").delete_log_group(logGroupName=r.id)


register(
    ResourceType(
        "log_group",
        list_log_groups,
        delete_log_group,
        depends_on=("eks_cluster",),
        why_left="EKS recreates its control-plane log group until the cluster is gone",
    )
)


def list_tables(ctx: Context) -> list[Resource]:
    out = []
    ddb = ctx.client("dynamodb")

    def described(name: str) -> tuple[dict, list[dict[str, str]]]:
        desc = ddb.describe_table(TableName=name)["Table"]
        return desc, ddb.list_tags_of_resource(ResourceArn=desc["TableArn"]).get("Tags", [])

    for name in pages(ctx, "dynamodb", "list_tables", "TableNames"):
        found = unless_gone(lambda name=name: described(name))
        if found is None:
            continue
        desc, tags = found
        r = owned(ctx, "dynamodb_table", name, tags, desc.get("TableStatus", "ACTIVE"), name=name)
        if r:
            out.append(r)
    return out


@gone_ok
def delete_table(ctx: Context, r: Resource) -> None:
    if r.state == "DELETING":
        return
    ctx.client("dynamodb").delete_table(TableName=r.id)


register(ResourceType("dynamodb_table", list_tables, delete_table))
