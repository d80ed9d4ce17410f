"""A node's capacity type from the label that says it: Karpenter's, else EKS managed node groups'; else
unknown (None), never on-demand by default."""

from __future__ import annotations

import pytest

from gpu_finops.clients.nodes import capacity_type_of, node_facts_from_dict


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"karpenter.sh/capacity-type": "spot"}, ("spot", "karpenter.sh/capacity-type")),
        ({"eks.amazonaws.com/capacityType": "SPOT"}, ("spot", "eks.amazonaws.com/capacityType")),
        ({"eks.amazonaws.com/capacityType": "ON_DEMAND"}, ("on-demand", "eks.amazonaws.com/capacityType")),
        (
            {"eks.amazonaws.com/capacityType": "CAPACITY_BLOCK"},
            ("reserved", "eks.amazonaws.com/capacityType"),
        ),
        # both: Karpenter's wins (it launched the node)
        (
            {"karpenter.sh/capacity-type": "on-demand", "eks.amazonaws.com/capacityType": "SPOT"},
            ("on-demand", "karpenter.sh/capacity-type"),
        ),
        ({}, (None, None)),  # the near miss: nothing says, so nothing is assumed
        ({"eks.amazonaws.com/capacityType": ""}, (None, None)),
    ],
)
def test_capacity_type_from_the_labels(labels, expected):
    assert capacity_type_of(labels) == expected


def test_a_node_labelled_only_by_eks_is_read_as_spot():
    node = node_facts_from_dict({
        "metadata": {"name": "mng-1", "creationTimestamp": "2026-12-01T00:00:00Z",
                     "labels": {"eks.amazonaws.com/capacityType": "SPOT",
                                "node.kubernetes.io/instance-type": "g6e.xlarge"}},
        "status": {"capacity": {"nvidia.com/gpu": "1"}},
    })  # fmt: skip
    assert (node.capacity_type, node.capacity_source) == ("spot", "eks.amazonaws.com/capacityType")
