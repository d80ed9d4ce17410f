"""The permissions boundary on every IAM role the stacks create (and so the nightly creates).

A boundary is a ceiling, not a grant: a role may do only what both its own policies and the boundary
allow. The nightly role writes the inline policies of the roles it creates, so the boundary alone must
make sure no such role can touch what is not ours, whatever policy it is given. So it allows what the
roles in infra/cluster*.py need (the EKS cluster and node managed policies, Karpenter's controller policy,
FIS's spot interruption, the collector), in our region, and no more:
- EC2, Auto Scaling and ELB reads on `*`; EC2 creates (launching, templates, the VPC CNI's interfaces)
  only into subnets that carry both our tags (not into any subnet), tagging only while
  creating or on what already carries our cluster's tag, with only the keys the callers set; and every
  change or deletion of what exists only on what carries both our tags (project *and* cluster: a
  sibling `<cluster>-b` shares the project tag). The VPC CNI's interfaces carry both too
  (`ADDITIONAL_ENI_TAGS`, iam/vpc_cni.py); its own cluster tag unlocks nothing. No Auto Scaling or ELB write: nothing of ours manages groups (EKS's service-linked role
  does) or load balancers (no Service of type LoadBalancer).
- our queue, our table, keys carrying both our tags; and in IAM only Karpenter's instance profiles under its path
  for this cluster and passing our Karpenter node role to EC2. No other IAM write and no
  `sts:AssumeRole`, so a role the nightly creates can never create, widen or assume another role.
tests/infra/test_iam_escalation.py proves it (boundary_findings) and decides the requests.
"""

from __future__ import annotations

from typing import Any

from gpu_finops.facts.config import Config
from gpu_finops.facts.names import PROJECT
from iam.ci_policies import AMAZON_OWNED, amazon_images, ours
from iam.iam_policies import karpenter_profile_path
from iam.vpc_cni import CNI_TAG_KEYS

