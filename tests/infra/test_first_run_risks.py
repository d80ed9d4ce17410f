"""Risky items of the first run (issue 30): each a setting upstream documents, checked on the synth."""

from __future__ import annotations

from facts.config import load_config

C = load_config()


def test_eks_addons_overwrite_what_eks_installed_by_itself_on_create(synthesized):
    """EKS installs vpc-cni, kube-proxy and CoreDNS itself; creating the add-on over them without
    resolve_conflicts_on_create = OVERWRITE fails on any field they differ in."""
    addons = synthesized.stack("cluster")["resource"]["aws_eks_addon"]
    assert addons and {k: a.get("resolve_conflicts_on_create") for k, a in addons.items()} == {
        k: "OVERWRITE" for k in addons
    }

