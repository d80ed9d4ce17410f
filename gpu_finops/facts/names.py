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

# The nightly's own things are named `nightly-<cluster>...`, never `<cluster>-...` (teardown's name rule).
CI_ROLE_PREFIX = "nightly-"

# The stacks `make up` applies, in order (destroy reverses it), and the one-time bootstrap stack of the
# nightly's own role, which teardown never claims. Each keeps its Terraform state in its own file under the
# config's state_dir; teardown reads only the cluster stacks' files as provenance.
CLUSTER_STACKS = ("network", "cluster", "addons")
CI_ROLE_STACK = "ci-role"


def state_file(stack: str) -> str:
    """A stack's Terraform state file name under the state directory (and under state_prefix in the bucket)."""
    return f"terraform.{stack}.tfstate"


def state_bucket(cluster: str, account: str) -> str:
    """The bucket of a cluster's Terraform state and teardown's evidence in `account`, created by the bootstrap
    stack and tagged as the CI role is (never the project tag): `nightly-` like the role, so teardown's
    `<cluster>-` name rule never takes it for ours. At most 63 characters: the longest cluster name (39) fits."""
    return f"{CI_ROLE_PREFIX}{cluster}-tf-{account}"


def state_prefix(region: str, cluster: str) -> str:
    """Where one cluster's state and evidence lie in the state bucket: its stacks' state files, the run
    record, the journal's parts. The region is in it: one account's bucket holds every region's clusters."""
    return f"{region}/{cluster}/"


# Teardown's evidence beside the state (teardown/remote.py): the run record, and the journal's parts, one object
# per teardown process under JOURNAL_FOLDER (S3 has no append).
RUN_RECORD_OBJECT = "run.json"
JOURNAL_FOLDER = "journal/"


def state_key(region: str, cluster: str, stack: str) -> str:
    """A cluster stack's Terraform state object (the S3 backend's `key`; its lock is this key + ".tflock")."""
    return state_prefix(region, cluster) + state_file(stack)


# The EC2 spot service-linked role: account-wide, created by preflight only when absent.
SPOT_SLR = "AWSServiceRoleForEC2Spot"


def spot_slr_record_name(cluster: str) -> str:
    """The SSM parameter `make up` writes when (and only when) it created the spot service-linked role."""
    return f"/{PROJECT}/{cluster}/spot-slr-created"


# The in-cluster collector and the namespace it shares with dcgm-exporter and Prometheus.
MONITORING_NS = "gpu-monitoring"
COLLECTOR = "gpu-finops-collector"  # its ServiceAccount, ClusterRole, Deployment and app label
COLLECTOR_PORT = 9464  # /metrics and /healthz