# What the nodes' SSM agent calls (AmazonSSMManagedInstanceCore), nothing that runs commands elsewhere.
SSM_AGENT = (
    "ssm:DescribeAssociation",
    "ssm:DescribeDocument",
    "ssm:GetDeployablePatchSnapshotForInstance",
    "ssm:GetDocument",
    "ssm:GetManifest",
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
# What the nodes and the collector do with the cost table's customer-managed key.
KMS_USE = (
    "kms:CreateGrant",
    "kms:Decrypt",
    "kms:DescribeKey",
    "kms:Encrypt",
    "kms:GenerateDataKey",
    "kms:GenerateDataKeyWithoutPlaintext",
    "kms:ReEncryptFrom",
    "kms:ReEncryptTo",
)
# Parameter and image reads, scoped (on `*` they read every team's secrets and images).
SSM_PARAMETER_READS = ("ssm:GetParameter", "ssm:GetParameters")
ECR_PULLS = ("ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")
# The services the cluster, its nodes, Karpenter and the collector read or use, in our region, on what
# takes no resource ARN or is only read.
REGIONAL = (
    "ec2:Describe*",  # nodes, the VPC CNI, Karpenter, the cluster role's node lifecycle, FIS targets
    "autoscaling:Describe*",  # AmazonEKSClusterPolicy
    "elasticloadbalancing:Describe*",  # AmazonEKSClusterPolicy
    "eks:DescribeCluster",
    "eks-auth:AssumeRoleForPodIdentity",  # the pod identity agent on the nodes
    "ecr:DescribeImages",
    "ecr:DescribeRepositories",
    "ecr:GetAuthorizationToken",
    "ecr:ListImages",
)
# EC2 calls that make something new (nothing that exists changes): Karpenter's launches and templates,
# the VPC CNI's interfaces. Into a subnet only when it carries both our tags.
EC2_CREATES = (
    "ec2:RunInstances",
    "ec2:CreateFleet",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateNetworkInterface",
)
# What the VPC CNI does to interfaces that exist (AmazonEKS_CNI_Policy; adding addresses changes one).
CNI_ENI_CHANGES = (
    "ec2:AssignPrivateIpAddresses",
    "ec2:AssignIpv6Addresses",
    "ec2:AttachNetworkInterface",
    "ec2:DetachNetworkInterface",
    "ec2:DeleteNetworkInterface",
    "ec2:ModifyNetworkInterfaceAttribute",
    "ec2:UnassignPrivateIpAddresses",
    "ec2:UnassignIpv6Addresses",
)
# What the roles change or delete (the VPC CNI, Karpenter, FIS): only on what carries both our tags. The
# CNI's interfaces carry them from their creation (iam/vpc_cni.py), so no statement of its own.
EC2_CHANGES = (
    *CNI_ENI_CHANGES,
    "ec2:TerminateInstances",
    "ec2:DeleteLaunchTemplate",
    "ec2:SendSpotInstanceInterruptions",
)
# Tag keys set after creation: Karpenter's NodeClaim tagging (Name, nodeclaim, the EKS cluster name) and
# the VPC CNI's own keys (TagENI adds them to our primary interfaces); never a key that makes a resource ours.
RETAG_KEYS = ("Name", "karpenter.sh/nodeclaim", "eks:eks-cluster-name", *CNI_TAG_KEYS)
KARPENTER_PROFILE_ACTIONS = ("iam:CreateInstanceProfile", "iam:GetInstanceProfile", "iam:TagInstanceProfile")
# ...and what changes a profile that exists: only one Karpenter tagged as our cluster's.
KARPENTER_PROFILE_CHANGES = (
    "iam:AddRoleToInstanceProfile",
    "iam:DeleteInstanceProfile",
    "iam:RemoveRoleFromInstanceProfile",
)

# Resources a launch creates or uses besides the subnet (each new, or AWS's images, or the groups EKS
# and our stack made, which Karpenter selects by the discovery tag; attaching one changes nothing in it).
LAUNCH_USES = (
    "instance", "volume", "network-interface", "security-group", "launch-template", "fleet",
    "spot-instances-request", "placement-group", "key-pair",
)  # fmt: skip


def boundary_policy(c: Config, account: str) -> dict[str, Any]:
    name, iam, r = c.cluster_name, f"arn:aws:iam::{account}", c.region
    in_region = {"StringEquals": {"aws:RequestedRegion": r}}
    ec2 = f"arn:aws:ec2:{r}:{account}:*"
    regional = f"{r}:{account}"
    profiles = f"{iam}:instance-profile{karpenter_profile_path(name, r)}*"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ReadsInOurRegion",
                "Effect": "Allow",
                "Action": sorted(REGIONAL + SSM_AGENT),
                "Resource": "*",
                "Condition": in_region,
            },
            {
                # AWS's public parameters (Karpenter resolves the AMI alias there) and ours; the SSM agent
                # needs no parameter of anyone else's (we run no documents that read one)
                "Sid": "ReadOnlyAwsPublicAndOurParameters",
                "Effect": "Allow",
                "Action": list(SSM_PARAMETER_READS),
                "Resource": [
                    f"arn:aws:ssm:{r}::parameter/aws/service/*",
                    f"arn:aws:ssm:{regional}:parameter/{PROJECT}/{name}/*",
                ],
            },
            {
                "Sid": "PullOnlyOurRepositories",
                "Effect": "Allow",
                "Action": list(ECR_PULLS),
                "Resource": f"arn:aws:ecr:{regional}:repository/{name}/*",
            },
            {
                # EKS's own registries (add-ons, pause) are in AWS's accounts, which differ by region, and a
                # cross-account pull needs that repository's policy too: so any other account's repository,
                # never one in our account but ours (by the ARN, not a context key a service may not send)
                "Sid": "PullFromOtherAccountsRegistriesTheyOpen",
                "Effect": "Allow",
                "Action": list(ECR_PULLS),
                "NotResource": f"arn:aws:ecr:*:{account}:repository/*",
                "Condition": in_region,
            },
            {
                "Sid": "Ec2CreatesInOurRegion",
                "Effect": "Allow",
                "Action": list(EC2_CREATES),
                "Resource": [f"arn:aws:ec2:{r}:{account}:{kind}/*" for kind in LAUNCH_USES],
            },
            {
                "Sid": "Ec2CreatesOnlyFromAmazonsImages",
                "Effect": "Allow",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],  # the creates that boot an image
                "Resource": amazon_images(r),
                "Condition": AMAZON_OWNED,
            },
            {
                "Sid": "Ec2CreatesOnlyInOurSubnets",
                "Effect": "Allow",
                "Action": list(EC2_CREATES),
                "Resource": f"arn:aws:ec2:{r}:{account}:subnet/*",
                "Condition": {"StringEquals": ours(c)},
            },
            {
                "Sid": "Ec2TagWhileCreating",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": ec2,
                "Condition": {
                    "StringEquals": {"ec2:CreateAction": [a.removeprefix("ec2:") for a in EC2_CREATES]}
                },
            },
            {
                "Sid": "Ec2RetagWhatIsOurs",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": ec2,
                "Condition": {
                    "StringEquals": ours(c),
                    "ForAllValues:StringEquals": {"aws:TagKeys": list(RETAG_KEYS)},
                },
            },
            {
                "Sid": "Ec2ChangeOnlyWhatIsOurs",
                "Effect": "Allow",
                "Action": list(EC2_CHANGES),
                "Resource": ec2,
                "Condition": {"StringEquals": ours(c)},
            },
            {
                "Sid": "OurQueueAndTable",
                "Effect": "Allow",
                "Action": [
                    "sqs:DeleteMessage",
                    "sqs:GetQueueAttributes",
                    "sqs:GetQueueUrl",
                    "sqs:ReceiveMessage",
                    "dynamodb:BatchWriteItem",
                    "dynamodb:DescribeTable",
                    "dynamodb:PutItem",
                    "dynamodb:Query",
                    "dynamodb:Scan",
                ],
                "Resource": [
                    f"arn:aws:sqs:{regional}:{c.interruption_queue}",
                    f"arn:aws:dynamodb:{regional}:table/{c.cost_table}",
                ],
            },
            {
                "Sid": "KeysTaggedOurs",
                "Effect": "Allow",
                "Action": list(KMS_USE),
                "Resource": f"arn:aws:kms:{regional}:key/*",
                "Condition": {"StringEquals": ours(c)},
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
                "Resource": profiles,
            },
            {
                "Sid": "ChangeOnlyKarpentersProfilesTaggedOurs",
                "Effect": "Allow",
                "Action": list(KARPENTER_PROFILE_CHANGES),
                "Resource": profiles,
                "Condition": {"StringEquals": {f"aws:ResourceTag/kubernetes.io/cluster/{name}": "owned"}},
            },
            {
                # an EC2NodeClass naming it (instanceProfile:); and the legacy root-path `<cluster>_<hash>`
                # profile Karpenter v1.14 looks up when it finalizes an EC2NodeClass (nodeclass/controller.go
                # cleanupLegacyInstanceProfile): NotFound lets the finalizer go, AccessDenied keeps it forever
                "Sid": "ReadTheStacksInstanceProfile",
                "Effect": "Allow",
                "Action": "iam:GetInstanceProfile",
                "Resource": [
                    f"{iam}:instance-profile/{c.karpenter_node_role}",
                    f"{iam}:instance-profile/{c.cluster_name}_*",
                ],
            },
            {
                "Sid": "ListInstanceProfiles",  # takes no resource
                "Effect": "Allow",
                "Action": "iam:ListInstanceProfiles",
                "Resource": "*",
            },
            {
                "Sid": "PassOurNodeRoleToEc2Only",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": f"{iam}:role/{c.karpenter_node_role}",
                "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
            },
        ],
    }
