"""Registrations for SQS, EventBridge, FIS, CloudWatch Logs and the DynamoDB cost table."""

from __future__ import annotations

from botocore.exceptions import ClientError

from teardown.model import Context, Resource, gone_ok, is_gone
from teardown.registry import ResourceType, register


def list_queues(ctx: Context) -> list[Resource]:
    out = []
    sqs = ctx.client("sqs")
    for page in sqs.get_paginator("list_queues").paginate():
        for url in page.get("QueueUrls", []):
            try:
                tags = sqs.list_queue_tags(QueueUrl=url).get("Tags", {})
            except ClientError as exc:
                if is_gone(exc):
                    continue
                raise
            rule = ctx.config.owns_tags(tags)
            if rule:
                out.append(Resource("sqs_queue", url, "present", url.rsplit("/", 1)[-1], rule))
    return out


@gone_ok
def delete_queue(ctx: Context, r: Resource) -> None:
    ctx.client("sqs").delete_queue(QueueUrl=r.id)


register(ResourceType("sqs_queue", list_queues, delete_queue, depends_on=("eventbridge_rule",)))


def list_rules(ctx: Context) -> list[Resource]:
    out = []
    events = ctx.client("events")
    for page in events.get_paginator("list_rules").paginate():
        for rule in page.get("Rules", []):
            tags = {
                t["Key"]: t["Value"]
                for t in events.list_tags_for_resource(ResourceARN=rule["Arn"]).get("Tags", [])
            }
            owned = ctx.config.owns_tags(tags)
            if owned:
                out.append(
                    Resource(
                        "eventbridge_rule",
                        rule["Name"],
                        rule.get("State", "ENABLED"),
                        rule["Name"],
                        owned,
                        {"bus": rule.get("EventBusName", "default")},
                    )
                )
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
    fis = ctx.client("fis")
    kwargs: dict = {}
    while True:
        page = fis.list_experiment_templates(**kwargs)
        for t in page.get("experimentTemplates", []):
            rule = ctx.config.owns_tags(t.get("tags") or {})
            if rule:
                out.append(Resource("fis_template", t["id"], "present", t.get("description"), rule))
        if not page.get("nextToken"):
            break
        kwargs["nextToken"] = page["nextToken"]
    return out


@gone_ok
def delete_fis_template(ctx: Context, r: Resource) -> None:
    ctx.client("fis").delete_experiment_template(id=r.id)


register(ResourceType("fis_template", list_fis_templates, delete_fis_template))


def list_log_groups(ctx: Context) -> list[Resource]:
    out = []
    prefix = f"/aws/eks/{ctx.config.cluster_name}/"
    for page in ctx.client("logs").get_paginator("describe_log_groups").paginate(logGroupNamePrefix=prefix):
        for g in page.get("logGroups", []):
            out.append(Resource("log_group", g["logGroupName"], "present", g["logGroupName"], "name"))
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
    for page in ddb.get_paginator("list_tables").paginate():
        for name in page.get("TableNames", []):
            try:
                desc = ddb.describe_table(TableName=name)["Table"]
                tags = {
                    t["Key"]: t["Value"]
                    for t in ddb.list_tags_of_resource(ResourceArn=desc["TableArn"]).get("Tags", [])
                }
            except ClientError as exc:
                if is_gone(exc):
                    continue
                raise
            rule = ctx.config.owns_tags(tags)
            if rule:
                out.append(Resource("dynamodb_table", name, desc.get("TableStatus", "ACTIVE"), name, rule))
    return out


@gone_ok
def delete_table(ctx: Context, r: Resource) -> None:
    if r.state == "DELETING":
        return
    ctx.client("dynamodb").delete_table(TableName=r.id)


register(ResourceType("dynamodb_table", list_tables, delete_table))
