"""The CLI's error contract, driven with bad inputs (tests/gpu_finops/bad_inputs.py): the deploy side's
subcommands (infra, guard, local, check-metrics-csv). Every config rule names the file and the key; `-v`
adds the traceback; Ctrl-C where no hook says more exits 130; an unexpected error is a bug, exit 4."""

from __future__ import annotations

import pytest

from gpu_finops.dcgm.metrics_csv import MAX_CSV_BYTES
from tests.gpu_finops.bad_inputs import Case, config_says, run, synth

CASES: dict[str, Case] = {
    # --- configuration (exit 2): every rule names the file and the key
    "malformed YAML": Case(
        synth("malformed.yaml"),
        2,
        config_says("malformed.yaml", "not valid YAML: line 2 column 1: expected ',' or ']'"),
    ),
    "non-UTF-8 YAML": Case(
        synth("latin1.yaml"), 2, config_says("latin1.yaml", r"not UTF-8 text (byte b'\xe9' at offset 17)")
    ),
    "a directory as --config": Case(
        synth("config-dir"), 2, config_says("config-dir", "is a directory; name a YAML file")
    ),
    "a missing --config": Case(
        synth("nope.yaml"),
        2,
        "gpu-finops infra: {tmp}/nope.yaml (named by the config argument) does not exist",
    ),
    "gpu_node_vcpu: 0": Case(
        synth("vcpu0.yaml"), 2, config_says("vcpu0.yaml", "config key 'gpu_node_vcpu': must be >= 1, found 0")
    ),
    "negative node count": Case(
        synth("negative-nodes.yaml"),
        2,
        config_says("negative-nodes.yaml", "config key 'system_node_count': must be >= 1, found -1"),
    ),
    "negative GPUs per node": Case(
        synth("negative-gpus.yaml"),
        2,
        config_says("negative-gpus.yaml", "config key 'gpus_per_node': must be >= 1, found -2"),
    ),
    "negative tenant quota": Case(
        synth("negative-quota.yaml"),
        2,
        config_says(
            "negative-quota.yaml",
            "config key 'tenants.gpu_quota': must be >= 1, found -1 (item 1 of tenants)",
        ),
    ),
    "negative retention days": Case(
        synth("negative-retention.yaml"),
        2,
        config_says(
            "negative-retention.yaml",
            "config key 'log_retention_days': -30 is not a retention period CloudWatch Logs accepts: one of [1, 3,",
        ),
    ),
    "state_backend: S3": Case(
        synth("backend.yaml"),
        2,
        config_says(
            "backend.yaml", "config key 'state_backend': expected one of 'local' or 's3', found 'S3'"
        ),
    ),
    'api_public_cidrs: ["banana"]': Case(
        synth("banana.yaml"),
        2,
        config_says(
            "banana.yaml",
            "config key 'api_public_cidrs': 'banana' is not a CIDR block like 10.0.0.0/16 "
            "(item 1 of api_public_cidrs)",
        ),
    ),
    "collector_interval_seconds: 0": Case(
        synth("interval0.yaml"),
        2,
        config_says("interval0.yaml", "config key 'collector_interval_seconds': must be >= 1, found 0"),
    ),
    "unknown region": Case(
        synth("region.yaml"),
        2,
        config_says("region.yaml", "config key 'region': 'us-east-9' is not an AWS region botocore"),
    ),
    "unknown key": Case(
        synth("unknown-key.yaml"),
        2,
        config_says(
            "unknown-key.yaml", "config key 'gpu_node_vcpus': not a known key; did you mean 'gpu_node_vcpu'?"
        ),
    ),
    "unknown tenant key": Case(
        synth("unknown-tenant-key.yaml"),
        2,
        config_says(
            "unknown-tenant-key.yaml",
            "config key 'tenants.shared_gpu_quot': not a known key (item 1 of tenants); "
            "did you mean 'shared_gpu_quota'?",
        ),
    ),
    "nan as an integer": Case(
        synth("nan.yaml"),
        2,
        config_says("nan.yaml", "config key 'gpu_node_vcpu': expected an integer, found float nan"),
    ),
    "unquoted version": Case(
        synth("float-version.yaml"),
        2,
        config_says(
            "float-version.yaml",
            "config key 'versions.kubernetes': expected a string (quote it in YAML), found float 1.3",
        ),
    ),
    "quoted integer": Case(
        synth("string-int.yaml"),
        2,
        config_says(
            "string-int.yaml", "config key 'gvt_spot_vcpu_quota': expected an integer, found str '12'"
        ),
    ),
    "a list, not a mapping": Case(
        synth("list.yaml"),
        2,
        config_says("list.yaml", "config key '<root>': expected a mapping of keys to values, found list"),
    ),
    "a VPC too small for its subnets": Case(
        synth("small-vpc.yaml"),
        2,
        config_says("small-vpc.yaml", "config key 'vpc_cidr': 10.0.0.0/19 cannot hold 4 /20 subnets"),
    ),
    "a CIDR with host bits": Case(
        synth("host-bits.yaml"),
        2,
        config_says(
            "host-bits.yaml", "config key 'vpc_cidr': '10.0.0.1/16' is not a CIDR block like 10.0.0.0/16: "
        ),
    ),
    "an empty project tag": Case(
        synth("empty-project.yaml"),
        2,
        config_says("empty-project.yaml", "config key 'project': expected a non-empty string, found ''"),
    ),
    "an account id that is a number": Case(
        synth("bad-account.yaml"),
        2,
        config_says(
            "bad-account.yaml",
            "config key 'allowed_accounts': expected a string (quote it in YAML), found int 12345 (item 1 of allowed_accounts)",
        ),
    ),
    "guard with a bad config": Case(
        ("guard", "estimate", "--rates", "catalog", "--config", "{tmp}/vcpu0.yaml"),
        2,
        "gpu-finops guard: config file {tmp}/vcpu0.yaml: config key 'gpu_node_vcpu': must be >= 1, found 0",
    ),
    "local validate-charts with a bad $GPU_FINOPS_CONFIG": Case(
        ("local", "validate-charts", "--outdir", "{tmp}/out"),
        2,
        "gpu-finops local: config file {tmp}/banana.yaml: config key 'api_public_cidrs': 'banana'",
        env=(("GPU_FINOPS_CONFIG", "{tmp}/banana.yaml"),),
    ),
    # --- arguments (exit 2): the parser names the option and the value
    "--max-hours nan": Case(
        ("guard", "estimate", "--rates", "catalog", "--max-hours", "nan"),
        2,
        "gpu-finops guard estimate: argument --max-hours: expected a finite number > 0 and <= 72, got 'nan'",
    ),
    "--max-hours inf": Case(
        ("guard", "estimate", "--rates", "catalog", "--max-hours", "inf"),
        2,
        "argument --max-hours: expected a finite number > 0 and <= 72, got 'inf'",
    ),
    "--max-hours negative": Case(
        ("guard", "estimate", "--rates", "catalog", "--max-hours", "-2"),
        2,
        "argument --max-hours: expected a finite number > 0 and <= 72, got '-2'",
    ),
    "$GPU_FINOPS_MAX_HOURS not a number": Case(
        ("guard", "estimate", "--rates", "catalog"),
        2,
        "gpu-finops guard: $GPU_FINOPS_MAX_HOURS: expected a finite number > 0 and <= 72, got 'three'; unset it or fix it",
        env=(("GPU_FINOPS_MAX_HOURS", "three"),),
    ),
    "guard run with nothing to run": Case(
        ("guard", "run", "--deadline-file", "{tmp}/deadline.json", "--"),
        2,
        "gpu-finops guard: guard run: nothing to run; usage: gpu-finops guard run -- make up",
    ),
    "guard run without a deadline file": Case(
        ("guard", "run", "--deadline-file", "{tmp}/none.json", "--", "true"),
        2,
        "gpu-finops guard: no deadline file at {tmp}/none.json: run `gpu-finops guard estimate --deadline-file",
    ),
    "dcgm-csv takes no argument": Case(
        ("dcgm-csv", "extra.csv"), 2, "gpu-finops dcgm-csv: unrecognized arguments: extra.csv"
    ),
    "check-metrics-csv on a directory": Case(
        ("check-metrics-csv", "{tmp}/config-dir"),
        2,
        "cannot check metrics CSV file {tmp}/config-dir: a directory, not a regular file: refusing to read it",
    ),
    "check-metrics-csv over the size cap": Case(
        ("check-metrics-csv", "{tmp}/big.csv"),
        2,
        f"cannot check metrics CSV file {{tmp}}/big.csv: is larger than {MAX_CSV_BYTES:,} bytes, the most a metrics CSV may be",
    ),
    # --- the claim or check is false (exit 1)
    "check-metrics-csv: a bad row": Case(
        ("check-metrics-csv", "{tmp}/bad-row.csv"), 1, "invalid {tmp}/bad-row.csv:1:"
    ),
    "guard over budget": Case(
        (
            "guard",
            "estimate",
            "--rates",
            "catalog",
            "--budget-usd",
            "1",
            "--start",
            "2026-11-30T00:00:00+00:00",
        ),
        1,
        "gpu-finops guard: cost guard: refusing to start: the ceiling $18.30 is over the budget $1.00",
    ),
}


