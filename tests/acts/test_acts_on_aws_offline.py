"""`make acts TARGET=aws` without an account: every act skips with a reason and the run exits 0; with
--require-all-acts (the nightly) the same run fails; with a deployed-but-broken stack each act fails with
the evidence (which server, what error), not a stack trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from local.cluster.prometheus_server import free_port

ROOT = Path(__file__).resolve().parents[2]
ACTS = 7  # act 8 runs on AWS only with mig_on_aws, act 9 only with mps_on_aws
MIG_ACT = "test_one_card_cut_into_mig_slices_runs_two_tenants_at_once_each_billed_its_share"
MPS_ACT = "test_one_card_shared_by_mps_clients_runs_two_tenants_at_once_each_limited_and_billed_its_share"


def run_acts(tmp_path: Path, env: dict[str, str], *extra: str) -> tuple[int, dict, str]:
    reports = tmp_path / "reports"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "KUBECONFIG", "GPU_FINOPS_"))}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "acts", "--target=aws", "-p", "no:cacheprovider", "-rs",
         "--tb=short", f"--junitxml={reports / 'acts.junit.xml'}", *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**base, "AWS_EC2_METADATA_DISABLED": "true", "GPU_FINOPS_REPORT_DIR": str(reports), **env},
    )  # fmt: skip
    data = json.loads((reports / "acts.json").read_text()) if (reports / "acts.json").exists() else {}
    return result.returncode, {a["act"]: a for a in data.get("acts", [])}, result.stdout + result.stderr


def no_credentials(tmp_path: Path) -> dict[str, str]:
    empty = tmp_path / "empty"
    empty.write_text("")
    return {
        "AWS_CONFIG_FILE": str(empty),
        "AWS_SHARED_CREDENTIALS_FILE": str(empty),
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def test_without_credentials_every_act_skips_with_the_reason_and_exits_0(tmp_path):
    code, acts, out = run_acts(tmp_path, no_credentials(tmp_path))
    assert code == 0, out[-4000:]
    assert len(acts) == ACTS and {a["outcome"] for a in acts.values()} == {"skipped"}, out[-4000:]
    for a in acts.values():
        assert "TARGET=aws needs credentials for the sandbox account" in a["message"], a


def test_acts_8_and_9_are_deselected_on_aws_saying_their_pool_is_off(tmp_path):
    _, acts, out = run_acts(tmp_path, {**no_credentials(tmp_path), "GPU_FINOPS_REQUIRE_ALL_ACTS": "1"})
    assert not {MIG_ACT, MPS_ACT} & {name.split("::")[-1] for name in acts}, sorted(acts)
    assert "act 8 deselected: the MIG pool is off on AWS (mig_on_aws: false in the config)" in out, out[
        -3000:
    ]
    assert "act 9 deselected: the MPS pool is off on AWS (mps_on_aws: false in the config)" in out, out[
        -3000:
    ]
    assert "2 deselected" in out, out[-2000:]


@pytest.mark.parametrize(
    "flag, extra, act, other",
    [
        ("mig_on_aws", "", MIG_ACT, "act 9 deselected"),
        # the MPS pool's node needs G/VT spot vCPUs beyond the default quota's three nodes
        ("mps_on_aws", "\ngvt_spot_vcpu_quota: 16\n", MPS_ACT, "act 8 deselected"),
    ],
)
def test_an_act_whose_pool_is_on_runs_on_aws(tmp_path, flag, extra, act, other):
    config = tmp_path / "config.yaml"
    shipped = (ROOT / "gpu_finops" / "facts" / "config.yaml").read_text()
    assert f"\n{flag}: false\n" in shipped and "\ngvt_spot_vcpu_quota: 12\n" in shipped
    on = shipped.replace(f"\n{flag}: false\n", f"\n{flag}: true\n")
    if extra:
        on = on.replace("\ngvt_spot_vcpu_quota: 12\n", extra)
    config.write_text(on)
    config.chmod(0o600)
    code, acts, out = run_acts(
        tmp_path / "on", {**no_credentials(tmp_path), "GPU_FINOPS_CONFIG": str(config)}
    )
    assert code == 0 and len(acts) == ACTS + 1, out[-4000:]
    assert other in out and "1 deselected" in out, out[-3000:]
    (ran,) = [a for name, a in acts.items() if name.endswith(act)]
    assert ran["outcome"] == "skipped" and "TARGET=aws needs credentials" in ran["message"], ran


def test_the_nightly_turns_those_skips_into_failures(tmp_path):
    code, acts, out = run_acts(tmp_path, {**no_credentials(tmp_path), "GPU_FINOPS_REQUIRE_ALL_ACTS": "1"})
    assert code == 1, out[-4000:]
    assert len(acts) == ACTS and {a["outcome"] for a in acts.values()} == {"failed"}, out[-4000:]
    assert "a run that skips an act proves nothing" in out


def test_a_broken_stack_fails_every_act_with_evidence(tmp_path, aws_env):
    port = free_port()  # nothing listens here: the cluster the kubeconfig names is gone
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }))  # fmt: skip
    env = {
        "AWS_ENDPOINT_URL": aws_env,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "KUBECONFIG": str(kubeconfig),
    }
    code, acts, out = run_acts(tmp_path, env)
    assert code == 1, out[-4000:]
    assert len(acts) == ACTS and {a["outcome"] for a in acts.values()} == {"failed"}, out[-4000:]
    for a in acts.values():
        assert (
            f"the deployed stack is broken: the kubeconfig {kubeconfig} points at https://127.0.0.1:{port}"
            in a["message"]
        )
        assert "Traceback" not in a["message"]
