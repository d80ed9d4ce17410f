"""One typed, frozen configuration for every package, loaded from YAML and validated completely up front,
with everything that follows from its fields written once as a property of `Config`: the GPU capacity the
quotas admit, and the names the stacks give what they create (roles, queue, table, namespaces, ports), which
teardown and the acts find by the same properties.

The fields are plain dataclass fields; their types say the rules (gpu_finops/facts/config_types.py: pydantic checks them:
strict integers and booleans, ranges, CIDRs, ARNs, regions botocore knows), so adding a key is one line.
`validate()` then checks what spans keys (zones of the region, quotas the hardware can hold). Every error names
the bad key, what was expected and what was found. Defaults suit a sandbox account; users edit
gpu_finops/facts/config.yaml, or name another file in $GPU_FINOPS_CONFIG.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from gpu_finops.facts import config_yaml, names
from gpu_finops.facts.config_types import (
    RULES,
    AccountId,
    AddonVersion,
    AmiAlias,
    Cidr,
    ClusterName,
    Count,
    Dollars,
    Email,
    Flag,
    GithubEnvironment,
    GithubRepository,
    InstanceType,
    KubeMinor,
    KubeName,
    MigProfileName,
    Name,
    Positive,
    PrincipalArn,
    Region,
    RetentionDays,
    Version,
)
from gpu_finops.facts.errors import FILE, ConfigError, excerpt, shown
from gpu_finops.facts.kube_keys import GPU_RESOURCE
from gpu_finops.facts.private_files import NotAPrivateFile, TooLarge, read_regular

DEFAULT_FILE = Path(__file__).with_name("config.yaml")
CONFIG_ENV = "GPU_FINOPS_CONFIG"  # a config file used instead of the default (the nightly writes one)
__all__ = ["Config", "ConfigError", "Tenant", "Versions", "load_config"]
# The nightly's role is `nightly-<cluster>`; every other role is `<cluster>-<what>`. So no cluster may be named
# `nightly` or `nightly-...` (Config.validate refuses it): `nightly`'s `nightly-fis` would be cluster `fis`'s CI
# role, and `nightly-a`'s `nightly-a-fis` cluster `a-fis`'s.
CI_ROLE_PREFIX = names.CI_ROLE_PREFIX


@dataclass(frozen=True)
class Tenant:
    __pydantic_config__ = RULES
    name: KubeName
    gpu_quota: (
        Positive  # whole cards: nvidia.com/gpu nominal quota of the tenant's ClusterQueue (no borrowing)
    )
    # time-sliced replicas: nvidia.com/gpu.shared nominal quota, on the shared NodePool's cards
    shared_gpu_quota: Count = 0
    # MIG slices: nvidia.com/mig-<profile> nominal quota per profile, on the MIG NodePool's partitioned cards
    mig_quota: dict[MigProfileName, Count] = field(default_factory=dict)
    # MPS clients: nvidia.com/gpu.shared nominal quota on the MPS flavor, on the MPS NodePool's cards (each card
    # `timeslicing_replicas` clients, each limited by the control daemon to 1/replicas of its memory and SMs)
    mps_quota: Count = 0
    # whole cards through Dynamic Resource Allocation: nvidia.com/gpu nominal quota on the DRA flavor, on the DRA
    # NodePool's nodes, asked by a claim of NVIDIA's gpu.nvidia.com class or as nvidia.com/gpu the class serves
    dra_gpu_quota: Count = 0


@dataclass(frozen=True)
class Versions:
    """Every pinned version, in one place (docs/infra.md says why each)."""

    __pydantic_config__ = RULES
    # Each pin carries a `# renovate:` comment naming its datasource (renovate.json's regex managers read
    # them; tests/ci/test_renovate.py fails on a pin no manager covers).
    # renovate: datasource=endoflife-date depName=amazon-eks versioning=loose
    kubernetes: KubeMinor = "1.36"  # in standard support; the local target runs the same minor (v1.36.3)
    # renovate: datasource=docker depName=public.ecr.aws/karpenter/karpenter
    karpenter_chart: Version = "1.15.0"  # karpenter and karpenter-crd, one version
    # renovate: datasource=docker depName=registry.k8s.io/kueue/charts/kueue
    kueue_chart: Version = "0.19.2"
    # renovate: datasource=helm depName=nvidia-device-plugin registryUrl=https://nvidia.github.io/k8s-device-plugin
    device_plugin_chart: Version = "0.20.0"
    # NVIDIA's DRA driver for GPUs (kubernetes-sigs/dra-driver-nvidia-gpu), on the DRA pool's nodes only
    # renovate: datasource=docker depName=registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu
    dra_driver_chart: Version = "0.4.1"
    # renovate: datasource=helm depName=dcgm-exporter registryUrl=https://nvidia.github.io/dcgm-exporter/helm-charts
    dcgm_exporter_chart: Version = "4.8.3"
    # 4.8.3 spells the node label `hostname` (was `Hostname`); 4.9.0 renames fields and units: not yet.
    # renovate: datasource=docker depName=nvcr.io/nvidia/k8s/dcgm-exporter
    dcgm_exporter_image: Version = "4.6.0-4.8.3-distroless"
    # renovate: datasource=helm depName=prometheus registryUrl=https://prometheus-community.github.io/helm-charts
    prometheus_chart: Version = "29.27.0"
    # The EKS AL2023 AMI release (Karpenter picks its NVIDIA variant for GPU types); never @latest.
    # renovate: datasource=github-releases depName=awslabs/amazon-eks-ami
    node_ami_alias: AmiAlias = "al2023@v20261003"
    # EKS add-on versions. "" = EKS's default version for the pinned Kubernetes minor, resolved at plan
    # time by the aws_eks_addon_version data source (used where no 1.36 version could be confirmed).
    # renovate: datasource=aws-eks-addon depName=kube-proxy
    addon_kube_proxy: AddonVersion = "v1.36.0-eksbuild.14"
    addon_vpc_cni: AddonVersion = ""
    addon_coredns: AddonVersion = ""
    addon_eks_pod_identity_agent: AddonVersion = ""
    collector_image_tag: Version = "0.1.0"  # our own image, built and tagged by `make up`

    def eks_addons(self) -> dict[str, str]:
        """EKS add-on name -> pinned version ("" = EKS's default for the cluster's Kubernetes minor)."""
        return {
            "vpc-cni": self.addon_vpc_cni,
            "kube-proxy": self.addon_kube_proxy,
            "coredns": self.addon_coredns,
            "eks-pod-identity-agent": self.addon_eks_pod_identity_agent,
        }


@dataclass(frozen=True)
class Config:
    __pydantic_config__ = RULES
    region: Region = "us-east-1"
    allowed_accounts: tuple[AccountId, ...] = ()
    cluster_name: ClusterName = names.PROJECT
    project: Name = names.PROJECT
    vpc_cidr: Cidr = "10.42.0.0/16"
    availability_zones: tuple[Name, ...] = ("us-east-1a", "us-east-1b")
    tenants: tuple[Tenant, ...] = (
        Tenant("team-a", 1, 4, {"1g.10gb": 1, "3g.40gb": 1}, 2),
        Tenant("team-b", 1, 0, {"1g.10gb": 1, "2g.20gb": 1}, 2),
    )
    gpu_instance_types: tuple[InstanceType, ...] = ("g6e.xlarge",)
    gpu_node_vcpu: Positive = 4  # every allowed type has exactly this many vCPUs (pinned in the NodePool)
    gpus_per_node: Positive = 1  # and exactly this many physical GPUs
    # "All G and VT Spot Instance Requests" (L-3819A6DF) in this account: two whole cards and one shared
    gvt_spot_vcpu_quota: Count = 12
    timeslicing_replicas: Positive = 4
    system_instance_type: InstanceType = "m7i.large"
    system_node_count: Positive = 2
    nodepool_name: KubeName = "gpu-spot"  # whole cards
    shared_nodepool_name: KubeName = "gpu-shared"  # cards the device plugin time-slices into replicas
    # The MIG pool: cards of `mig_instance_type` the MIG manager cuts by the named `mig_layout` (mig-parted's
    # names: all-balanced, all-1g.10gb, ...), each GPU instance advertised as nvidia.com/mig-<profile> (the
    # device plugin's mixed strategy), for the tenants' mig_quota. The local target always runs it when a
    # tenant has MIG quota; AWS only with `mig_on_aws: true` (a MIG-capable type costs several times a g6e:
    # `guard estimate` says how much before `make up`).
    mig_nodepool_name: KubeName = "gpu-mig"
    mig_instance_type: InstanceType = "p5.4xlarge"
    mig_layout: Name = "all-balanced"
    mig_on_aws: Flag = False
    # The MPS pool: cards of `gpu_instance_types` the device plugin shares as `timeslicing_replicas` MPS
    # clients (its "mps" config), for the tenants' mps_quota. The local target always runs it when a tenant has
    # MPS quota; AWS only with `mps_on_aws: true` (its node needs G/VT spot vCPUs beyond the quota above).
    mps_nodepool_name: KubeName = "gpu-mps"
    mps_on_aws: Flag = False
    # The DRA pool: cards of `gpu_instance_types` that NVIDIA's DRA driver publishes as devices (the device plugin
    # kept off them), for the tenants' dra_gpu_quota; Karpenter launches its nodes for pods that ask by claim
    # (its AWS provider's awsFeatureGates.draNVIDIAGPU, alpha). Off on AWS unless `dra_on_aws: true`.
    dra_nodepool_name: KubeName = "gpu-dra"
    dra_on_aws: Flag = False
    admin_principal_arns: tuple[PrincipalArn, ...] = ()
    collector_interval_seconds: Positive = 60
    log_retention_days: RetentionDays = 365
    api_public_cidrs: tuple[Cidr, ...] = (
        "0.0.0.0/0",
    )  # who may reach the EKS API endpoint (IAM still applies)
    # The nightly workflow's role (infra/ci_role.py): owner/name of the repository whose jobs in this GitHub
    # environment may assume it. Empty: the ci-role stack is not synthesized.
    github_repository: GithubRepository = ""
    ci_environment: GithubEnvironment = "sandbox"
    ci_create_oidc_provider: Flag = True  # False when the account already has GitHub's OIDC provider
    # The sandbox account's monthly cost budget (AWS Budgets, in the ci-role stack): an alert at 80 % of it
    # actual and 100 % forecast, e-mailed to `budget_alert_emails`. The default is 31 nightly runs at the
    # guard's default ceiling and more (tests/infra/test_ci_role.py holds it above `guard estimate`'s).
    sandbox_monthly_budget_usd: Dollars = 800
    budget_alert_emails: tuple[Email, ...] = ()
    # Where the cluster stacks keep their Terraform state, and teardown its run record and journal beside it:
    # "s3", the bootstrap stack's versioned, locked bucket (`state_bucket`), read back by a runner that has
    # nothing on its disk; "local", files under state_dir alone, which a lost machine takes with it
    # (docs/teardown.md, "Where state and evidence live"). The nightly writes "s3".
    state_backend: Literal["local", "s3"] = "local"
    state_dir: Name = ".state"  # Terraform local state, one file per stack, outside cdktf.out
    versions: Versions = field(default_factory=Versions)

    # Properties over the fields (cluster_name, project, the quotas, tenants, timeslicing_replicas): the GPU
    # capacity the quotas admit, and the names the stacks give what they create.
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
    def mig_slices(self) -> dict[str, int]:
        """MIG profile -> GPU instances Kueue may hand out: the tenants' mig_quota, summed per profile."""
        out: dict[str, int] = {}
        for t in self.tenants:
            for profile, n in t.mig_quota.items():
                out[profile] = out.get(profile, 0) + n
        return {p: n for p, n in sorted(out.items()) if n}

    @property
    def mig_layout_devices(self) -> dict[str, int]:
        """The GPU instances `mig_layout` cuts from one card of `mig_instance_type` (validate() makes it one)."""
        from gpu_finops.facts.catalog import mig_layouts

        return mig_layouts(self.mig_instance_type).get(self.mig_layout) or {}

    @property
    def mig_cards(self) -> int:
        """Physical cards the MIG quotas fill: enough cards of the layout for every profile's slices."""
        per_card = self.mig_layout_devices
        return max((-(-n // per_card[p]) for p, n in self.mig_slices.items() if per_card.get(p)), default=0)

    @property
    def mig_node_shape(self) -> tuple[int, int]:
        """(vCPUs, physical GPUs) of one MIG pool node."""
        from gpu_finops.facts.catalog import GPU_TYPES

        vcpu, _, gpus, _, _ = GPU_TYPES[self.mig_instance_type]
        return vcpu, gpus

    @property
    def mig_nodepool_limits(self) -> dict[str, str]:
        """MIG NodePool limits: the physical cards behind the MIG quotas (Karpenter counts the instance type's
        nvidia.com/gpu; it knows nothing of MIG)."""
        vcpu, gpus = self.mig_node_shape
        return self._limits(self.mig_cards, gpus, vcpu)

    @property
    def mps_clients(self) -> int:
        """MPS clients Kueue may hand out: the tenants' mps_quota."""
        return sum(t.mps_quota for t in self.tenants)

    @property
    def dra_cards(self) -> int:
        """Physical cards Kueue may hand out through DRA: the tenants' dra_gpu_quota."""
        return sum(t.dra_gpu_quota for t in self.tenants)

    @property
    def dra_nodepool_limits(self) -> dict[str, str]:
        """DRA NodePool limits: the physical cards behind the DRA quotas."""
        return self._limits(self.dra_cards, self.gpus_per_node, self.gpu_node_vcpu)

    @property
    def mps_cards(self) -> int:
        """Physical cards behind the MPS clients (validate() makes the clients fill whole cards)."""
        return -(-self.mps_clients // self.timeslicing_replicas)

    @property
    def mps_nodepool_limits(self) -> dict[str, str]:
        """MPS NodePool limits: the physical cards behind the MPS quotas."""
        return self._limits(self.mps_cards, self.gpus_per_node, self.gpu_node_vcpu)

    def for_aws(self) -> Config:
        """The configuration the AWS stacks and the cost guard read: the MIG pool only with mig_on_aws, the MPS
        pool only with mps_on_aws, the DRA pool only with dra_on_aws (their quotas dropped otherwise, so Kueue
        admits no work there is no node for)."""
        drop_mig = bool(self.mig_slices) and not self.mig_on_aws
        drop_mps = bool(self.mps_clients) and not self.mps_on_aws
        drop_dra = bool(self.dra_cards) and not self.dra_on_aws
        if not (drop_mig or drop_mps or drop_dra):
            return self
        return dataclasses.replace(
            self,
            tenants=tuple(
                dataclasses.replace(
                    t,
                    mig_quota={} if drop_mig else t.mig_quota,
                    mps_quota=0 if drop_mps else t.mps_quota,
                    dra_gpu_quota=0 if drop_dra else t.dra_gpu_quota,
                )
                for t in self.tenants
            ),
        )

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
        """G/VT GPU nodes the whole-card, shared, MPS and DRA NodePools may run at their limits (what a run can
        cost at most)."""
        cards = (self.whole_cards, self.shared_cards, self.mps_cards, self.dra_cards)
        return sum(-(-n // self.gpus_per_node) for n in cards)

    @property
    def gpu_vcpus_needed(self) -> int:
        """G/VT spot vCPUs the whole-card, shared, MPS and DRA NodePools may use at their limits."""
        pools = (
            self.nodepool_limits,
            self.shared_nodepool_limits,
            self.mps_nodepool_limits,
            self.dra_nodepool_limits,
        )
        return sum(int(limits["cpu"]) for limits in pools)

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

    def state_bucket(self, account: str) -> str:
        """The bucket of the cluster stacks' Terraform state and teardown's evidence (state_backend s3)."""
        return names.state_bucket(self.cluster_name, account)

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

    def validate(self) -> Config:
        """Every field by its type (the first error, naming the key), then the rules that span keys."""
        try:
            _schema().validate_python(self)
        except ValidationError as exc:
            raise _config_error(exc.errors()[0]) from None
        self._names_cannot_collide_or_expand()
        for az in self.availability_zones:
            if not az.startswith(self.region) or len(az) != len(self.region) + 1:
                raise ConfigError("availability_zones", f"{az!r} is not a zone of region {self.region}")
        if len(self.availability_zones) < 2:
            raise ConfigError(
                "availability_zones", f"EKS needs at least 2, got {list(self.availability_zones)}"
            )
        if len(set(self.availability_zones)) != len(self.availability_zones):
            raise ConfigError("availability_zones", f"duplicate zones in {list(self.availability_zones)}")
        vpc = ipaddress.ip_network(self.vpc_cidr)
        subnets = 2 * len(self.availability_zones)  # one public and one private /20 per zone
        if vpc.prefixlen < 16 or vpc.prefixlen > 20 or 2 ** (20 - vpc.prefixlen) < subnets:
            raise ConfigError(
                "vpc_cidr",
                f"{self.vpc_cidr} cannot hold {subnets} /20 subnets (one public, one private per zone): "
                "use a /16 to /" + str(20 - (subnets - 1).bit_length()),
            )
        if not self.tenants:
            raise ConfigError("tenants", "at least one tenant is needed")
        if len({t.name for t in self.tenants}) != len(self.tenants):
            raise ConfigError("tenants", f"duplicate tenant names in {[t.name for t in self.tenants]}")
        if not self.gpu_instance_types:
            raise ConfigError("gpu_instance_types", "at least one GPU instance type is needed")
        if self.gvt_spot_vcpu_quota < self.gpu_node_vcpu:
            raise ConfigError(
                "gvt_spot_vcpu_quota",
                f"{self.gvt_spot_vcpu_quota} vCPUs cannot run one "
                f"{self.gpu_node_vcpu}-vCPU GPU node; new accounts start at 0: request an increase",
            )
        self._replicas_fill_cards()
        gpus = self.max_gpu_nodes * self.gpus_per_node
        aws = self.for_aws()  # the quota is AWS's: the MPS pool counts only where AWS runs it
        nodes = aws.gpu_nodes_at_limits
        if nodes > self.max_gpu_nodes:
            mps = f" and {aws.mps_clients} MPS clients ({aws.mps_cards} card(s))" if aws.mps_clients else ""
            mps += f" and {aws.dra_cards} DRA card(s)" if aws.dra_cards else ""
            raise ConfigError(
                "tenants",
                f"Kueue would admit {self.whole_cards} whole card(s) and {self.shared_replicas} replicas "
                f"({self.shared_cards} card(s)){mps} = {nodes} node(s), but the spot vCPU quota "
                f"({self.gvt_spot_vcpu_quota}) runs only {self.max_gpu_nodes} node(s) = {gpus} GPUs; "
                "lower the quotas or raise gvt_spot_vcpu_quota",
            )
        self._pool_names_differ()
        self._mig_pool_fits()
        return self

    def _replicas_fill_cards(self) -> None:
        """The time-sliced replicas and the MPS clients each fill whole cards of timeslicing_replicas."""
        if self.shared_replicas % self.timeslicing_replicas:
            raise ConfigError(
                "tenants.shared_gpu_quota",
                f"the shared quotas add up to {self.shared_replicas} replicas, which do not fill whole cards of "
                f"{self.timeslicing_replicas} replicas: make the sum a multiple of timeslicing_replicas",
            )
        if self.mps_clients % self.timeslicing_replicas:
            raise ConfigError(
                "tenants.mps_quota",
                f"the MPS quotas add up to {self.mps_clients} clients, which do not fill whole cards of "
                f"{self.timeslicing_replicas} clients: make the sum a multiple of timeslicing_replicas",
            )

    def _pool_names_differ(self) -> None:
        """The whole-card, shared, MIG, MPS and DRA NodePools each have a name of their own."""
        pools = [
            self.nodepool_name,
            self.shared_nodepool_name,
            self.mig_nodepool_name,
            self.mps_nodepool_name,
            self.dra_nodepool_name,
        ]
        keys = ("shared_nodepool_name", "mig_nodepool_name", "mps_nodepool_name", "dra_nodepool_name")
        for i, key in enumerate(keys, start=1):
            if pools[i] in pools[:i]:
                raise ConfigError(
                    key,
                    f"{pools[i]!r} is already another NodePool's name: the whole-card, shared, MIG, MPS and DRA "
                    f"pools are {pools}; give each its own",
                )

    def _mig_pool_fits(self) -> None:
        """The MIG pool's type can be partitioned, its layout is one the MIG manager has, and every profile a
        tenant has quota for is one the layout cuts."""
        from gpu_finops.facts.catalog import GPU_TYPES, MIG_CARDS, mig_layouts

        if not self.mig_slices:
            return
        if self.mig_instance_type not in MIG_CARDS or self.mig_instance_type not in GPU_TYPES:
            raise ConfigError(
                "mig_instance_type",
                f"{excerpt(self.mig_instance_type, 40)!r} has no MIG-capable card in gpu_finops/facts/catalog.py; "
                f"the tenants' mig_quota needs one of {sorted(MIG_CARDS)}",
            )
        layouts = {k: v for k, v in mig_layouts(self.mig_instance_type).items() if v}
        if self.mig_layout not in layouts:
            raise ConfigError(
                "mig_layout",
                f"{excerpt(self.mig_layout, 40)!r} is not a MIG layout of {self.mig_instance_type} that cuts its "
                f"card; expected one of {sorted(layouts)}",
            )
        cut = layouts[self.mig_layout]
        for t in self.tenants:
            for profile, n in t.mig_quota.items():
                if n and profile not in cut:
                    raise ConfigError(
                        "tenants.mig_quota",
                        f"tenant {t.name} has quota for {n} {profile} slice(s), which layout {self.mig_layout} "
                        f"never cuts (it cuts {', '.join(f'{c} x {p}' for p, c in cut.items())} per card): "
                        "choose a profile of the layout or another mig_layout",
                    )

    def _names_cannot_collide_or_expand(self) -> None:
        """No cluster whose roles could be another cluster's CI role; no name IAM would read as a policy
        variable (`${aws:PrincipalTag/x}`) or a wildcard where the policies write it."""
        ci = CI_ROLE_PREFIX.rstrip("-")
        if self.cluster_name == ci or self.cluster_name.startswith(CI_ROLE_PREFIX):
            raise ConfigError(
                "cluster_name",
                f"{excerpt(self.cluster_name, 40)!r} is reserved: the nightly's roles are named "
                f"{CI_ROLE_PREFIX}<cluster>, so this cluster's roles ({self.cluster_name}-fis, ...) would be "
                f"another cluster's CI role; choose a name that is not {ci!r} and does not start with "
                f"{CI_ROLE_PREFIX!r}",
            )
        for key in ("project", "cluster_name"):
            bad = sorted(set(getattr(self, key)) & set(POLICY_SPECIAL))
            if bad:
                raise ConfigError(
                    key,
                    f"{excerpt(getattr(self, key), 40)!r} contains {''.join(bad)!r}: the IAM policies write "
                    f"this name, where IAM reads {POLICY_SPECIAL!r} as a policy variable or a wildcard; "
                    "use letters, digits, '-', '_' or '.'",
                )


# What IAM expands inside a policy's strings: `${...}` policy variables, and `*`/`?` wildcards.
POLICY_SPECIAL = "${}*?"


@functools.cache
def _schema() -> TypeAdapter:
    return TypeAdapter(Config)


def _known_keys(loc: tuple) -> list[str]:
    """The keys valid where an unknown key was found (loc: its path, the key last)."""
    parents = [p for p in loc[:-1] if not isinstance(p, int)]
    cls = {"tenants": Tenant, "versions": Versions}.get(parents[-1] if parents else "", Config)
    return [f.name for f in dataclasses.fields(cls)]


def _config_error(error: dict[str, Any]) -> ConfigError:
    """One pydantic error as the ConfigError naming the key ("tenants.gpu_quota") and the item."""
    loc = tuple(error["loc"])
    if loc[-1:] == ("[key]",):  # a mapping's key refused (a MIG profile): the mapping is the key named
        loc = loc[:-2]
    # a key is the file's text: cut short like any value (a 1 MB unknown key would be echoed whole)
    key = excerpt(".".join(str(p) for p in loc if not isinstance(p, int)), 80) or "<root>"
    items = [p for p in loc if isinstance(p, int)]
    item = f" (item {items[0] + 1} of {key.split('.')[0]})" if items else ""
    found, kind, ctx = error.get("input"), error["type"], error.get("ctx") or {}
    if kind == "unexpected_keyword_argument":
        known = _known_keys(loc)
        close = difflib.get_close_matches(str(loc[-1])[:200], known, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(sorted(known))}"
        return ConfigError(key, f"not a known key{item}; {hint}")
    if kind == "missing":
        return ConfigError(key, f"required{item}")
    if kind == "value_error":
        return ConfigError(key, f"{ctx.get('error')}{item}")
    expected = {
        "int_type": "an integer",
        "bool_type": "true or false",
        "string_type": "a string",
        "tuple_type": "a list",
        "dataclass_type": "a mapping of keys to values",
        "greater_than_equal": f"a value >= {ctx.get('ge')}",
        "string_too_short": "a non-empty string",
    }.get(kind, error["msg"])
    if kind == "literal_error":
        return ConfigError(key, f"expected one of {ctx.get('expected')}, found {shown(found)}{item}")
    if kind == "greater_than_equal":
        return ConfigError(key, f"must be >= {ctx.get('ge')}, found {shown(found)}{item}")
    if kind == "less_than_equal":
        return ConfigError(key, f"must be <= {ctx.get('le')}, found {shown(found)}{item}")
    # the value is quoted cut short: it may be megabytes (a long string, a huge list)
    found_text = f"{type(found).__name__} {shown(found)}" if kind.endswith("_type") else shown(found)
    if kind == "string_type" and isinstance(found, int | float):
        expected += " (quote it in YAML)"
    return ConfigError(key, f"expected {expected}, found {found_text}{item}")


def load_config(path: str | Path | None = None) -> Config:
    """Load and validate a config file (default: $GPU_FINOPS_CONFIG, else gpu_finops/facts/config.yaml); a missing
    default file means all defaults, a missing named file is an error. Every error names the file."""
    source = "the config argument" if path else CONFIG_ENV
    named = path or os.environ.get(CONFIG_ENV)
    path = Path(named) if named else DEFAULT_FILE
    if named and not path.exists():
        raise ConfigError(FILE, f"{path} (named by {source}) does not exist")
    if not path.exists():
        return Config().validate()
    if path.is_dir():
        raise ConfigError(FILE, "is a directory; name a YAML file", str(path))
    try:
        if path.is_file():
            config_yaml.check_size(path.stat().st_size, str(path))  # before reading a byte
        # never blocking on a FIFO nor reading /dev/zero without end: regular files only,
        # read no further than the size limit (a file that grew since)
        raw = read_regular(path, config_yaml.MAX_CONFIG_BYTES)
        text = raw.decode("utf-8")
    except TooLarge:
        raise ConfigError(FILE, f"is more than the {config_yaml.MAX_CONFIG_BYTES} bytes a config may be; is "
                          "it the right file?", str(path)) from None  # fmt: skip
    except NotAPrivateFile as exc:
        raise ConfigError(FILE, f"{exc.strerror}; name a YAML file", str(path)) from None
    except IsADirectoryError:
        raise ConfigError(FILE, "is a directory; name a YAML file", str(path)) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            FILE,
            f"not UTF-8 text (byte {exc.object[exc.start : exc.start + 1]!r} at offset {exc.start})",
            str(path),
        ) from None
    except OSError as exc:
        raise ConfigError(FILE, f"cannot read: {exc.strerror or exc}", str(path)) from None
    data = config_yaml.parse(text, str(path))
    try:
        config = _schema().validate_python({} if data is None else data)
        return config.validate()
    except ValidationError as exc:
        raise _config_error(exc.errors()[0]).in_file(str(path)) from None
    except ConfigError as exc:
        raise exc.in_file(str(path)) from None
