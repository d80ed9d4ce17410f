"""One typed, frozen configuration for every package, loaded from YAML and validated key by key, with
every name derived from it (roles, queue, table, namespaces, ports) as a property, so each is written once.

Every error names the bad key, what was expected and what was found. Defaults suit a sandbox account;
users edit facts/config.yaml, or name another file in $GPU_FINOPS_CONFIG.
"""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from facts import names
from facts.kube_keys import GPU_RESOURCE

DEFAULT_FILE = Path(__file__).with_name("config.yaml")
CONFIG_ENV = "GPU_FINOPS_CONFIG"  # a config file used instead of the default (the nightly writes one)


class ConfigError(ValueError):
    """A configuration value that cannot work. Names the key."""

    def __init__(self, key: str, problem: str):
        self.key = key
        super().__init__(f"config key '{key}': {problem}")


@dataclass(frozen=True)
class Tenant:
    name: str
    gpu_quota: int  # whole cards: nvidia.com/gpu nominal quota of the tenant's ClusterQueue (no borrowing)
    # time-sliced replicas: nvidia.com/gpu.shared nominal quota, on the shared NodePool's cards
    shared_gpu_quota: int = 0


@dataclass(frozen=True)
class Versions:
    """Every pinned version, in one place (docs/infra.md says why each)."""

    kubernetes: str = "1.36"  # in standard support; the local target runs the same minor (v1.36.3)
    karpenter_chart: str = "1.14.3"
    kueue_chart: str = "0.19.2"
    device_plugin_chart: str = "0.18.0"
    dcgm_exporter_chart: str = "4.1.3"
    dcgm_exporter_image: str = "4.2.3-4.1.3-ubuntu22.04"  # before 4.8.3 renamed Hostname -> hostname
    prometheus_chart: str = "27.20.0"
    collector_image_tag: str = "0.1.0"


