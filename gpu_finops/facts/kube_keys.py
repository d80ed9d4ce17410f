"""Kubernetes label, annotation, taint and resource keys the stacks set and the readers look for."""

from __future__ import annotations

import re

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"  # time-sliced replicas, as the device plugin renames them
LABEL_DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"  # a node's choice of device plugin config

# Well-known node labels (Kubernetes, Karpenter v1)
LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ARCH = "kubernetes.io/arch"
LABEL_CAPACITY_TYPE = "karpenter.sh/capacity-type"
# EKS managed node groups' capacity label: ON_DEMAND, SPOT or CAPACITY_BLOCK
LABEL_EKS_CAPACITY_TYPE = "eks.amazonaws.com/capacityType"
LABEL_NODEPOOL = "karpenter.sh/nodepool"
LABEL_DISCOVERY = "karpenter.sh/discovery"  # subnets and security groups Karpenter may use
LABEL_INSTANCE_CPU = "karpenter.k8s.aws/instance-cpu"
LABEL_INSTANCE_GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"

# GPU feature discovery: physical GPUs whatever time-slicing advertises, and the sharing it applies
LABEL_GPU_COUNT = "nvidia.com/gpu.count"
LABEL_GPU_REPLICAS = "nvidia.com/gpu.replicas"
LABEL_GPU_SHARING = "nvidia.com/gpu.sharing-strategy"
LABEL_GPU_MEMORY = "nvidia.com/gpu.memory"  # GFD: a card's memory in MiB, as NVML reports it
LABEL_GPU_PRODUCT = "nvidia.com/gpu.product"  # under MIG single: <card>-MIG-<profile>
# MIG (k8s-device-plugin v0.17 internal/lm, mig-parted): the plugin's strategy (single | mixed; absent for
# none), whether any card can be partitioned, the MIG manager's desired layout and how applying it went
LABEL_MIG_STRATEGY = "nvidia.com/mig.strategy"
LABEL_MIG_CAPABLE = "nvidia.com/mig.capable"
LABEL_MIG_CONFIG = "nvidia.com/mig.config"
LABEL_MIG_CONFIG_STATE = "nvidia.com/mig.config.state"  # pending | rebooting | success | failed
LABEL_MPS_CAPABLE = "nvidia.com/mps.capable"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"  # under MIG mixed: one resource per profile, nvidia.com/mig-1g.10gb


def mig_resource(profile: str) -> str:
    """The extended resource the device plugin's mixed strategy advertises a MIG profile's slices as."""
    return MIG_RESOURCE_PREFIX + profile


ANNOTATION_DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
TAINT_DISRUPTED = "karpenter.sh/disrupted:NoSchedule"  # what Karpenter puts on an interrupted node

# Kueue
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"  # the API version of the objects we ship and read
KUEUE_API = f"{KUEUE_GROUP}/{KUEUE_VERSION}"
# Kueue's visibility API (pending workloads with their queue positions), an aggregated API Kueue serves:
# the versions Kueue v0.19.2 serves, preferred first (v1beta2 shares its name with the objects' version)
KUEUE_VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
KUEUE_VISIBILITY_VERSIONS = (KUEUE_VERSION, "v1beta1")
LABEL_QUEUE_NAME = "kueue.x-k8s.io/queue-name"
LABEL_PRIORITY_CLASS = "kueue.x-k8s.io/priority-class"

# Ours
LABEL_ACT_RUN = "gpu-finops.io/act-run"
LABEL_TENANT = "gpu-finops.io/tenant"
LABEL_POOL = "gpu-finops.io/pool"
# a node whose GPUs the DRA driver allocates, not the device plugin: the simulated device plugin and DRA driver
# read it (local/sim), and a DRA NodePool sets it
LABEL_GPU_ALLOCATION, GPU_ALLOCATION_DRA = "gpu-finops.io/gpu-allocation", "dra"
ANNOTATION_SM_ACTIVE = "gpu-finops.io/sm-active"  # what a simulated workload keeps its SMs busy at (0..1)
# a simulated workload's kind (resident-model | data-starved | busy-trainer | small-batch-server, and the
# ledger's training-stepping | training-stalled | serving-idle | serving-busy): the GPU
# simulator reports that profile's DCGM values for the GPU the pod holds (local.sim.profiles)
ANNOTATION_GPU_PROFILE = "gpu-finops.io/gpu-profile"
# what a simulated workload exports for the ledger's honest measures (docs/ledger.md; local/sim/workload_sim.py):
# a training pod names its run and the run's shape, a serving pod its model and its token rate when busy
ANNOTATION_TRAINING_RUN = "gpu-finops.io/training-run"
ANNOTATION_MODEL_PARAMETERS = "gpu-finops.io/model-parameters"
ANNOTATION_TOKENS_PER_STEP = "gpu-finops.io/tokens-per-step"
ANNOTATION_STEP_SECONDS = "gpu-finops.io/step-seconds"
ANNOTATION_GPU_MODEL = "gpu-finops.io/gpu-model"  # a key of gpu_finops.ledger.measures' dense-peak table
ANNOTATION_SERVING_MODEL = "gpu-finops.io/serving-model"
ANNOTATION_TOKENS_PER_SECOND = "gpu-finops.io/tokens-per-second"
ANNOTATION_CONTROLLER_ROLE = "gpu-finops.io/controller-role"
# the fleet ledger's convention (gpu_finops/ledger/conventions.py): why a node is unschedulable, a pod's class
LABEL_UNSCHEDULABLE_REASON = "gpu-finops.io/unschedulable-reason"
LABEL_WORKLOAD_CLASS = "gpu-finops.io/workload-class"
# the local device plugin's ConfigMap: the chart's config.default, kept beside the named configs
ANNOTATION_DEFAULT_CONFIG = "gpu-finops.io/default-config"
# The MPS pool's nodes' NoSchedule taint: only work Kueue admitted on the MPS flavor (whose tolerations carry it)
# runs there, so a pod that asks nvidia.com/gpu.shared, or a whole card, is never an MPS client by chance
TAINT_MPS_POOL = "gpu-finops.io/mps"
TAINT_DRA_POOL = "gpu-finops.io/dra"  # the DRA pool's nodes: only workloads that ask by claim and tolerate it
TAINT_ACT7_MAINTENANCE = "gpu-finops.io/act7-maintenance"  # act 7's own NoSchedule taint (placement)


def cluster_tag(cluster: str) -> str:
    """The AWS tag key Kubernetes' cloud integrations put on a cluster's resources ("owned" or "shared")."""
    return f"kubernetes.io/cluster/{cluster}"


def ksm_sanitized(name: str) -> str:
    """A Kubernetes name as kube-state-metrics writes it in a Prometheus label: every character but ASCII
    letters, digits and `_` made `_` (its SanitizeLabelName): `nvidia.com/mig-1g.10gb` -> `nvidia_com_mig_1g_10gb`
    as a `resource` label value, `nvidia.com/gpu.replicas` -> `nvidia_com_gpu_replicas` after `label_`."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)
