"""The addons stack's objects, rendered for the local target: the same NodePool, Kueue queues and
priority classes, with the kwok provider's node class in place of EC2NodeClass."""

from __future__ import annotations

import copy
from typing import Any

from facts.config import Config
from facts.kube_keys import LABEL_INSTANCE_CPU, LABEL_INSTANCE_GPU_COUNT
from infra import objects

AWS_TO_KWOK_LABELS = {LABEL_INSTANCE_CPU: "karpenter.kwok.sh/instance-cpu"}
AWS_ONLY_LABELS = {LABEL_INSTANCE_GPU_COUNT}  # kwok has no GPU-count label: the type pins it


def nodepool(c: Config) -> dict[str, Any]:
    pool = copy.deepcopy(objects.nodepool(c))
    spec = pool["spec"]["template"]["spec"]
    spec["nodeClassRef"] = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}
    reqs = []
    for r in spec["requirements"]:
        if r["key"] in AWS_ONLY_LABELS:
            continue
        reqs.append({**r, "key": AWS_TO_KWOK_LABELS.get(r["key"], r["key"])})
    spec["requirements"] = reqs
    pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}
    return pool


def kwok_nodeclass() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "KWOKNodeClass",
        "metadata": {"name": "default"},
    }


def all_objects(c: Config) -> list[dict[str, Any]]:
    return [kwok_nodeclass(), nodepool(c), *objects.kueue_objects(c)]
