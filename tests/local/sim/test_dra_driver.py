"""The simulated DRA driver publishes a node's cards as NVIDIA's GPU DRA driver does (local/sim/dra_driver.py
cites where each shape is from), and its DeviceClasses as the driver's chart creates them."""

from __future__ import annotations

import pytest

from local.sim import dra_driver


def test_a_node_of_two_l40s_is_one_pool_named_for_the_node_with_a_device_per_card():
    s = dra_driver.resource_slice("n1", "uid-1", "g6e.12xlarge", ["GPU-a", "GPU-b"])
    assert s["spec"]["driver"] == "gpu.nvidia.com" and s["spec"]["nodeName"] == "n1"
    assert s["spec"]["pool"] == {"name": "n1", "generation": 1, "resourceSliceCount": 1}
    assert s["metadata"]["ownerReferences"][0] == {
        "apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "uid-1", "controller": True,
    }  # fmt: skip
    gpu0, gpu1 = s["spec"]["devices"]
    assert (gpu0["name"], gpu1["name"]) == ("gpu-0", "gpu-1")
    assert gpu0["attributes"]["type"] == {"string": "gpu"}
    assert gpu0["attributes"]["uuid"] == {"string": "GPU-a"} and gpu1["attributes"]["uuid"] == {
        "string": "GPU-b"
    }
    assert gpu0["attributes"]["productName"] == {"string": "NVIDIA L40S"}
    assert gpu0["attributes"]["cudaComputeCapability"] == {"version": "8.9.0"}
    assert gpu0["capacity"] == {"memory": {"value": "46068Mi"}}
    assert (
        gpu0["attributes"]["resource.kubernetes.io/pciBusID"]
        != gpu1["attributes"]["resource.kubernetes.io/pciBusID"]
    )


def test_the_gpu_class_serves_the_extended_resource_and_the_mig_and_vfio_classes_do_not():
    gpu, mig, vfio = dra_driver.device_classes()
    assert (
        gpu["metadata"]["name"] == "gpu.nvidia.com"
        and gpu["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    )
    assert gpu["spec"]["selectors"][0]["cel"]["expression"] == (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
    )
    assert mig["metadata"]["name"] == "mig.nvidia.com" and "extendedResourceName" not in mig["spec"]
    assert vfio["metadata"]["name"] == "vfio.gpu.nvidia.com" and "extendedResourceName" not in vfio["spec"]


def test_a_card_the_driver_does_not_know_is_named_with_what_to_add():
    with pytest.raises(
        ValueError, match=r"node n1: instance type 'x9.large' has no card the simulated DRA driver"
    ):
        dra_driver.device("n1", 0, "x9.large", "GPU-a")
