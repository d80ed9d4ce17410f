"""IAM policy documents as data: least privilege, tag-scoped where AWS allows it."""

from __future__ import annotations

import json
from typing import Any

from gpu_finops.facts.kube_keys import LABEL_NODEPOOL
from gpu_finops.facts.names import TAG_PROJECT


def doc(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def trust(service: str, *, actions: tuple[str, ...] = ("sts:AssumeRole",)) -> str:
    return doc({"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions)})


POD_IDENTITY_TRUST = trust("pods.eks.amazonaws.com", actions=("sts:AssumeRole", "sts:TagSession"))


def karpenter_profile_path(cluster: str, region: str) -> str:
    """Where Karpenter v1.14 creates the instance profiles of its EC2NodeClasses:
    `/karpenter/<region>/<cluster>/<nodeclass uid>/` (pkg/controllers/nodeclass/instanceprofile.go:91,
    instanceprofile.FormatPath). The ARN carries the path, so grants on `instance-profile/<cluster>_*` never
    match; this prefix holds only our cluster's profiles (a sibling `<cluster>-b` has its own segment)."""
    return f"/karpenter/{region}/{cluster}/"


def karpenter_controller(cluster: str, region: str, account: str, node_role_arn: str, queue_arn: str) -> str:
    """Karpenter's controller policy: upstream's v1.14 reference policy (the getting-started CloudFormation
    template), with `*` accounts made ours and instance profiles confined to Karpenter's path for this
    cluster. Creation is conditioned on the tags the call sends (aws:RequestTag), everything done to what
    exists on the tags it carries (aws:ResourceTag): Add/RemoveRoleFromInstanceProfile and
    DeleteInstanceProfile send no tags."""
    ec2 = f"arn:aws:ec2:{region}:{account}"
    cluster_key = f"kubernetes.io/cluster/{cluster}"
    request = {f"aws:RequestTag/{cluster_key}": "owned", "aws:RequestTag/eks:eks-cluster-name": cluster}
    resource = {f"aws:ResourceTag/{cluster_key}": "owned"}
    nodepool = LABEL_NODEPOOL
    nodeclass = "karpenter.k8s.aws/ec2nodeclass"
    created = [f"{ec2}:{kind}/*" for kind in ("fleet", "instance", "volume", "network-interface",
               "launch-template", "spot-instances-request")]  # fmt: skip
    profiles = f"arn:aws:iam::{account}:instance-profile{karpenter_profile_path(cluster, region)}*"
    return doc(
        {
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Resource": [
                f"arn:aws:ec2:{region}::image/*",
                f"arn:aws:ec2:{region}::snapshot/*",
                f"{ec2}:security-group/*",
                f"{ec2}:subnet/*",
                f"{ec2}:capacity-reservation/*",
                f"{ec2}:placement-group/*",
            ],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Resource": f"{ec2}:launch-template/*",
            "Condition": {"StringEquals": resource, "StringLike": {f"aws:ResourceTag/{nodepool}": "*"}},
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Resource": created,
            "Condition": {"StringEquals": request, "StringLike": {f"aws:RequestTag/{nodepool}": "*"}},
        },
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": created,
            "Condition": {
                "StringEquals": {
                    **request,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": {f"aws:RequestTag/{nodepool}": "*"},
            },
        },
        {
            # the NodeClaim tagging controller names the instance after it launched
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": f"{ec2}:instance/*",
            "Condition": {
                "StringEquals": resource,
                "StringLike": {f"aws:ResourceTag/{nodepool}": "*"},
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Resource": [f"{ec2}:instance/*", f"{ec2}:launch-template/*"],
            "Condition": {"StringEquals": resource, "StringLike": {f"aws:ResourceTag/{nodepool}": "*"}},
        },
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Action": [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
        },
        {
            "Sid": "AllowSSMReadActions",
            "Effect": "Allow",
            "Action": "ssm:GetParameter",
            "Resource": f"arn:aws:ssm:{region}::parameter/aws/service/*",
        },
        {
            "Sid": "AllowPricingReadActions",
            "Effect": "Allow",
            "Action": "pricing:GetProducts",
            "Resource": "*",
        },
        {
            "Sid": "AllowInterruptionQueueActions",
            "Effect": "Allow",
            "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
            "Resource": queue_arn,
        },
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": node_role_arn,
            "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com"]}},
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Effect": "Allow",
            "Action": "iam:CreateInstanceProfile",
            "Resource": profiles,
            "Condition": {
                "StringEquals": {**request, "aws:RequestTag/topology.kubernetes.io/region": region},
                "StringLike": {f"aws:RequestTag/{nodeclass}": "*"},
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Effect": "Allow",
            "Action": "iam:TagInstanceProfile",
            "Resource": profiles,
            "Condition": {
                "StringEquals": {
                    **resource,
                    "aws:ResourceTag/topology.kubernetes.io/region": region,
                    **request,
                    "aws:RequestTag/topology.kubernetes.io/region": region,
                },
                "StringLike": {f"aws:ResourceTag/{nodeclass}": "*", f"aws:RequestTag/{nodeclass}": "*"},
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Action": [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            "Resource": profiles,
            "Condition": {
                "StringEquals": {**resource, "aws:ResourceTag/topology.kubernetes.io/region": region},
                "StringLike": {f"aws:ResourceTag/{nodeclass}": "*"},
            },
        },
        {
            "Sid": "AllowUnscopedInstanceProfileListAction",  # ListInstanceProfiles takes no resource
            "Effect": "Allow",
            "Action": "iam:ListInstanceProfiles",
            "Resource": "*",
        },
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Action": "iam:GetInstanceProfile",
            "Resource": f"arn:aws:iam::{account}:instance-profile/*",
        },
        {
            "Sid": "AllowAPIServerEndpointDiscovery",
            "Effect": "Allow",
            "Action": "eks:DescribeCluster",
            "Resource": f"arn:aws:eks:{region}:{account}:cluster/{cluster}",
        },
    )


def fis_spot(region: str, account: str, nodepool: str, project: str) -> str:
    """FIS may interrupt only this project's spot GPU instances."""
    return doc(
        {
            "Sid": "InterruptOnlyOurSpotGpuNodes",
            "Effect": "Allow",
            "Action": "ec2:SendSpotInstanceInterruptions",
            "Resource": f"arn:aws:ec2:{region}:{account}:instance/*",
            "Condition": {
                "StringEquals": {
                    f"aws:ResourceTag/{LABEL_NODEPOOL}": nodepool,
                    f"aws:ResourceTag/{TAG_PROJECT}": project,
                }
            },
        },
        {
            "Sid": "ResolveTagTargets",
            "Effect": "Allow",
            "Action": "ec2:DescribeInstances",
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
        },
    )


def collector(table_arn: str, key_arn: str, region: str) -> str:
    """The collector's role: its table, prices, spot history and instance lifecycles; and the table's
    customer-managed key, only as DynamoDB uses it for this role (the key policy delegates to IAM, so this
    is the grant). Every call is derived from the collector's code in tests/infra/test_collector_calls.py."""
    return doc(
        {
            "Sid": "CostTable",
            "Effect": "Allow",
            "Action": [
                "dynamodb:PutItem",
                "dynamodb:BatchWriteItem",
                "dynamodb:Scan",
                "dynamodb:Query",
                "dynamodb:DescribeTable",
            ],
            "Resource": table_arn,
        },
        {
            "Sid": "CostTableKeyThroughDynamoDB",
            "Effect": "Allow",
            "Action": ["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey*", "kms:DescribeKey"],
            "Resource": key_arn,
            "Condition": {"StringEquals": {"kms:ViaService": f"dynamodb.{region}.amazonaws.com"}},
        },
        {"Sid": "Prices", "Effect": "Allow", "Action": "pricing:GetProducts", "Resource": "*"},
        # Read only. EC2's Describe calls support no resource-level permission (the Service Authorization
        # Reference lists no resource type for them), so `*` is the only resource they can be granted on;
        # the region condition keeps them to ours. DescribeInstances: a node with no capacity-type label
        # (a self-managed node group's) is priced spot or on-demand by its InstanceLifecycle
        # (gpu_finops/cost/lifecycle.py).
        {
            "Sid": "SpotHistoryAndInstanceLifecycles",
            "Effect": "Allow",
            "Action": ["ec2:DescribeSpotPriceHistory", "ec2:DescribeInstances"],
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
        },
    )


def interruption_queue(queue_arn: str) -> str:
    return doc(
        {
            "Sid": "EventBridgeDelivers",
            "Effect": "Allow",
            "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
            "Action": "sqs:SendMessage",
            "Resource": queue_arn,
        },
        {
            "Sid": "DenyHTTP",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "sqs:*",
            "Resource": queue_arn,
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        },
    )
