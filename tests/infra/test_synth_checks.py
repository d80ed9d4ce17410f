"""Synthesis refuses bad inputs; checkov passes offline over the synthesized JSON; config errors name keys."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from gpu_finops.dcgm.metrics_csv import PROJECT_METRICS, MetricRow, MetricsCsvError
from gpu_finops.facts.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]
CHECKOV = ROOT / ".tools" / "checkov" / "bin" / "checkov"
SKIPS = yaml.safe_load((ROOT / "infra" / "checkov-skips.yaml").read_text())


@pytest.mark.parametrize(
    "bad, why",
    [
        (MetricRow("DCGM_FI_DEV_FB_USED", "gauge\t", "used"), "unknown prom type 'gauge\\t'"),
        (MetricRow("DCGM_FI_DEV_FB_USED", "gauge", ""), "empty help text"),
        (MetricRow("DCGM_FI_DEV_FB_USED", "Gauge", "used"), "unknown prom type 'Gauge'"),
    ],
)
def test_malformed_csv_row_fails_synthesis_naming_the_row(tmp_path, bad, why):
    from infra.app import build

    rows = (*(r for r in PROJECT_METRICS if r.field != bad.field), bad)
    with pytest.raises(MetricsCsvError) as info:
        build(load_config(), tmp_path, metrics=rows)
    assert why in str(info.value) and "DCGM_FI_DEV_FB_USED" in str(info.value)
    assert not (tmp_path / "stacks").exists() and not (tmp_path / "charts").exists()


def test_every_checkov_skip_has_a_reason():
    assert SKIPS and all(isinstance(reason, str) and len(reason) > 40 for reason in SKIPS.values())


@pytest.mark.slow
@pytest.mark.parametrize("stack", ["network", "cluster", "addons", "ci-role"])
def test_checkov_finds_nothing_failed(request, stack):
    synthesized = request.getfixturevalue("synthesized_with_ci" if stack == "ci-role" else "synthesized")
    if not CHECKOV.exists():
        pytest.fail(f"checkov not installed at {CHECKOV}: run `make setup`")
    result = subprocess.run(
        [
            str(CHECKOV),
            "-d",
            str(synthesized.outdir / "stacks" / stack),
            "--framework",
            "terraform_json",
            "--skip-check",
            ",".join(SKIPS),
            "-o",
            "json",
            "--quiet",
            "--skip-download",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = result.stdout.strip()
    reports = json.loads(out) if out.startswith(("[", "{")) else []
    reports = reports if isinstance(reports, list) else [reports]
    failed = [
        (f["check_id"], f["resource"], f["check_name"])
        for r in reports
        for f in r.get("results", {}).get("failed_checks", [])
    ]
    assert failed == [], f"checkov failed checks in {stack}: {failed}"
    if stack != "addons":  # checkov has no rules for helm/kubernetes provider resources
        assert sum(r.get("summary", {}).get("passed", 0) for r in reports) > 10, out[:2000]


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    "data, key",
    [
        ({"regoin": "us-east-1"}, "regoin"),
        ({"region": "mars-1"}, "region"),
        ({"allowed_accounts": ["12345"]}, "allowed_accounts"),
        ({"availability_zones": ["us-east-1a"]}, "availability_zones"),
        ({"availability_zones": ["us-east-1a", "eu-west-1b"]}, "availability_zones"),
        ({"gvt_spot_vcpu_quota": 0}, "gvt_spot_vcpu_quota"),
        ({"gvt_spot_vcpu_quota": 4}, "tenants"),  # 1 node = 1 GPU, but two tenants of 1 GPU each
        ({"tenants": [{"name": "a", "gpu_quota": 1}, {"name": "a", "gpu_quota": 1}]}, "tenants"),
        ({"tenants": [{"name": "a", "gpu_quota": 0}]}, "tenants.gpu_quota"),
        ({"versions": {"kueue": "0.19.2"}}, "versions.kueue"),
        ({"gpu_node_vcpu": "four"}, "gpu_node_vcpu"),
    ],
)
def test_config_errors_name_the_key(tmp_path, data, key):
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, data))
    assert info.value.key == key, str(info.value)


def test_config_defaults_are_valid_and_limits_follow_the_tenants_quotas_not_the_account_quota(tmp_path):
    # a larger account quota does not raise the pools' limits: only cards Kueue may admit are launched
    c = load_config(write(tmp_path, {"gvt_spot_vcpu_quota": 16}))
    assert c.nodepool_limits == {"cpu": "8", "nvidia.com/gpu": "2"}
    assert c.shared_nodepool_limits == {"cpu": "4", "nvidia.com/gpu": "1"}
