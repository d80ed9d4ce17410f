"""`make up` and `make destroy` through OpenTofu and the AWS provider built on this machine, against moto's
server as the account: the administrator's ci-role stack, `teardown begin`, `infra up` through the cluster
stack (preflight, synth, init, apply: the same code, the endpoint set), a second plan that changes nothing
applied, `infra destroy`, and teardown's verify of an empty account.

moto emulates most of what the stacks create, not all of it: NOT_EMULATED names each resource whose API moto
lacks, and the failure moto gives. Those stop in the apply, with Terraform's message naming the resource;
everything else is applied. The test holds both ways: a failure not listed is a defect (ours, or a gap to
list with its reason in docs/local.md), and a listed resource that applies means moto grew the API.

The account is moto's with what an administrator's account has before the first `make up`: AWS's managed
policies (moto loads them when asked), the spot service-linked role named as AWS names it (moto names the
one CreateServiceLinkedRole makes `AWSServiceRoleForspot`), and a G/VT spot quota (moto has no EC2 quotas)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from gpu_finops.facts.config import load_config
from gpu_finops.facts.names import CI_ROLE_STACK
from infra import deploy
from infra.preflight import GVT_SPOT_QUOTA_CODE

# The first test to ask for OpenTofu waits for the one-time background build (about 10 minutes on a cold
# machine, docs/log/measurements.md), inside its own timeout; the moto run itself takes about 5.
pytestmark = pytest.mark.timeout(1800)

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "123456789012"  # moto's
# Resource -> the words of moto's refusal. Each is what moto's server lacks (docs/local.md, AWS through moto).
NOT_EMULATED = {
    "data.aws_eks_addon_version": "operation error EKS: DescribeAddonVersions, https response error StatusCode: 404",
    "aws_eks_addon": "operation error EKS: CreateAddon, https response error StatusCode: 404",
    "aws_eks_access_entry": "operation error EKS: CreateAccessEntry, https response error StatusCode: 404",
    "aws_eks_pod_identity_association": (
        "operation error EKS: CreatePodIdentityAssociation, https response error StatusCode: 404"
    ),
    # moto's EKS cluster has no cluster security group: vpc_config[0].cluster_security_group_id is empty
    "aws_ec2_tag": "api error InvalidID: The ID '' is not valid",
}
# What a second plan finds changed in what was applied, each where moto reads back other than it was written
# (docs/local.md): address -> (action, the attribute that differs).
MOTO_DRIFT = {
    # DescribeCluster returns no accessConfig, and bootstrap_cluster_creator_admin_permissions forces replacement
    "aws_eks_cluster.eks": ("replace", "access_config"),
    # DescribeNodegroup returns a remoteAccess block with no key, which the configuration does not have
    "aws_eks_node_group.system": ("replace", "remote_access"),
    # DescribeLaunchTemplateVersions returns the template's own tags as one more tag specification
    "aws_launch_template.system-lt": ("update", "tag_specifications"),
    # S3 Control's ListTagsForResource does not see the tags PutBucketTagging wrote
    "aws_s3_bucket.focus-export": ("update", "tags_all"),
}


@pytest.fixture
def account(aws_env, monkeypatch, tmp_path, tofu):
    """moto as an administrator's account, a config for it, and tofu on PATH with the built providers."""
    import moto.iam.models
    import moto.servicequotas.models

    monkeypatch.setenv("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
    urllib.request.urlopen(urllib.request.Request(f"{aws_env}/moto-api/reset", method="POST")).read()
    monkeypatch.setitem(moto.iam.models.SERVICE_NAME_CONVERSION, "spot", "EC2Spot")
    quota = {"QuotaCode": GVT_SPOT_QUOTA_CODE, "ServiceCode": "ec2", "Value": 1024.0}
    original = moto.servicequotas.models.ServiceQuotasBackend.get_service_quota

    def get_service_quota(self, service_code, quota_code):
        if (service_code, quota_code) == ("ec2", GVT_SPOT_QUOTA_CODE):
            return quota
        return original(self, service_code, quota_code)

    monkeypatch.setattr(
        moto.servicequotas.models.ServiceQuotasBackend, "get_service_quota", get_service_quota
    )
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "allowed_accounts": [ACCOUNT],
                "state_dir": str(tmp_path / ".state"),
                "github_repository": "acme/gpu-finops",
            }
        )
    )
    monkeypatch.setenv("GPU_FINOPS_CONFIG", str(config))
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    outdir = tmp_path / "cdktf.out"
    from infra.app import synth

    synth(load_config(config), outdir)
    for key, value in tofu.env(outdir / "stacks").items():
        monkeypatch.setenv(key, value)
    # The AWS provider lists an S3 bucket's tags through S3 Control, whose SDK client puts the account id in
    # front of the endpoint's host (123456789012.127.0.0.1, which no resolver knows). moto's server, as the
    # HTTP proxy for every host but its own address, answers those requests as it answers the rest.
    monkeypatch.setenv("HTTP_PROXY", aws_env)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.chdir(tmp_path)
    return load_config(config), outdir


