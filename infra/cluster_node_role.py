"""The EC2 node role every EKS node of ours carries (system node group and Karpenter's nodes): the
managed policies EKS documents for worker nodes, under the nightly's permissions boundary. Shared by
infra/cluster.py and infra/cluster_karpenter.py, so neither imports the other."""

from __future__ import annotations

from cdktn_provider_aws.iam_role import IamRole
from cdktn_provider_aws.iam_role_policy_attachment import IamRolePolicyAttachment
from constructs import Construct

from iam import iam_policies as pol

MANAGED = "arn:aws:iam::aws:policy/"
NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonSSMManagedInstanceCore",
)


def node_role_with_policies(scope: Construct, prefix: str, name: str, boundary: str) -> IamRole:
    """An EC2 node role named `name`, created in `scope` as `<prefix>-role`, with the managed policies
    every EKS node needs attached as `<prefix>-policy-<i>`."""
    role = IamRole(
        scope,
        f"{prefix}-role",
        name=name,
        assume_role_policy=pol.trust("ec2.amazonaws.com"),
        permissions_boundary=boundary,
    )
    for i, p in enumerate(NODE_POLICIES):
        IamRolePolicyAttachment(scope, f"{prefix}-policy-{i}", role=role.name, policy_arn=MANAGED + p)
    return role
