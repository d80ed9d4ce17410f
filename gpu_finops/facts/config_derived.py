"""What follows from the configuration's fields, written once as properties of `Config` (gpu_finops/facts/config.py
mixes this in): the GPU capacity the quotas admit, and the names the stacks give what they create (roles,
queue, table, namespaces, ports), which teardown and the acts find by the same properties."""

from __future__ import annotations

from gpu_finops.facts import names
from gpu_finops.facts.kube_keys import GPU_RESOURCE

# The nightly's role is `nightly-<cluster>`; every other role is `<cluster>-<what>`. So no cluster may be named
# `nightly` or `nightly-...` (Config.validate refuses it): `nightly`'s `nightly-fis` would be cluster `fis`'s CI
# role, and `nightly-a`'s `nightly-a-fis` cluster `a-fis`'s (red-team round 3, E).
CI_ROLE_PREFIX = "nightly-"


class Derived:
    """Properties over `Config`'s fields (cluster_name, project, the quotas, tenants, timeslicing_replicas)."""

    @property
    def max_gpu_nodes(self) -> int:
        """How many GPU nodes the spot vCPU quota lets Karpenter run at once."""
        return self.gvt_spot_vcpu_quota // self.gpu_node_vcpu

    @property
    def whole_cards(self) -> int:
        """Physical cards Kueue may hand out whole: the tenants' nvidia.com/gpu quotas."""
        return sum(t.gpu_quota for t in self.tenants)

    @property
    def shared_replicas(self) -> int:
        """Time-sliced replicas Kueue may hand out: the tenants' nvidia.com/gpu.shared quotas."""
        return sum(t.shared_gpu_quota for t in self.tenants)

    @property
    def shared_cards(self) -> int:
        """Physical cards behind the replicas (validate() makes the replicas fill whole cards)."""
        return -(-self.shared_replicas // self.timeslicing_replicas)

    @staticmethod
    def _limits(cards: int, per_node: int, vcpu: int) -> dict[str, str]:
        nodes = -(-cards // per_node)
        return {"cpu": str(nodes * vcpu), GPU_RESOURCE: str(cards)}

    @property
    def nodepool_limits(self) -> dict[str, str]:
        """Whole-card NodePool limits: exactly the cards the quotas admit, so Kueue never admits work for
        hardware Karpenter may not launch, and Karpenter never asks for more than EC2 grants."""
        return self._limits(self.whole_cards, self.gpus_per_node, self.gpu_node_vcpu)

    @property
    def shared_nodepool_limits(self) -> dict[str, str]:
        """Shared NodePool limits: the physical cards behind the replica quotas (nvidia.com/gpu counts
        physical cards for Karpenter, which knows nothing of time-slicing)."""
        return self._limits(self.shared_cards, self.gpus_per_node, self.gpu_node_vcpu)

    @property
    def gpu_nodes_at_limits(self) -> int:
        """GPU nodes both NodePools may run at their limits (what a run can cost at most)."""
        return (-(-self.whole_cards // self.gpus_per_node)) + (-(-self.shared_cards // self.gpus_per_node))

    @property
    def gpu_vcpus_needed(self) -> int:
        """G/VT spot vCPUs both GPU NodePools may use at their limits."""
        return int(self.nodepool_limits["cpu"]) + int(self.shared_nodepool_limits["cpu"])

    @property
    def shared_device_config(self) -> str:
        """The device plugin config name the shared NodePool's nodes select by label."""
        return f"timeslice-{self.timeslicing_replicas}"

    @property
    def tags(self) -> dict[str, str]:
        return {names.TAG_PROJECT: self.project, names.TAG_CLUSTER: self.cluster_name}

    # Names the stacks give what they create; teardown and the acts find them by the same properties.
    @property
    def cluster_role(self) -> str:
        """The EKS cluster's IAM role, and its security group."""
        return f"{self.cluster_name}-cluster"

    @property
    def cluster_log_group(self) -> str:
        return f"/aws/eks/{self.cluster_name}/cluster"

    @property
    def system_node_role(self) -> str:
        return f"{self.cluster_name}-system-node"

    @property
    def karpenter_node_role(self) -> str:
        """Karpenter's node role, and the instance profile of the same name."""
        return f"{self.cluster_name}-karpenter-node"

    @property
    def karpenter_controller_role(self) -> str:
        return f"{self.cluster_name}-karpenter-controller"

    @property
    def interruption_queue(self) -> str:
        return f"{self.cluster_name}-interruption"

    @property
    def fis_role(self) -> str:
        return f"{self.cluster_name}-fis"

    @property
    def cost_table(self) -> str:
        return f"{self.cluster_name}-cost"

    @property
    def collector_role(self) -> str:
        return f"{self.cluster_name}-collector"

    @property
    def collector_repository(self) -> str:
        return f"{self.cluster_name}/collector"

    def export_bucket(self, account: str) -> str:
        """The FOCUS export bucket in `account` (tagged as ours; teardown empties every version, then deletes
        it). Bucket names are global: the account in the name means nobody else can have taken it first,
        and a reader or writer naming it expects that account as the owner."""
        return f"{self.cluster_name}-focus-{account}"

    @property
    def ci_role(self) -> str:
        """The nightly's role: deliberately not `<cluster>-...`, so teardown's name rule never claims it."""
        return f"{CI_ROLE_PREFIX}{self.cluster_name}"

    @property
    def spot_slr_record(self) -> str:
        return names.spot_slr_record_name(self.cluster_name)

    @property
    def monitoring_namespace(self) -> str:
        return names.MONITORING_NS

    @property
    def collector_port(self) -> int:
        return names.COLLECTOR_PORT
