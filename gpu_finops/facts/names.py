"""Names the project gives things, shared by the stacks, teardown, the collector and the acts."""

from __future__ import annotations

PROJECT = "gpu-finops"  # the default project and cluster name, the field manager, the CLI's name

# AWS tags. The project tag marks what teardown may delete; the CI tag marks the nightly's own role,
# which must never carry the project tag (teardown would claim the role it runs as).
TAG_PROJECT = "gpu-finops.io/project"
TAG_CLUSTER = "gpu-finops.io/cluster"
TAG_CI = "gpu-finops.io/ci"
# The VPC CNI's tag on the interfaces it makes, set to its CLUSTER_NAME. Not ours: any VPC CNI given that
# name (a kops or self-managed cluster too) sets it, and anyone allowed to tag can; it is never ownership.
TAG_VPC_CNI_CLUSTER = "cluster.k8s.amazonaws.com/name"

# The stacks `make up` applies, in order (destroy reverses it), and the one-time bootstrap stack of the
# nightly's own role, which teardown never claims. Each keeps its Terraform state in its own file under the
# config's state_dir; teardown reads only the cluster stacks' files as provenance.
CLUSTER_STACKS = ("network", "cluster", "addons")
CI_ROLE_STACK = "ci-role"


def state_file(stack: str) -> str:
    """A stack's Terraform state file name under the state directory."""
    return f"terraform.{stack}.tfstate"


# The EC2 spot service-linked role: account-wide, created by preflight only when absent.
SPOT_SLR = "AWSServiceRoleForEC2Spot"


def spot_slr_record_name(cluster: str) -> str:
    """The SSM parameter `make up` writes when (and only when) it created the spot service-linked role."""
    return f"/{PROJECT}/{cluster}/spot-slr-created"


# The in-cluster collector and the namespace it shares with dcgm-exporter and Prometheus.
MONITORING_NS = "gpu-monitoring"
COLLECTOR = "gpu-finops-collector"  # its ServiceAccount, ClusterRole, Deployment and app label
COLLECTOR_PORT = 9464  # /metrics and /healthz
