"""Rows for SQS, EventBridge, FIS, CloudWatch Logs and the DynamoDB cost table."""

from __future__ import annotations

from teardown.model import Context, Resource
from teardown.registry import register_row
from teardown.row import Call, Row

# The largest page each list call allows (botocore's service models): a page size is always explicit.
SQS_PAGE, EVENTS_PAGE, FIS_PAGE = 1000, 100, 100

# ListQueues returns at most 1,000 URLs and no NextToken unless MaxResults is given (AWS API reference):
# without it, in an account with 1,000 other queues ours is never listed. Our stacks name
# their one queue `<cluster>-interruption`, so only queues named from the cluster are listed (tags decide).
register_row(Row(
    "sqs_queue", "sqs", "list_queues", "QueueUrls", None,  # the listed item is the queue's URL, its id
    "delete_queue", "QueueUrl",
    list_kwargs=lambda ctx: {"QueueNamePrefix": ctx.config.cluster_name, "MaxResults": SQS_PAGE},
    tags=Call("list_queue_tags", "QueueUrl", None, "Tags"), name_field=lambda url: url.rsplit("/", 1)[-1],
    depends_on=("eventbridge_rule",),
))  # fmt: skip


def remove_targets(ctx: Context, r: Resource) -> None:
    """A rule's targets are removed first."""
    events = ctx.client("events")
    targets = [t["Id"] for t in events.list_targets_by_rule(Rule=r.id).get("Targets", [])]
    if targets:
        events.remove_targets(Rule=r.id, Ids=targets, Force=True)


register_row(Row(
    "eventbridge_rule", "events", "list_rules", "Rules", "Name",
    "delete_rule", "Name", delete_kwargs={"Force": True}, prepare=remove_targets,
    list_kwargs={"Limit": EVENTS_PAGE},  # an explicit page size, so paging never rests on a default
    tags=Call("list_tags_for_resource", "ResourceARN", "Arn", "Tags"), name_field="Name",
    state="State", default_state="ENABLED", details={"bus": lambda rule: rule.get("EventBusName", "default")},
))  # fmt: skip

register_row(Row(
    "fis_template", "fis", "list_experiment_templates", "experimentTemplates", "id",  # no paginator: token
    "delete_experiment_template", "id",
    token="nextToken", tags="tags", name_field="description", created="creationTime",
    list_kwargs={"maxResults": FIS_PAGE},  # an explicit page size, so paging never rests on a default
))  # fmt: skip

# Ours by tag, among the groups named under `/aws/eks/<cluster>/` (the only place our stacks put one;
# reading every group's tags would cost a call per group in the account). EKS recreates
# `/aws/eks/<cluster>/cluster` untagged while a cluster still logs to it: that one looks like ours and is
# reported, not deleted.
register_row(Row(
    "log_group", "logs", "describe_log_groups", "logGroups", "logGroupName",
    "delete_log_group", "logGroupName",
    list_kwargs=lambda ctx: {"logGroupNamePrefix": f"/aws/eks/{ctx.config.cluster_name}/"},
    tags=Call("list_tags_log_group", "logGroupName", "logGroupName", "tags"), name_field="logGroupName",
    created="creationTime", depends_on=("eks_cluster",),
    why_left="EKS recreates its control-plane log group until the cluster is gone",
))  # fmt: skip

register_row(Row(
    "dynamodb_table", "dynamodb", "list_tables", "TableNames", "TableName",
    "delete_table", "TableName",
    describe=Call("describe_table", "TableName", None, "Table"),
    tags=Call("list_tags_of_resource", "ResourceArn", "TableArn", "Tags"), name_field="TableName",
    state="TableStatus", default_state="ACTIVE", on_its_way=("DELETING",), created="CreationDateTime",
))  # fmt: skip
