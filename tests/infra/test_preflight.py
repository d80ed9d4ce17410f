"""`make up`'s preflight: stop before any apply, naming what is missing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from gpu_finops.facts.config import load_config
from infra.preflight import GVT_SPOT_QUOTA_CODE, Preflight
from teardown.model import Context, TeardownConfig
from teardown.registry import REGISTRY
from teardown.types import load

ROOT = Path(__file__).resolve().parents[2]


def test_up_without_credentials_applies_nothing_and_says_what_is_missing(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_DEFAULT_REGION="us-east-1",
        PATH="/usr/bin:/bin",
    )
    result = subprocess.run(
        [sys.executable, "-m", "gpu_finops.cli", "infra", "up", "--outdir", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert "[MISSING] credentials: no usable AWS credentials" in out
    assert "[MISSING] terraform" in out
    assert "nothing was applied" in out
    assert not (tmp_path / "out").exists() and not (tmp_path / ".state").exists()


def test_preflight_without_credentials_says_one_line_on_stderr_and_no_runtime_banner(tmp_path):
    """The checks print on stdout; stderr is our one line, with no jsii banner before it (the CDK is not loaded
    for the checks, and its banner is silenced for the Node the setup installs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "JSII_"))}
    env.update(
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_DEFAULT_REGION="us-east-1",
    )
    result = subprocess.run(
        [sys.executable, "-m", "gpu_finops.cli", "infra", "preflight"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "[MISSING] credentials: no usable AWS credentials" in result.stdout
    (line,) = result.stderr.splitlines()  # one line (what else is missing depends on the machine's tools)
    assert re.fullmatch(
        r"preflight: \d+ of \d+ checks missing \(credentials, account allowlist[^)]*\): fix them as the list "
        r"above says, then run it again",
        line,
    ), result.stderr


def test_account_not_on_allowlist(boto_session):
    checks = {
        c.name: c for c in Preflight(load_config(), boto_session, which=lambda _: "/usr/bin/terraform").run()
    }
    assert not checks["account allowlist"].ok and "123456789012" in checks["account allowlist"].detail
    assert checks["credentials"].ok and checks["terraform"].ok


def test_quota_below_nodepool_limit_is_refused():
    session = boto3.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    client = session.client("service-quotas")
    with Stubber(client) as stub:
        stub.add_response(
            "get_service_quota",
            {"Quota": {"QuotaCode": GVT_SPOT_QUOTA_CODE, "Value": 0.0}},
            {"ServiceCode": "ec2", "QuotaCode": GVT_SPOT_QUOTA_CODE},
        )
        pf = Preflight(load_config(), session)
        pf.session = type("S", (), {"client": lambda self, *a, **k: client})()
        check = pf.quota()
    assert not check.ok and "is 0 vCPUs" in check.detail and "new accounts start at 0" in check.detail


# moto names a service-linked role after the service prefix ("AWSServiceRoleForspot"), where AWS names the
# spot one AWSServiceRoleForEC2Spot: point both modules at moto's name for these tests.
MOTO_SPOT_SLR = "AWSServiceRoleForspot"


@pytest.fixture
def moto_slr_name(monkeypatch):
    import infra.preflight
    import teardown.types.iam

    monkeypatch.setattr(infra.preflight, "SPOT_SLR", MOTO_SPOT_SLR)
    monkeypatch.setattr(teardown.types.iam, "SPOT_SLR", MOTO_SPOT_SLR)


def test_spot_role_created_only_when_absent_and_recorded_as_ours(boto_session, moto_slr_name):
    c = replace(load_config(), allowed_accounts=("123456789012",))
    pf = Preflight(c, boto_session, which=lambda _: "/usr/bin/terraform")
    assert "created" in pf.spot_role(create=True).detail
    load()
    ctx = Context(
        TeardownConfig(region="us-east-1", cluster_name=c.cluster_name, allowed_accounts=c.allowed_accounts),
        boto_session,
    )
    assert [r.id for r in REGISTRY["spot_slr"].list(ctx)] == [MOTO_SPOT_SLR]
    # A second run finds it present and neither creates nor claims anything new.
    assert "exists" in pf.spot_role(create=True).detail


def test_spot_role_that_existed_before_is_never_ours(boto_session, moto_slr_name):
    boto_session.client("iam").create_service_linked_role(AWSServiceName="spot.amazonaws.com")
    c = replace(load_config(), allowed_accounts=("123456789012",))
    assert "not ours" in Preflight(c, boto_session).spot_role(create=True).detail
    load()
    ctx = Context(
        TeardownConfig(region="us-east-1", cluster_name=c.cluster_name, allowed_accounts=c.allowed_accounts),
        boto_session,
    )
    assert REGISTRY["spot_slr"].list(ctx) == []


def test_up_writes_the_acts_kubeconfig_and_a_failure_says_what_to_rerun(tmp_path):
    from types import SimpleNamespace

    from gpu_finops.facts.config import Config
    from infra.deploy import DeployError, write_kubeconfig

    c = Config(state_dir=str(tmp_path / ".state"))
    ran: list[list[str]] = []
    path = write_kubeconfig(c, run=lambda cmd: ran.append(cmd) or SimpleNamespace(returncode=0))
    assert path == tmp_path / ".state" / "kubeconfig"
    assert ran == [["aws", "eks", "update-kubeconfig", "--name", "gpu-finops", "--region", "us-east-1",
                    "--kubeconfig", str(path), "--alias", "gpu-finops"]]  # fmt: skip
    with pytest.raises(DeployError, match="the acts have no kubeconfig; rerun that command"):
        write_kubeconfig(c, run=lambda cmd: SimpleNamespace(returncode=255))
