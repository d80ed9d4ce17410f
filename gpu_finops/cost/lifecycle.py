"""A node's capacity type from EC2 when no label says it: `InstanceLifecycle` of DescribeInstances.

Karpenter labels its nodes `karpenter.sh/capacity-type`, EKS managed node groups
`eks.amazonaws.com/capacityType` (gpu_finops/clients/nodes.py reads both). A self-managed node group carries
neither; EC2 knows: `InstanceLifecycle` is `spot` for a spot instance, `capacity-block` for a Capacity
Block, and absent for on-demand. The answer is cached per instance (an instance's lifecycle never
changes), so a steady fleet costs no call at all. Needs `ec2:DescribeInstances`.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from gpu_finops.clients.nodes import GpuNode

log = logging.getLogger(__name__)

SOURCE = "ec2:DescribeInstances InstanceLifecycle"
LIFECYCLES = {"spot": "spot", "capacity-block": "reserved", "scheduled": "on-demand"}
BATCH = 200  # instance ids per DescribeInstances call (the API accepts up to 1000 ids)


class Ec2Lifecycle:
    """Instance id -> capacity type, from EC2, cached."""

    def __init__(self, ec2: Any):
        self.ec2 = ec2
        self.known: dict[str, str] = {}
        self.calls = 0

    def capacity_types(self, instance_ids: list[str]) -> dict[str, str]:
        wanted = sorted({i for i in instance_ids if i not in self.known})
        for at in range(0, len(wanted), BATCH):
            ids = wanted[at : at + BATCH]
            self.calls += 1
            pages = self.ec2.get_paginator("describe_instances").paginate(InstanceIds=ids)
            for page in pages:
                for reservation in page.get("Reservations", []):
                    for instance in reservation.get("Instances", []):
                        lifecycle = instance.get("InstanceLifecycle")
                        self.known[instance["InstanceId"]] = LIFECYCLES.get(lifecycle, "on-demand")
        return {i: self.known[i] for i in instance_ids if i in self.known}


class LifecycleNodeSource:
    """A node source whose nodes without a capacity label get EC2's answer. A node EC2 does not know (or
    a failed call) keeps None, and pricing says it was priced without knowing (gpu_finops/cost/pricing.py)."""

    def __init__(self, inner: Any, lifecycle: Ec2Lifecycle):
        self.inner, self.lifecycle = inner, lifecycle

    def gpu_nodes(self) -> list[GpuNode]:
        nodes = self.inner.gpu_nodes()
        unknown = [n.instance_id for n in nodes if n.capacity_type is None and n.instance_id]
        if not unknown:
            return nodes
        try:
            found = self.lifecycle.capacity_types(unknown)
        except Exception as exc:  # the cost is still recorded; its message says the capacity was unknown
            log.error(
                "EC2 DescribeInstances failed for %d node(s) with no capacity label: %s", len(unknown), exc
            )
            return nodes
        return [
            dataclasses.replace(n, capacity_type=found[n.instance_id], capacity_source=SOURCE)
            if n.capacity_type is None and n.instance_id in found
            else n
            for n in nodes
        ]
