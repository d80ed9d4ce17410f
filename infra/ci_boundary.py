"""The permissions boundary on every IAM role the stacks create (and so the nightly creates).

A boundary is a ceiling, not a grant: a role may do only what both its own policies and the boundary
allow. This one allows what the roles in infra/cluster*.py need (the EKS cluster and node managed policies,
Karpenter's controller policy, FIS's spot interruption, the collector) in our region, and in IAM only
Karpenter's instance profiles, passing our roles to EC2, and ELB's service-linked role. It allows no other
IAM write and no `sts:AssumeRole`, so a role the nightly creates can never create, widen or assume
another role, whatever policy it is given.
"""

from __future__ import annotations

from typing import Any

from facts.config import Config

# What the nodes' SSM agent calls (AmazonSSMManagedInstanceCore), nothing that runs commands elsewhere.
SSM_AGENT = (
    "ssm:DescribeAssociation",
    "ssm:DescribeDocument",
    "ssm:GetDeployablePatchSnapshotForInstance",
    "ssm:GetDocument",
    "ssm:GetManifest",
    "ssm:GetParameter",
    "ssm:GetParameters",
    "ssm:ListAssociations",
    "ssm:ListInstanceAssociations",
    "ssm:PutComplianceItems",
    "ssm:PutConfigurePackageResult",
    "ssm:PutInventory",
    "ssm:UpdateAssociationStatus",
    "ssm:UpdateInstanceAssociationStatus",
    "ssm:UpdateInstanceInformation",
    "ssmmessages:CreateControlChannel",
    "ssmmessages:CreateDataChannel",
    "ssmmessages:OpenControlChannel",
    "ssmmessages:OpenDataChannel",
    "ec2messages:AcknowledgeMessage",
    "ec2messages:DeleteMessage",
    "ec2messages:FailMessage",
    "ec2messages:GetEndpoint",
    "ec2messages:GetMessages",
    "ec2messages:SendReply",
)
# The services the cluster, its nodes, Karpenter, FIS and the collector use, in our region.
REGIONAL = (
    "ec2:*",  # nodes, the VPC CNI, Karpenter, FIS spot interruptions
    "autoscaling:*",  # AmazonEKSClusterPolicy
    "elasticloadbalancing:*",  # AmazonEKSClusterPolicy (Service type LoadBalancer)
    "eks:DescribeCluster",
    "eks-auth:AssumeRoleForPodIdentity",  # the pod identity agent on the nodes
    "ecr:BatchCheckLayerAvailability",
    "ecr:BatchGetImage",
    "ecr:DescribeImages",
    "ecr:DescribeRepositories",
    "ecr:GetAuthorizationToken",
    "ecr:GetDownloadUrlForLayer",
    "ecr:ListImages",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "sqs:ReceiveMessage",
    "dynamodb:BatchWriteItem",
    "dynamodb:DescribeTable",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "kms:CreateGrant",
    "kms:Decrypt",
    "kms:DescribeKey",
    "kms:Encrypt",
    "kms:GenerateDataKey",
    "kms:GenerateDataKeyWithoutPlaintext",
    "kms:ReEncryptFrom",
    "kms:ReEncryptTo",
)
KARPENTER_PROFILE_ACTIONS = (
    "iam:AddRoleToInstanceProfile",
    "iam:CreateInstanceProfile",
    "iam:DeleteInstanceProfile",
    "iam:GetInstanceProfile",
    "iam:RemoveRoleFromInstanceProfile",
    "iam:TagInstanceProfile",
)


def boundary_policy(c: Config, account: str) -> dict[str, Any]:
    name, iam = c.cluster_name, f"arn:aws:iam::{account}"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "WhatOurRolesDoInOurRegion",
                "Effect": "Allow",
                "Action": sorted(REGIONAL + SSM_AGENT),
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:RequestedRegion": c.region}},
            },
            {
                "Sid": "PricesForKarpenterAndTheCollector",  # the Pricing API lives in us-east-1
                "Effect": "Allow",
                "Action": "pricing:GetProducts",
                "Resource": "*",
            },
            {
                "Sid": "KarpentersInstanceProfilesOnly",
                "Effect": "Allow",
                "Action": list(KARPENTER_PROFILE_ACTIONS),
                "Resource": [f"{iam}:instance-profile/{name}_*", f"{iam}:instance-profile/{name}-*"],
            },
            {
                "Sid": "ListInstanceProfiles",
                "Effect": "Allow",
                "Action": "iam:ListInstanceProfiles",
                "Resource": "*",
            },
            {
                "Sid": "PassOurRolesToEc2Only",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": f"{iam}:role/{name}-*",
                "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
            },
            {
                "Sid": "TheLoadBalancerServiceLinkedRole",  # AmazonEKSClusterPolicy creates it on first use
                "Effect": "Allow",
                "Action": "iam:CreateServiceLinkedRole",
                "Resource": f"{iam}:role/aws-service-role/elasticloadbalancing.amazonaws.com/*",
                "Condition": {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
            },
        ],
    }
