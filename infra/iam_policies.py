"""IAM policy documents as data: least privilege, tag-scoped where AWS allows it."""

from __future__ import annotations

import json
from typing import Any

from facts.kube_keys import LABEL_NODEPOOL
from facts.names import TAG_PROJECT


def doc(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def trust(service: str, *, actions: tuple[str, ...] = ("sts:AssumeRole",)) -> str:
    return doc({"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions)})


POD_IDENTITY_TRUST = trust("pods.eks.amazonaws.com", actions=("sts:AssumeRole", "sts:TagSession"))


def karpenter_controller(cluster: str, region: str, account: str, node_role_arn: str, queue_arn: str) -> str:
    """Karpenter's controller policy, scoped by the cluster tag (upstream's reference policy, condensed)."""
    owned = {f"aws:RequestTag/kubernetes.io/cluster/{cluster}": "owned"}
    mine = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster}": "owned"}
    return doc(
        {
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Resource": [
                f"arn:aws:ec2:{region}::image/*",
                f"arn:aws:ec2:{region}::snapshot/*",
                f"arn:aws:ec2:{region}:*:security-group/*",
                f"arn:aws:ec2:{region}:*:subnet/*",
                f"arn:aws:ec2:{region}:*:capacity-reservation/*",
            ],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Resource": f"arn:aws:ec2:{region}:*:launch-template/*",
            "Condition": {"StringEquals": mine, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}},
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Resource": [
                f"arn:aws:ec2:{region}:*:fleet/*",
                f"arn:aws:ec2:{region}:*:instance/*",
                f"arn:aws:ec2:{region}:*:volume/*",
                f"arn:aws:ec2:{region}:*:network-interface/*",
                f"arn:aws:ec2:{region}:*:launch-template/*",
                f"arn:aws:ec2:{region}:*:spot-instances-request/*",
            ],
            "Condition": {"StringEquals": owned, "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}},
        },
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": [
                f"arn:aws:ec2:{region}:*:fleet/*",
                f"arn:aws:ec2:{region}:*:instance/*",
                f"arn:aws:ec2:{region}:*:volume/*",
                f"arn:aws:ec2:{region}:*:network-interface/*",
                f"arn:aws:ec2:{region}:*:launch-template/*",
                f"arn:aws:ec2:{region}:*:spot-instances-request/*",
            ],
            "Condition": {
                "StringEquals": {
                    **owned,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                }
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Resource": [f"arn:aws:ec2:{region}:*:instance/*", f"arn:aws:ec2:{region}:*:launch-template/*"],
            "Condition": {"StringEquals": mine, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}},
        },
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Action": [
                "ec2:DescribeAvailabilityZones",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
                "ec2:DescribeCapacityReservations",
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
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Action": [
                "iam:CreateInstanceProfile",
                "iam:TagInstanceProfile",
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            "Resource": f"arn:aws:iam::{account}:instance-profile/*",
            "Condition": {
                "StringEquals": {
                    f"aws:RequestTag/kubernetes.io/cluster/{cluster}": "owned",
                    "aws:RequestTag/topology.kubernetes.io/region": region,
                }
            },
        },
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Action": ["iam:GetInstanceProfile", "iam:ListInstanceProfiles"],
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
    """The collector's role: its table, prices and spot history; and the table's customer-managed key,
    only as DynamoDB uses it for this role (the key policy delegates to IAM, so this is the grant)."""
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
        {
            "Sid": "SpotHistory",
            "Effect": "Allow",
            "Action": "ec2:DescribeSpotPriceHistory",
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
