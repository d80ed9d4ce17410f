"""A kwok Node as the live tests apply it: the local target's kwok manages nodes annotated kwok.x-k8s.io/node=fake."""

from __future__ import annotations


def kwok_node(name: str, itype: str, *, cordon: bool = False, labels: dict[str, str] | None = None) -> dict:
    """A Node of instance type `itype` named and labelled as a kwok node, with more `labels`; `cordon`: unschedulable."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {
                "kubernetes.io/hostname": name,
                "node.kubernetes.io/instance-type": itype,
                "type": "kwok",
                **(labels or {}),
            },
        },
        "spec": {"unschedulable": cordon},
    }