def gpu_finops(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpu_finops.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ,
    )


def test_up_applies_the_network_and_cluster_stacks_on_moto_replans_nothing_and_destroy_leaves_the_account_empty(
    account, tofu, capsys
):
    c, outdir = account
    stacks = outdir / "stacks"
    admin = stacks / CI_ROLE_STACK  # applied once by an administrator, before any `make up` (docs/runbook.md)
    deploy.tf(admin, "init", "-input=false")
    # moto has no Budgets ListTagsForResource, which the provider retries for minutes after CreateBudget
    deploy.tf(admin, "apply", "-input=false", "-auto-approve", "-exclude=aws_budgets_budget.sandbox-budget")
    begun = gpu_finops("teardown", "begin")
    assert begun.returncode == 0, begun.stdout + begun.stderr

    with pytest.raises(deploy.TfFailed) as failed:
        deploy.up(c, outdir, through="cluster")
    out = capsys.readouterr().out
    print(out)
    assert failed.value.run.command[2:3] == ["apply"] and failed.value.run.command[1].endswith("/cluster")
    stopped = {d.address: d for d in failed.value.run.errors}
    assert None not in stopped, [d.line() for d in failed.value.run.errors]
    kinds: dict[str, list[str]] = {}
    for address, d in stopped.items():
        kind = ".".join(address.split(".")[:2]) if address.startswith("data.") else address.split(".")[0]
        kinds.setdefault(kind, []).append(f"{d.summary} {d.detail}")
    assert set(kinds) == set(NOT_EMULATED), [d.line() for d in failed.value.run.errors]
    for kind, said in kinds.items():
        assert all(NOT_EMULATED[kind] in words for words in said), (kind, said)

    # A second plan: the network stack unchanged; the cluster stack only creates what the apply could not
    # (the resources above and what depends on them), and changes, replaces or deletes nothing it applied.
    network = deploy.tf(stacks / "network", "plan", "-input=false", "-detailed-exitcode")
    assert network.planned == [] and network.returncode == 0
    cluster = deploy.tf(
        stacks / "cluster", "plan", "-input=false", "-detailed-exitcode", "-out=replan", ok=(2,)
    )
    shown = tofu(stacks / "cluster", "show", "-json", "replan")
    created = set(failed.value.run.completed)
    drift = {}
    for rc in json.loads(shown.stdout)["resource_changes"]:
        actions, change = rc["change"]["actions"], rc["change"]
        if actions in (["no-op"], ["read"]):
            continue
        if actions == ["create"]:
            assert rc["address"] not in created, f"{rc['address']} was created, and the plan creates it again"
            continue
        before, after = change["before"] or {}, change["after"] or {}
        differs = {p[0] for p in change.get("replace_paths") or []} or {
            k
            for k in set(before) | set(after)
            if before.get(k) != after.get(k) and change["after_unknown"].get(k) is not True
        }
        drift[rc["address"]] = ("replace" if actions == ["delete", "create"] else "/".join(actions), differs)
    assert {a: (act, {attr}) for a, (act, attr) in MOTO_DRIFT.items()} == drift
    assert {a.split(".")[0] for _, a in cluster.planned} >= {
        k for k in NOT_EMULATED if not k.startswith("data.")
    }

    # `make destroy`: infra destroy, then teardown's destroy (what Terraform does not own: the spot
    # service-linked role preflight created) and its verify
    assert deploy.destroy(c, outdir) == 0
    destroyed = gpu_finops("teardown", "destroy", "--yes", "--state-dir", str(c.state_dir))
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    verified = gpu_finops("teardown", "verify", "--state-dir", str(c.state_dir))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_for_each_over_keys_known_only_at_apply_fails_the_plan_with_terraforms_message(account):
    """The defect no type check sees: for_each keyed by subnet ids, which exist only once the apply made them."""
    _, outdir = account
    network = outdir / "stacks" / "network"
    stack = json.loads((network / "cdk.tf.json").read_text())
    subnet = next(iter(stack["resource"]["aws_subnet"]))
    stack["resource"]["aws_ec2_tag"] = {
        "by-subnet": {
            "for_each": f"${{{{ for s in [aws_subnet.{subnet}] : s.id => s }}}}",
            "resource_id": "${each.key}",
            "key": "k",
            "value": "v",
        }
    }
    (network / "cdk.tf.json").write_text(json.dumps(stack))
    deploy.tf(network, "init", "-input=false")
    with pytest.raises(deploy.TfFailed) as failed:
        deploy.tf(network, "plan", "-input=false")
    (error,) = failed.value.run.errors
    assert error.summary == "Invalid for_each argument"
    assert "cannot be determined until apply" in error.detail
    assert error.address is None or error.address.startswith("aws_ec2_tag.by-subnet")
