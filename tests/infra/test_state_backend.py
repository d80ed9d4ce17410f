"""`state_backend: s3`: the stacks name the bootstrap stack's bucket and the key teardown reads, and Terraform
itself writes its state there and honours the lock, against moto's S3."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gpu_finops.facts.config import Config
from gpu_finops.facts.errors import ConfigError
from gpu_finops.facts.names import CLUSTER_STACKS, state_bucket, state_key
from teardown.provenance import Sources, _state_ids
from teardown.remote import Remote
from tests.infra.conftest import CI_CONFIG

ACCOUNT = CI_CONFIG["allowed_accounts"][0]
# Only what moto needs: path-style addressing, and no calls to STS or the instance metadata service.
MOTO_BACKEND = ["use_path_style=true", "skip_credentials_validation=true", "skip_requesting_account_id=true",
                "skip_metadata_api_check=true"]  # fmt: skip


def test_every_cluster_stack_keeps_its_state_in_the_bucket_at_the_key_teardown_reads(synthesized_with_ci):
    c = Config(allowed_accounts=(ACCOUNT,), state_backend="s3")
    for stack in CLUSTER_STACKS:
        tf = synthesized_with_ci.stack(stack)["terraform"]
        assert tf["backend"] == {
            "s3": {
                "bucket": state_bucket(c.cluster_name, ACCOUNT),
                "key": state_key(c.region, c.cluster_name, stack),
                "region": c.region,
                "encrypt": True,
                "use_lockfile": True,
            }
        }
    # the cross-stack references read the same objects
    remote = synthesized_with_ci.stack("cluster")["data"]["terraform_remote_state"]
    (ref,) = remote.values()
    assert ref["backend"] == "s3"
    assert ref["config"]["key"] == state_key(c.region, c.cluster_name, "network")


def test_the_bootstrap_stack_creates_the_bucket_versioned_private_and_kept(synthesized_with_ci):
    stack = synthesized_with_ci.stack("ci-role")
    res = stack["resource"]
    (bucket,) = res["aws_s3_bucket"].values()
    assert bucket["bucket"] == "nightly-gpu-finops-tf-${data.aws_caller_identity.me.account_id}"
    assert bucket["lifecycle"] == {"prevent_destroy": True}
    assert "tags" not in bucket, "only the provider's CI tag: never the project tag"
    assert stack["provider"]["aws"][0]["default_tags"] == [{"tags": {"gpu-finops.io/ci": "bootstrap"}}]
    (versioning,) = res["aws_s3_bucket_versioning"].values()
    assert versioning["versioning_configuration"] == {"status": "Enabled"}
    (block,) = res["aws_s3_bucket_public_access_block"].values()
    assert all(block[k] is True for k in ("block_public_acls", "block_public_policy", "ignore_public_acls",
                                          "restrict_public_buckets"))  # fmt: skip
    (policy,) = res["aws_s3_bucket_policy"].values()
    (deny,) = json.loads(policy["policy"])["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    (sse,) = res["aws_s3_bucket_server_side_encryption_configuration"].values()
    assert sse["rule"][0]["apply_server_side_encryption_by_default"] == {"sse_algorithm": "aws:kms"}


def test_an_s3_backend_without_a_known_account_refuses_naming_what_to_do(tmp_path):
    from infra.app import build

    for accounts in ((), ("123456789012", "210987654321")):
        with pytest.raises(ConfigError) as err:
            build(Config(allowed_accounts=accounts, state_backend="s3"), tmp_path)
        assert str(err.value).startswith(
            f"config key 'state_backend': 's3' keeps state in the bucket nightly-<cluster>-tf-<account>, and the "
            f"account is not known: allowed_accounts lists {len(accounts)} (expected one), and no --account was given"
        )
    with pytest.raises(ConfigError, match=r"account 999999999999's, which is not in \['123456789012'\]"):
        build(
            Config(allowed_accounts=("123456789012",), state_backend="s3"), tmp_path, account="999999999999"
        )
    assert not any(tmp_path.iterdir()), "refused before writing anything"


def _terraform(workdir: Path, endpoint: str, *args: str) -> subprocess.CompletedProcess:
    from infra.deploy import terraform_bin

    cli_config = workdir / "terraformrc"
    cli_config.write_text("")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(workdir),
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "TF_IN_AUTOMATION": "1",
        "TF_CLI_CONFIG_FILE": str(cli_config),
    }
    return subprocess.run(
        [terraform_bin(), f"-chdir={workdir}", *args, "-input=false", "-no-color"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def terraform_available():
    from infra.deploy import DeployError, terraform_bin

    try:
        terraform_bin()
    except DeployError as exc:
        pytest.skip(str(exc))


def test_terraform_writes_the_state_where_teardown_reads_it_and_honours_the_lock(
    terraform_available, boto_session, moto_endpoint, tmp_path
):
    """The network stack's own backend block, as synth writes it, run by Terraform against moto's S3."""
    from cdktn import App, TerraformOutput, TerraformStack

    from infra.app import TARGET_VERSIONS
    from infra.state import cluster_state

    c = Config(allowed_accounts=(ACCOUNT,), state_backend="s3")
    bucket, key = c.state_bucket(ACCOUNT), state_key(c.region, c.cluster_name, "network")
    s3 = boto_session.client("s3")
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})

    app = App(outdir=str(tmp_path / "out"), context={"targetVersions": TARGET_VERSIONS})
    stack = TerraformStack(app, "network")
    cluster_state(stack, c, "network", ACCOUNT)
    stack.add_override("resource.terraform_data.marker", {"input": "ours"})
    TerraformOutput(stack, "marker", value="ours")
    app.synth()
    workdir = tmp_path / "out" / "stacks" / "network"

    init = _terraform(workdir, moto_endpoint, "init", *[f"-backend-config={kv}" for kv in MOTO_BACKEND])
    assert init.returncode == 0, init.stderr
    s3.put_object(Bucket=bucket, Key=key + ".tflock", Body=b'{"ID": "another-runner"}')
    locked = _terraform(workdir, moto_endpoint, "apply", "-auto-approve", "-lock-timeout=0s")
    assert locked.returncode == 1
    assert "Error acquiring the state lock" in locked.stderr, locked.stderr
    s3.delete_object(Bucket=bucket, Key=key + ".tflock")

    applied = _terraform(workdir, moto_endpoint, "apply", "-auto-approve")
    assert applied.returncode == 0, applied.stderr
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert listed == [key], "the state at its key, and the lock released"

    remote = Remote(s3, bucket, ACCOUNT, c.region, c.cluster_name)
    ((where, body),) = list(remote.states(1 << 20))
    assert where == f"s3://{bucket}/{key}"
    state = json.loads(body)
    assert [r["type"] for r in state["resources"]] == ["terraform_data"]
    # teardown reads it as a state, from a runner with no .state/ of its own
    sources = Sources(tmp_path / "no-state-dir", tmp_path / "no-record.json", remote=remote)
    assert _state_ids(sources, ACCOUNT, c.region) == {}  # terraform_data is no AWS resource: nothing to prove


def test_preflight_finds_the_state_bucket_missing_unversioned_or_ready(boto_session):
    """The s3 branch of preflight's check, against moto: each of its three answers."""
    from infra.preflight import Preflight

    c = Config(allowed_accounts=(ACCOUNT,), state_backend="s3")
    check = Preflight(c, boto_session).state_bucket(ACCOUNT)
    assert not check.ok
    assert check.detail.startswith(
        f"nightly-gpu-finops-tf-{ACCOUNT} does not exist in account {ACCOUNT}: apply"
    )
    s3 = boto_session.client("s3")
    s3.create_bucket(Bucket=c.state_bucket(ACCOUNT))
    check = Preflight(c, boto_session).state_bucket(ACCOUNT)
    assert not check.ok and "has versioning never enabled, expected Enabled" in check.detail, check.detail
    s3.put_bucket_versioning(Bucket=c.state_bucket(ACCOUNT), VersioningConfiguration={"Status": "Suspended"})
    check = Preflight(c, boto_session).state_bucket(ACCOUNT)
    assert not check.ok and "has versioning Suspended, expected Enabled" in check.detail, check.detail
    s3.put_bucket_versioning(Bucket=c.state_bucket(ACCOUNT), VersioningConfiguration={"Status": "Enabled"})
    check = Preflight(c, boto_session).state_bucket(ACCOUNT)
    assert (
        check.ok and check.detail == f"s3://nightly-gpu-finops-tf-{ACCOUNT}/us-east-1/gpu-finops/ (versioned)"
    )
    local = Preflight(Config(allowed_accounts=(ACCOUNT,)), boto_session).state_bucket(ACCOUNT)
    assert local.ok and local.detail.startswith(
        "state_backend local: state, run record and journal are on this machine"
    )


def test_make_up_names_the_callers_account_for_the_state_bucket(boto_session, monkeypatch, tmp_path):
    """infra up with state_backend s3 synthesizes for the account its credentials reach (moto's STS)."""
    from infra import deploy

    class Synthesized(Exception):
        pass

    seen = []

    def synth(c, outdir, account=None):
        seen.append(account)
        raise Synthesized

    monkeypatch.setattr(deploy.Preflight, "run", lambda self, **kw: [])
    monkeypatch.setattr(deploy, "synth", synth)
    with pytest.raises(Synthesized):
        deploy.up(Config(allowed_accounts=(ACCOUNT,), state_backend="s3"), tmp_path)
    with pytest.raises(Synthesized):
        deploy.up(Config(allowed_accounts=(ACCOUNT,)), tmp_path)
    assert seen == [ACCOUNT, None], "local state needs no account"