@pytest.mark.parametrize("where", ["before the subcommand", "after its options"])
def test_verbose_adds_the_traceback(where, inputs, capsys):
    argv = [a.format(**inputs) for a in synth("vcpu0.yaml")]
    code, _, err = run(capsys, ["-v", *argv] if where == "before the subcommand" else [*argv, "-v"])
    assert code == 2
    assert "Traceback (most recent call last)" in err and "ConfigError" in err
    assert err.rstrip().splitlines()[-1].startswith("gpu-finops infra: config file ")


def test_ctrl_c_where_no_hook_says_run_it_again(capsys, monkeypatch):
    import nightly.cli_guard

    def interrupted(*_, **__):
        raise KeyboardInterrupt

    monkeypatch.setattr(nightly.cli_guard, "load_config", interrupted)
    code, _, err = run(capsys, ["guard", "estimate", "--rates", "catalog"])
    assert code == 130 and "gpu-finops guard: interrupted before it finished; run it again" in err


def test_an_unexpected_error_is_a_bug_not_a_verdict(capsys, monkeypatch):
    import nightly.cli_guard

    def broken(*_, **__):
        return 1 / 0

    monkeypatch.setattr(nightly.cli_guard, "load_config", broken)
    code, _, err = run(capsys, ["guard", "estimate", "--rates", "catalog"])
    assert code == 4 and "Traceback" not in err
    assert (
        "gpu-finops guard: unexpected error: ZeroDivisionError: division by zero (a bug in gpu-finops" in err
    )
