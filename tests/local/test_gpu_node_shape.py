"""The AWS-shaped GPU node of the placement rehearsal (local/charts/gpu_node.py): its labels come from our
NodePool and the instance catalog, its taints are the NodePool's, and NFD's and GFD's labels appear only at
their stages. No cluster needed."""

from __future__ import annotations

import pytest

from gpu_finops.facts.catalog import GPU_TYPES
from gpu_finops.facts.config import load_config
from gpu_finops.facts.kubelet import node_resources
from infra.objects.karpenter import nodepool
from local.charts.gpu_node import NFD_NVIDIA_PCI, STAGES, gpu_node, instance_labels

C = load_config()


def test_the_launched_node_carries_what_karpenter_and_the_kubelet_set_and_nothing_nfd_adds():
    node = gpu_node(C, "launched")
    labels, itype = node["metadata"]["labels"], C.gpu_instance_types[0]
    vcpu, _, gpus, _, _ = GPU_TYPES[itype]
    assert labels["karpenter.sh/nodepool"] == C.nodepool_name
    assert labels["karpenter.sh/capacity-type"] == "spot"
    assert labels["node.kubernetes.io/instance-type"] == itype
    assert labels["karpenter.k8s.aws/instance-cpu"] == str(vcpu) == str(C.gpu_node_vcpu)
    assert labels["karpenter.k8s.aws/instance-gpu-count"] == str(gpus) == str(C.gpus_per_node)
    assert labels["topology.kubernetes.io/zone"] in C.availability_zones
    assert labels["kubernetes.io/os"] == "linux" and labels["kubernetes.io/arch"] == "amd64"
    assert node["spec"]["taints"] == nodepool(C)["spec"]["template"]["spec"]["taints"]
    assert node["status"] == dict(zip(("capacity", "allocatable"), node_resources(itype), strict=True))
    assert node["status"]["capacity"]["cpu"] == str(vcpu)  # the type's vCPUs; allocatable less kube-reserved
    assert NFD_NVIDIA_PCI not in labels and not any(k.startswith("nvidia.com/gpu.") for k in labels)


def test_every_single_valued_nodepool_requirement_is_a_label():
    """Karpenter labels the node with each requirement it resolved to one value."""
    labels = gpu_node(C, "launched")["metadata"]["labels"]
    for req in nodepool(C)["spec"]["template"]["spec"]["requirements"]:
        assert labels[req["key"]] in req["values"], req


def test_nfd_then_gfd_add_their_labels_and_the_device_plugin_its_resource():
    nfd, gfd = gpu_node(C, "nfd"), gpu_node(C, "gfd")
    assert nfd["metadata"]["labels"][NFD_NVIDIA_PCI] == "true"
    assert "nvidia.com/gpu" not in nfd["status"]["capacity"]
    assert gfd["metadata"]["labels"]["nvidia.com/gpu.count"] == str(C.gpus_per_node)
    assert gfd["status"]["allocatable"]["nvidia.com/gpu"] == str(C.gpus_per_node)
    assert list(STAGES) == ["launched", "nfd", "gfd"]


def test_the_shared_pools_node_selects_the_time_slicing_config():
    labels = gpu_node(C, "launched", shared=True)["metadata"]["labels"]
    assert labels["karpenter.sh/nodepool"] == C.shared_nodepool_name
    assert labels["nvidia.com/device-plugin.config"] == C.shared_device_config


@pytest.mark.parametrize(
    "itype, error", [("p4d.24xlarge", "not in gpu_finops/facts/catalog.py"), ("x", "not in")]
)
def test_an_instance_type_outside_the_catalog_is_refused_by_name(itype, error):
    with pytest.raises(ValueError, match=error):
        instance_labels(itype)


def test_an_unknown_stage_is_refused():
    with pytest.raises(ValueError, match="stage 'ready'"):
        gpu_node(C, "ready")


def test_the_mig_capable_type_is_labelled_as_karpenters_aws_provider_labels_it():
    labels = instance_labels("p5.48xlarge")
    assert (
        labels["karpenter.k8s.aws/instance-gpu-count"],
        labels["karpenter.k8s.aws/instance-gpu-name"],
    ) == ("8", "h100")