@dataclass(frozen=True)
class Config:
    region: str = "us-east-1"
    allowed_accounts: tuple[str, ...] = ()
    cluster_name: str = names.PROJECT
    project: str = names.PROJECT
    vpc_cidr: str = "10.42.0.0/16"
    availability_zones: tuple[str, ...] = ("us-east-1a", "us-east-1b")
    tenants: tuple[Tenant, ...] = (Tenant("team-a", 1, 4), Tenant("team-b", 1, 0))
    gpu_instance_types: tuple[str, ...] = ("g6e.xlarge",)
    gpu_node_vcpu: int = 4  # every allowed type has exactly this many vCPUs (pinned in the NodePool)
    gpus_per_node: int = 1  # and exactly this many physical GPUs
    # "All G and VT Spot Instance Requests" (L-3819A6DF) in this account: two whole cards and one shared
    gvt_spot_vcpu_quota: int = 12
    timeslicing_replicas: int = 4
    system_instance_type: str = "m7i.large"
    system_node_count: int = 2
    nodepool_name: str = "gpu-spot"  # whole cards
    shared_nodepool_name: str = "gpu-shared"  # cards the device plugin time-slices into replicas
    admin_principal_arns: tuple[str, ...] = ()
    collector_interval_seconds: int = 60
    log_retention_days: int = 365
    api_public_cidrs: tuple[str, ...] = (
        "0.0.0.0/0",
    )  # who may reach the EKS API endpoint (IAM still applies)
    # The nightly workflow's role (infra/ci_role.py): owner/name of the repository whose jobs in this GitHub
    # environment may assume it. Empty: the ci-role stack is not synthesized.
    github_repository: str = ""
    ci_environment: str = "sandbox"
    ci_create_oidc_provider: bool = True  # False when the account already has GitHub's OIDC provider
    state_dir: str = ".state"  # Terraform local state, one file per stack, outside cdktf.out
    versions: Versions = field(default_factory=Versions)

    # --- derived ------------------------------------------------------------------------------------
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

    @property
    def export_bucket(self) -> str:
        """The FOCUS export bucket (tagged as ours; teardown empties every version, then deletes it)."""
        return f"{self.cluster_name}-focus" + (f"-{a}" if (a := getattr(self, "account_id", "")) else "")

    @property
    def ci_role(self) -> str:
        """The nightly's role: deliberately not `<cluster>-...`, so teardown's name rule never claims it."""
        return f"nightly-{self.cluster_name}"

    @property
    def spot_slr_record(self) -> str:
        return names.spot_slr_record_name(self.cluster_name)

    @property
    def monitoring_namespace(self) -> str:
        return names.MONITORING_NS

    @property
    def collector_port(self) -> int:
        return names.COLLECTOR_PORT

    def validate(self) -> Config:
        if not re.fullmatch(r"[a-z]{2}(-gov)?-[a-z]+-\d", self.region):
            raise ConfigError("region", f"{self.region!r} is not an AWS region name like us-east-1")
        for account in self.allowed_accounts:
            if not re.fullmatch(r"\d{12}", account):
                raise ConfigError("allowed_accounts", f"{account!r} is not a 12-digit account id")
        if not re.fullmatch(r"[a-z][a-z0-9-]{1,38}", self.cluster_name):
            raise ConfigError(
                "cluster_name", f"{self.cluster_name!r}: lowercase letters, digits and '-', 2-39 chars"
            )
        if len(self.availability_zones) < 2:
            raise ConfigError(
                "availability_zones", f"EKS needs at least 2, got {list(self.availability_zones)}"
            )
        for az in self.availability_zones:
            if not az.startswith(self.region) or len(az) != len(self.region) + 1:
                raise ConfigError("availability_zones", f"{az!r} is not a zone of region {self.region}")
        if not self.tenants:
            raise ConfigError("tenants", "at least one tenant is needed")
        if len({t.name for t in self.tenants}) != len(self.tenants):
            raise ConfigError("tenants", f"duplicate tenant names in {[t.name for t in self.tenants]}")
        for t in self.tenants:
            if not re.fullmatch(r"[a-z][a-z0-9-]{0,40}", t.name):
                raise ConfigError("tenants.name", f"{t.name!r} is not a valid Kubernetes name")
            if t.gpu_quota < 1:
                raise ConfigError(
                    "tenants.gpu_quota", f"tenant {t.name}: quota must be >= 1, got {t.gpu_quota}"
                )
            if t.shared_gpu_quota < 0:
                raise ConfigError(
                    "tenants.shared_gpu_quota",
                    f"tenant {t.name}: quota must be >= 0, got {t.shared_gpu_quota}",
                )
        if not self.gpu_instance_types:
            raise ConfigError("gpu_instance_types", "at least one GPU instance type is needed")
        if self.gvt_spot_vcpu_quota < self.gpu_node_vcpu:
            raise ConfigError(
                "gvt_spot_vcpu_quota",
                f"{self.gvt_spot_vcpu_quota} vCPUs cannot run one "
                f"{self.gpu_node_vcpu}-vCPU GPU node; new accounts start at 0: request an increase",
            )
        if self.timeslicing_replicas < 1:
            raise ConfigError("timeslicing_replicas", f"must be >= 1, got {self.timeslicing_replicas}")
        if self.shared_replicas % self.timeslicing_replicas:
            raise ConfigError(
                "tenants.shared_gpu_quota",
                f"the shared quotas add up to {self.shared_replicas} replicas, which do not fill whole cards of "
                f"{self.timeslicing_replicas} replicas: make the sum a multiple of timeslicing_replicas",
            )
        gpus = self.max_gpu_nodes * self.gpus_per_node
        nodes = -(-self.whole_cards // self.gpus_per_node) + -(-self.shared_cards // self.gpus_per_node)
        if nodes > self.max_gpu_nodes:
            raise ConfigError(
                "tenants",
                f"Kueue would admit {self.whole_cards} whole card(s) and {self.shared_replicas} replicas "
                f"({self.shared_cards} card(s)) = {nodes} node(s), but the spot vCPU quota "
                f"({self.gvt_spot_vcpu_quota}) runs only {self.max_gpu_nodes} node(s) = {gpus} GPUs; "
                "lower the quotas or raise gvt_spot_vcpu_quota",
            )
        if self.shared_nodepool_name == self.nodepool_name:
            raise ConfigError(
                "shared_nodepool_name", f"must differ from nodepool_name {self.nodepool_name!r}"
            )
        if self.github_repository and not re.fullmatch(r"[\w.-]+/[\w.-]+", self.github_repository):
            raise ConfigError("github_repository", f"{self.github_repository!r} is not owner/name")
        if not re.fullmatch(r"[\w.-]{1,255}", self.ci_environment):
            raise ConfigError("ci_environment", f"{self.ci_environment!r} is not a GitHub environment name")
        return self


def _coerce(key: str, hint: Any, value: Any) -> Any:
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, prefix=f"{key}.")
    if origin is tuple:
        (inner, _) = (
            typing.get_args(hint) if len(typing.get_args(hint)) == 2 else (typing.get_args(hint)[0], ...)
        )
        if not isinstance(value, list):
            raise ConfigError(key, f"expected a list, found {type(value).__name__} {value!r}")
        return tuple(_coerce(key, inner, v) for v in value)
    if origin in (typing.Union, types.UnionType):
        return value
    if hint is int and (not isinstance(value, int) or isinstance(value, bool)):
        raise ConfigError(key, f"expected an integer, found {value!r}")
    if hint is bool and not isinstance(value, bool):
        raise ConfigError(key, f"expected true or false, found {value!r}")
    if hint is str and not isinstance(value, str):
        raise ConfigError(key, f"expected a string, found {value!r}")
    return value


def _build(cls: type, data: Any, prefix: str = "") -> Any:
    if not isinstance(data, dict):
        raise ConfigError(prefix.rstrip(".") or "<root>", f"expected a mapping, found {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    for key in data:
        if key not in known:
            raise ConfigError(f"{prefix}{key}", f"not a known key; known: {sorted(known)}")
    return cls(**{k: _coerce(f"{prefix}{k}", hints[k], v) for k, v in data.items()})


def load_config(path: str | Path | None = None) -> Config:
    """Load and validate a config file (default: $GPU_FINOPS_CONFIG, else facts/config.yaml); a missing
    default file means all defaults, a missing named file is an error."""
    source = "the config argument" if path else CONFIG_ENV
    named = path or os.environ.get(CONFIG_ENV)
    path = Path(named) if named else DEFAULT_FILE
    if named and not path.exists():
        raise ConfigError("<file>", f"{path} (named by {source}) does not exist")
    data = yaml.safe_load(path.read_text()) if path.exists() else {}
    return _build(Config, data or {}).validate()
