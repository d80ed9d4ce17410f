"""The cluster stack's Karpenter and interruption resources: Karpenter's node role and instance profile,
its interruption queue and the EventBridge rules feeding it, its controller role (tag-scoped) through pod
identity; and the FIS template that interrupts one of our spot GPU nodes. Called by `ClusterStack`
(infra/cluster.py) in declaration order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdktn import Fn
from cdktn_provider_aws.cloudwatch_event_rule import CloudwatchEventRule
from cdktn_provider_aws.cloudwatch_event_target import CloudwatchEventTarget
from cdktn_provider_aws.eks_access_entry import EksAccessEntry
from cdktn_provider_aws.eks_pod_identity_association import EksPodIdentityAssociation
from cdktn_provider_aws.fis_experiment_template import FisExperimentTemplate
from cdktn_provider_aws.iam_instance_profile import IamInstanceProfile
from cdktn_provider_aws.iam_role import IamRole
from cdktn_provider_aws.iam_role_policy import IamRolePolicy
from cdktn_provider_aws.sqs_queue import SqsQueue
from cdktn_provider_aws.sqs_queue_policy import SqsQueuePolicy

from facts.config import Config
from facts.kube_keys import LABEL_NODEPOOL
from facts.names import TAG_PROJECT
from infra import iam_policies as pol
from infra.jsii_structs import camel

if TYPE_CHECKING:
    from infra.cluster import ClusterStack

INTERRUPTION_EVENTS = {
    "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
    "health": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
}


def add_karpenter(stack: ClusterStack, c: Config) -> None:
    """Karpenter's node role and instance profile, its interruption queue with the EventBridge rules
    feeding it, and its controller role (tag-scoped) through pod identity."""
    name, account = c.cluster_name, stack.account
    stack.node_role = stack.node_role_with_policies("karpenter-node", c.karpenter_node_role)
    IamInstanceProfile(stack, "karpenter-node-profile", name=c.karpenter_node_role, role=stack.node_role.name)
    EksAccessEntry(
        stack,
        "karpenter-node-access",
        cluster_name=stack.cluster.name,
        principal_arn=stack.node_role.arn,
        type="EC2_LINUX",
    )

    stack.queue = SqsQueue(
        stack,
        "interruption-queue",
        name=c.interruption_queue,
        message_retention_seconds=300,
        sqs_managed_sse_enabled=True,
    )
    SqsQueuePolicy(
        stack,
        "interruption-queue-policy",
        queue_url=stack.queue.url,
        policy=pol.interruption_queue(stack.queue.arn),
    )
    for rule_name, pattern in INTERRUPTION_EVENTS.items():
        rule = CloudwatchEventRule(
            stack, f"rule-{rule_name}", name=f"{name}-{rule_name}", event_pattern=Fn.jsonencode(pattern)
        )
        CloudwatchEventTarget(
            stack, f"rule-{rule_name}-target", rule=rule.name, target_id="karpenter", arn=stack.queue.arn
        )

    stack.controller_role = IamRole(
        stack,
        "karpenter-controller-role",
        name=c.karpenter_controller_role,
        assume_role_policy=pol.POD_IDENTITY_TRUST,
        permissions_boundary=stack.boundary,
    )
    IamRolePolicy(
        stack,
        "karpenter-controller-policy",
        role=stack.controller_role.name,
        policy=pol.karpenter_controller(name, c.region, account, stack.node_role.arn, stack.queue.arn),
    )
    EksPodIdentityAssociation(
        stack,
        "karpenter-pod-identity",
        cluster_name=stack.cluster.name,
        namespace="kube-system",
        service_account="karpenter",
        role_arn=stack.controller_role.arn,
    )


def add_fis(stack: ClusterStack, c: Config) -> None:
    """FIS: interrupt only this project's spot GPU instances."""
    name, account = c.cluster_name, stack.account
    fis_role = IamRole(
        stack,
        "fis-role",
        name=c.fis_role,
        assume_role_policy=pol.trust("fis.amazonaws.com"),
        permissions_boundary=stack.boundary,
    )
    IamRolePolicy(
        stack,
        "fis-policy",
        role=fis_role.name,
        policy=pol.fis_spot(c.region, account, c.nodepool_name, c.project),
    )
    stack.fis_template = FisExperimentTemplate(
        stack,
        "fis-spot",
        description=f"{name}: interrupt one spot GPU node of NodePool {c.nodepool_name}",
        role_arn=fis_role.arn,
        stop_condition=camel([{"source": "none"}]),
        target=camel(
            [
                {
                    "name": "SpotGpuNodes",
                    "resource_type": "aws:ec2:spot-instance",
                    "selection_mode": "COUNT(1)",
                    "resource_tag": [
                        {"key": LABEL_NODEPOOL, "value": c.nodepool_name},
                        {"key": TAG_PROJECT, "value": c.project},
                    ],
                    "filter": [{"path": "State.Name", "values": ["running"]}],
                }
            ]
        ),
        action=camel(
            [
                {
                    "name": "interrupt",
                    "action_id": "aws:ec2:send-spot-instance-interruptions",
                    "parameter": [{"key": "durationBeforeInterruption", "value": "PT2M"}],
                    "target": {"key": "SpotInstances", "value": "SpotGpuNodes"},
                }
            ]
        ),
        tags={"Name": f"{name}-spot-interruption"},
    )
