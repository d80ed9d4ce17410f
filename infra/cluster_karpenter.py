"""The cluster stack's Karpenter and interruption resources: Karpenter's node role and instance profile,
its interruption queue and the EventBridge rules feeding it, its controller role (tag-scoped) through pod
identity; and the FIS template that interrupts one of our spot GPU nodes.

`add_karpenter(scope, KarpenterInputs) -> KarpenterResources` is a construct-like builder: everything it
reads comes in through the frozen inputs, everything the rest of the stack reads goes out through the
frozen result, and it knows nothing of `ClusterStack` (infra/cluster.py calls it, never the reverse).
It creates its resources directly in the `scope` it is given (the cluster stack), not in a nested
Construct: CDK Terrain derives a resource's Terraform logical ID from its construct path, so a nested
construct would rename every resource (`karpenter_interruption-queue_1A2B3C4D` for `interruption-queue`)
and Terraform would plan to destroy and recreate them all on an applied stack."""

from __future__ import annotations

from dataclasses import dataclass

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
from constructs import Construct

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import LABEL_NODEPOOL
from gpu_finops.facts.names import TAG_PROJECT
from iam import iam_policies as pol
from iam.ci_policies import INTERRUPTION_EVENTS
from infra.cluster_node_role import node_role_with_policies
from infra.jsii_structs import camel


@dataclass(frozen=True)
class KarpenterInputs:
    """What the Karpenter and FIS resources need from the rest of the cluster stack."""

    config: Config
    account: str  # the caller identity's account ID (a token at synth)
    boundary: str  # the permissions boundary ARN every role carries (iam/ci_boundary.py)
    cluster_name: str  # the EKS cluster's name attribute, so access and pod identity depend on it


@dataclass(frozen=True)
class KarpenterResources:
    """What the cluster stack's outputs and the addons stack read back."""

    node_role: IamRole
    queue: SqsQueue
    controller_role: IamRole
    fis_template: FisExperimentTemplate


def add_karpenter(scope: Construct, given: KarpenterInputs) -> KarpenterResources:
    """Karpenter's node role and instance profile, its interruption queue with the EventBridge rules
    feeding it, its controller role (tag-scoped) through pod identity, and the FIS template; all created
    in `scope` with the logical IDs they have always had (see the module docstring)."""
    c = given.config
    name, account = c.cluster_name, given.account
    node_role = node_role_with_policies(scope, "karpenter-node", c.karpenter_node_role, given.boundary)
    IamInstanceProfile(scope, "karpenter-node-profile", name=c.karpenter_node_role, role=node_role.name)
    EksAccessEntry(
        scope,
        "karpenter-node-access",
        cluster_name=given.cluster_name,
        principal_arn=node_role.arn,
        type="EC2_LINUX",
    )

    # The policy is set by CreateQueue itself (the provider passes it with the other attributes and calls
    # SetQueueAttributes only on an update): so the nightly role needs no sqs:SetQueueAttributes, with which
    # it could rewrite the policy to let anyone in.
    queue = SqsQueue(
        scope,
        "interruption-queue",
        name=c.interruption_queue,
        message_retention_seconds=300,
        sqs_managed_sse_enabled=True,
        policy=pol.interruption_queue(f"arn:aws:sqs:{c.region}:{account}:{c.interruption_queue}"),
    )
    for rule_name, pattern in INTERRUPTION_EVENTS.items():
        rule = CloudwatchEventRule(
            scope, f"rule-{rule_name}", name=f"{name}-{rule_name}", event_pattern=Fn.jsonencode(pattern)
        )
        CloudwatchEventTarget(
            scope, f"rule-{rule_name}-target", rule=rule.name, target_id="karpenter", arn=queue.arn
        )

    controller_role = IamRole(
        scope,
        "karpenter-controller-role",
        name=c.karpenter_controller_role,
        assume_role_policy=pol.POD_IDENTITY_TRUST,
        permissions_boundary=given.boundary,
    )
    IamRolePolicy(
        scope,
        "karpenter-controller-policy",
        role=controller_role.name,
        policy=pol.karpenter_controller(name, c.region, account, node_role.arn, queue.arn),
    )
    EksPodIdentityAssociation(
        scope,
        "karpenter-pod-identity",
        cluster_name=given.cluster_name,
        namespace="kube-system",
        service_account="karpenter",
        role_arn=controller_role.arn,
    )
    return KarpenterResources(
        node_role=node_role,
        queue=queue,
        controller_role=controller_role,
        fis_template=_add_fis(scope, given),
    )


def _add_fis(scope: Construct, given: KarpenterInputs) -> FisExperimentTemplate:
    """FIS: interrupt only this project's spot GPU instances."""
    c = given.config
    name, account = c.cluster_name, given.account
    fis_role = IamRole(
        scope,
        "fis-role",
        name=c.fis_role,
        assume_role_policy=pol.trust("fis.amazonaws.com"),
        permissions_boundary=given.boundary,
    )
    IamRolePolicy(
        scope,
        "fis-policy",
        role=fis_role.name,
        policy=pol.fis_spot(c.region, account, c.nodepool_name, c.project),
    )
    return FisExperimentTemplate(
        scope,
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
