"""The addons stack's objects, rendered for the local target: the same NodePools and their capacity overlay,
Kueue queues, priority classes and device plugin configs, with the kwok provider's node class in place of
EC2NodeClass."""

from __future__ import annotations

import copy
from typing import Any

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import LABEL_INSTANCE_CPU, LABEL_INSTANCE_GPU_COUNT
from infra.objects.device_plugin import device_plugin_values
from infra.objects.karpenter import karpenter_objects
from infra.objects.karpenter import nodepool as aws_nodepool
from infra.objects.kueue import kueue_objects

AWS_TO_KWOK_LABELS = {LABEL_INSTANCE_CPU: "karpenter.kwok.sh/instance-cpu"}
AWS_ONLY_LABELS = {LABEL_INSTANCE_GPU_COUNT}  # kwok has no GPU-count label: the type pins it


def kwok_nodepool(aws_pool: dict[str, Any]) -> dict[str, Any]:
    pool = copy.deepcopy(aws_pool)
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


def nodepool(c: Config, *, shared: bool = False) -> dict[str, Any]:
    return kwok_nodepool(aws_nodepool(c, shared=shared))


def device_plugin_configmap(c: Config) -> list[dict[str, Any]]:
    """The ConfigMap the device plugin chart makes from `config.map`, read by local/sim/device_plugin.py; the
    chart's `config.default` travels as an annotation (on AWS it is a flag of the plugin)."""
    from local.sim import device_plugin

    values = device_plugin_values(c)["config"]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": device_plugin.CONFIG_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": device_plugin.CONFIG_MAP,
                "namespace": device_plugin.CONFIG_NAMESPACE,
                "annotations": {device_plugin.DEFAULT_CONFIG_KEY: values["default"]},
            },
            "data": values["map"],
        },
    ]


def all_objects(c: Config) -> list[dict[str, Any]]:
    karpenter = [kwok_nodepool(o) if o["kind"] == "NodePool" else o for o in karpenter_objects(c)]
    return [kwok_nodeclass(), *karpenter, *kueue_objects(c), *device_plugin_configmap(c)]
