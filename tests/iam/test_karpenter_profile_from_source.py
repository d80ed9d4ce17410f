"""The instance profile Karpenter would create for our EC2NodeClass, computed by Karpenter's own code at the
pinned version (our Go main's `instance-profile` subcommand, local/build/unified/karpenter-kwok/main.go, calls
EC2NodeClass.InstanceProfileName/InstanceProfileTags/LegacyInstanceProfileName and
instanceprofile.FormatPath of github.com/aws/karpenter-provider-aws), and every IAM call it makes on that
profile decided against the controller policy and the boundary (iam/iam_eval.py). The 45-call table in
test_iam_karpenter.py writes the name, path and tags by hand from reading the source; this test holds the
hand-written values to what the code prints, so a new Karpenter pin that moves the profile fails here."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from iam.iam_policies import karpenter_profile_path
from tests.iam.test_iam_karpenter import (
    ACCOUNT,
    NODECLASS,
    OURS,
    UID,
    C,
    Call,
    both,
    request_tags,
    resource_tags,
)

pytestmark = [pytest.mark.slow, pytest.mark.binaries]


def karpenter_main() -> Path:
    """Our Go main as the local target builds it (the one module, local/build/unified), built when absent."""
    from local.build import binaries as build

    return build.build_all(names=("karpenter-kwok",)) / "karpenter-kwok"


def printed(cluster: str = C.cluster_name, uid: str = UID) -> dict[str, Any]:
    args = [str(karpenter_main()), "instance-profile", "-cluster", cluster, "-region", C.region]
    args += ["-nodeclass", NODECLASS, "-uid", uid, "-role", C.karpenter_node_role]
    for k, v in C.tags.items():
        args += ["-tag", f"{k}={v}"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"{args[1]} exit {out.returncode}: {out.stderr}"
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def profile() -> dict[str, Any]:
    return printed()


def arn(path: str, name: str) -> str:
    return f"arn:aws:iam::{ACCOUNT}:instance-profile{path}{name}"


def test_karpenters_code_puts_the_profile_where_our_policy_and_the_table_expect(profile):
    assert re.fullmatch(rf"{re.escape(C.cluster_name)}_\d+", profile["name"]), profile["name"]
    assert profile["path"] == f"{karpenter_profile_path(C.cluster_name, C.region)}{UID}/"
    assert profile["tags"] == OURS.profile_tags  # the hand-written table's tags, as the code makes them
    assert OURS.profile.rsplit("/", 1)[0] + "/" == arn(profile["path"], "")
    assert profile["role"] == C.karpenter_node_role


def calls(p: dict[str, Any]) -> list[Call]:
    """What pkg/providers/instanceprofile does with the printed profile (Create, ensureRole, Delete)."""
    at, tags = arn(p["path"], p["name"]), p["tags"]
    src = "pkg/providers/instanceprofile/instanceprofile.go"
    return [
        Call(f"{src}:122", "iam:CreateInstanceProfile", at, request_tags(tags)),
        Call(f"{src}:117", "iam:TagInstanceProfile", at, {**request_tags(tags), **resource_tags(tags)}),
        Call(f"{src}:85", "iam:GetInstanceProfile", at),
        Call(f"{src}:171", "iam:AddRoleToInstanceProfile", at, resource_tags(tags)),
        Call(f"{src}:199", "iam:RemoveRoleFromInstanceProfile", at, resource_tags(tags)),
        Call(f"{src}:206", "iam:DeleteInstanceProfile", at, resource_tags(tags)),
        # pkg/controllers/nodeclass/controller.go:193: on deletion, Delete(legacy name) first Gets the
        # root-path profile; NotFound is ignored, AccessDenied is not (the EC2NodeClass would keep its
        # finalizer and teardown would wait on it)
        Call(f"{src}:190 (legacy name)", "iam:GetInstanceProfile", arn("/", p["legacy_name"])),
    ]


@pytest.mark.parametrize("i", range(7))
def test_every_call_on_the_printed_profile_is_allowed(profile, i):
    call = calls(profile)[i]
    allowed, why = both(call)
    assert allowed, f"{call.source}: {call.action} on {call.resource} refused ({why})"


@pytest.mark.parametrize("i", [0, 3, 4, 5])
def test_a_sibling_clusters_printed_profile_is_denied(i):
    """Karpenter's code for `<cluster>-b` (its own path segment and tags): every write is refused."""
    call = calls(printed(cluster=f"{C.cluster_name}-b"))[i]
    allowed, why = both(call)
    assert not allowed, f"{call.action} on {call.resource} allowed ({why})"


def test_the_subcommand_refuses_missing_flags():
    out = subprocess.run([str(karpenter_main()), "instance-profile", "-cluster", "x"], capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert out.returncode == 2 and "is required" in out.stderr, out.stderr
