"""Risky items of the first run: each a setting upstream documents, checked on the synth."""

from __future__ import annotations

import yaml

from gpu_finops.facts.config import load_config

C = load_config()


def test_eks_addons_overwrite_what_eks_installed_by_itself_on_create(synthesized):
    """EKS installs vpc-cni, kube-proxy and CoreDNS itself; creating the add-on over them without
    resolve_conflicts_on_create = OVERWRITE fails on any field they differ in."""
    addons = synthesized.stack("cluster")["resource"]["aws_eks_addon"]
    assert addons and {k: a.get("resolve_conflicts_on_create") for k, a in addons.items()} == {
        k: "OVERWRITE" for k in addons
    }


def test_karpenter_nodes_let_pods_reach_imds_and_the_controller_knows_its_region(synthesized):
    """Hop limit 1 keeps IMDSv2 tokens from any pod not on the host network: upstream's EC2NodeClass
    default is 2. The controller gets its region explicitly, never from IMDS."""
    (nodeclass,) = [d for d in synthesized.chart_docs("karpenter.yaml") if d["kind"] == "EC2NodeClass"]
    assert nodeclass["spec"]["metadataOptions"]["httpPutResponseHopLimit"] == 2
    assert nodeclass["spec"]["metadataOptions"]["httpTokens"] == "required"
    release = synthesized.stack("addons")["resource"]["helm_release"]["karpenter"]
    values = yaml.safe_load(release["values"][0])
    assert {"name": "AWS_REGION", "value": C.region} in values["controller"]["env"]
