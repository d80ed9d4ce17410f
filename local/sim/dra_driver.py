"""The simulated DRA driver: what NVIDIA's GPU DRA driver (driver `gpu.nvidia.com`, kubernetes-sigs/
dra-driver-nvidia-gpu v0.4.0, formerly NVIDIA/k8s-dra-driver-gpu v25.12.0) publishes for a node of whole cards,
and the DeviceClasses its chart creates.

Per node, one ResourceSlice (cmd/gpu-kubelet-plugin/driver.go publishResources): `spec.driver` the driver,
`spec.nodeName` and `spec.pool.name` the node's name, generation 1, one slice in the pool, owned by the Node. Per
card one device `gpu-<minor>` (deviceinfo.go CanonicalName) with the attributes (deviceinfo.go Attributes):
type "gpu", uuid, productName, brand, architecture, cudaComputeCapability, driverVersion, cudaDriverVersion,
`resource.kubernetes.io/pciBusID` and `resource.kubernetes.io/pcieRoot`, and one capacity, `memory`. The chart's
DeviceClass `gpu.nvidia.com` selects `type == 'gpu'` and, on a resource.k8s.io/v1 cluster, sets
`extendedResourceName: nvidia.com/gpu` (commit d7b7d1ec, in v25.12.0 and v0.4.0), so a pod asking `nvidia.com/gpu`
on a node that does not advertise it is served from these devices; `mig.nvidia.com` selects `type == 'mig'`,
`vfio.gpu.nvidia.com` `type == 'vfio'` (v0.4.1 templates/deviceclass-*.yaml).

Each card's productName, brand, architecture, cudaComputeCapability and memory are those Karpenter's AWS provider
(v1.15.0 pkg/providers/drametadata, scraped from the driver on each instance type) expects the driver to publish;
`tests/local/sim/test_dra_driver_against_karpenter.py` asks the provider's own code. Made up, stable per card:
the uuid (as the device plugin simulator's), the PCI bus id and PCIe root, the driver versions."""

from __future__ import annotations

from typing import Any

from gpu_finops.facts.kube_keys import GPU_RESOURCE

DRIVER = "gpu.nvidia.com"
DRA_API = "resource.k8s.io/v1"
GPU_CLASS, MIG_CLASS, VFIO_CLASS = "gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"
EXTENDED_RESOURCE = GPU_RESOURCE
DRIVER_VERSION, CUDA_DRIVER_VERSION = "570.172.8", "12.8.0"  # one driver for every simulated node

# Each instance family's card as the driver publishes it: NVML's name, architecture, CUDA compute capability, and
# the memory capacity (the driver's, which on the H100 is less than the 81,559 MiB GFD labels)
CARDS: dict[str, tuple[str, str, str, str]] = {
    "g6e": ("NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi"),
    "g6": ("NVIDIA L4", "Ada Lovelace", "8.9.0", "23034Mi"),
    "g5": ("NVIDIA A10G", "Ampere", "8.6.0", "23028Mi"),
    "g4dn": ("Tesla T4", "Turing", "7.5.0", "15Gi"),
    "p5": ("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81152Mi"),
}
BRAND = "Nvidia"


def _string(v: str) -> dict[str, str]:
    return {"string": v}


def _version(v: str) -> dict[str, str]:
    return {"version": v}


def device(node: str, minor: int, instance_type: str, uuid: str) -> dict[str, Any]:
    """One whole card as the driver publishes it: `gpu-<minor>`, its attributes and its memory."""
    family = instance_type.split(".")[0]
    if family not in CARDS:
        raise ValueError(
            f"node {node}: instance type {instance_type!r} has no card the simulated DRA driver knows "
            f"(known: {sorted(CARDS)}); add its card as the driver publishes it to local/sim/dra_driver.py CARDS"
        )
    product, architecture, compute, memory = CARDS[family]
    return {
        "name": f"gpu-{minor}",
        "attributes": {
            "type": _string("gpu"),
            "uuid": _string(uuid),
            "productName": _string(product),
            "brand": _string(BRAND),
            "architecture": _string(architecture),
            "cudaComputeCapability": _version(compute),
            "driverVersion": _version(DRIVER_VERSION),
            "cudaDriverVersion": _version(CUDA_DRIVER_VERSION),
            "resource.kubernetes.io/pciBusID": _string(f"0000:{0x10 + minor:02x}:00.0"),
            "resource.kubernetes.io/pcieRoot": _string(f"pci0000:{0x10 + minor:02x}"),
        },
        "capacity": {"memory": {"value": memory}},
    }


def resource_slice(node: str, node_uid: str, instance_type: str, uuids: list[str]) -> dict[str, Any]:
    """The node's one ResourceSlice: a pool named for the node, a device per card (`uuids` in minor order)."""
    return {
        "apiVersion": DRA_API,
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{node}-{DRIVER}",  # kwok's simulation names it so; the driver uses generateName
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid, "controller": True}
            ],
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [device(node, i, instance_type, u) for i, u in enumerate(uuids)],
        },
    }


def device_classes() -> list[dict[str, Any]]:
    """The chart's GPU DeviceClasses on a resource.k8s.io/v1 cluster."""

    def cls(name: str, kind: str, extended: str | None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "selectors": [
                {
                    "cel": {
                        "expression": f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'"
                    }
                }
            ]
        }
        if extended:
            spec["extendedResourceName"] = extended
        return {"apiVersion": DRA_API, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}

    return [
        cls(GPU_CLASS, "gpu", EXTENDED_RESOURCE),
        cls(MIG_CLASS, "mig", None),
        cls(VFIO_CLASS, "vfio", None),
    ]
