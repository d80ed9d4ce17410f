"""The CLI's error contract (facts/errors.py), driven with bad inputs: every one ends with the exit code of
its meaning and one line on stderr naming the input and what is wrong, never a traceback; `-v` adds the
traceback, Ctrl-C exits 130 saying how to finish. Every subcommand appears in the table."""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpu_finops.cli import SUBCOMMANDS, main
from infra.metrics_csv import MAX_CSV_BYTES

CONFIGS = {  # file name -> text of a config that must be refused
    "malformed.yaml": "region: [us-east-1\n",
    "vcpu0.yaml": "gpu_node_vcpu: 0\n",
    "negative-nodes.yaml": "system_node_count: -1\n",
    "negative-gpus.yaml": "gpus_per_node: -2\n",
    "negative-quota.yaml": "tenants: [{name: team-a, gpu_quota: -1}]\n",
    "negative-retention.yaml": "log_retention_days: -30\n",
    "banana.yaml": 'api_public_cidrs: ["banana"]\n',
    "interval0.yaml": "collector_interval_seconds: 0\n",
    "region.yaml": "region: us-east-9\navailability_zones: [us-east-9a, us-east-9b]\n",
    "unknown-key.yaml": "gpu_node_vcpus: 4\n",
    "unknown-tenant-key.yaml": "tenants: [{name: team-a, gpu_quota: 1, shared_gpu_quot: 4}]\n",
    "nan.yaml": "gpu_node_vcpu: .nan\n",
    "float-version.yaml": "versions: {kubernetes: 1.30}\n",
    "string-int.yaml": 'gvt_spot_vcpu_quota: "12"\n',
    "list.yaml": "- region\n",
    "small-vpc.yaml": "vpc_cidr: 10.0.0.0/19\n",
    "host-bits.yaml": "vpc_cidr: 10.0.0.1/16\n",
    "empty-project.yaml": 'project: ""\n',
    "bad-account.yaml": "allowed_accounts: [12345]\n",
}


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]  # {tmp}: the test's folder; {closed}: a port nothing listens on
    code: int
    says: str  # on one stderr line, after the placeholders are filled
    env: tuple[tuple[str, str], ...] = ()
    aws: bool = False  # needs the moto server (and its credentials)


def synth(config: str) -> tuple[str, ...]:
    return ("infra", "synth", "--config", f"{{tmp}}/{config}", "--outdir", "{tmp}/out")


def config_says(config: str, problem: str) -> str:
    return f"gpu-finops infra: config file {{tmp}}/{config}: {problem}"


TEARDOWN = ("teardown", "verify", "--allow-account", "123456789012", "--report", "{tmp}/report.json")
COLLECT = (
    "collect",
    "--once",
    "--nodes",
    "file:{tmp}/nodes.json",
    "--rates",
    "catalog:{tmp}/rates.json",
    "--store",
    "{tmp}/cost.sqlite",
)

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
        "gpu-finops guard estimate: argument --max-hours: expected a finite number > 0, got 'nan'",
    ),
    "--max-hours inf": Case(
        ("guard", "estimate", "--rates", "catalog", "--max-hours", "inf"),
        2,
        "argument --max-hours: expected a finite number > 0, got 'inf'",
    ),
    "--max-hours negative": Case(
        ("guard", "estimate", "--rates", "catalog", "--max-hours", "-2"),
        2,
        "argument --max-hours: expected a finite number > 0, got '-2'",
    ),
    "$GPU_FINOPS_MAX_HOURS not a number": Case(
        ("guard", "estimate", "--rates", "catalog"),
        2,
        "gpu-finops guard: $GPU_FINOPS_MAX_HOURS: expected a finite number > 0, got 'three'; unset it or fix it",
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
    "--wait -1": Case(
        (*TEARDOWN, "--wait", "-1"),
        2,
        "gpu-finops teardown verify: argument --wait: expected a finite number >= 0, got '-1'",
    ),
    "--cluster ''": Case(
        (*TEARDOWN, "--cluster", ""),
        2,
        "gpu-finops teardown verify: argument --cluster: '' is not a cluster name",
    ),
    "unknown --region": Case(
        (*TEARDOWN, "--region", "us-east-9"),
        2,
        "gpu-finops teardown verify: argument --region: 'us-east-9' is not an AWS region; did you mean",
    ),
    "unwritable journal path": Case(
        ("teardown", "destroy", "--journal", "{tmp}/a-file/journal.jsonl"),
        2,
        "gpu-finops teardown destroy: argument --journal: cannot create {tmp}/a-file/journal.jsonl: "
        "{tmp}/a-file is not a directory",
    ),
    "a directory as --report": Case(
        (*TEARDOWN[:-1], "{tmp}/config-dir"),
        2,
        "gpu-finops teardown verify: argument --report: {tmp}/config-dir is a directory; name a file",
    ),
    "collect --interval 0": Case(
        (*COLLECT, "--interval", "0"),
        2,
        "gpu-finops collect: argument --interval: expected an integer >= 1, got '0'",
    ),
    "collect with a missing rates catalog": Case(
        ("collect", "--once", "--rates", "catalog:{tmp}/none.json", "--nodes", "file:{tmp}/nodes.json"),
        2,
        "gpu-finops collect: --rates catalog:{tmp}/none.json: not a readable JSON catalog",
    ),
    "collect with a bad --nodes": Case(
        ("collect", "--once", "--nodes", "kubectl"),
        2,
        "gpu-finops collect: --nodes must be 'kube' or file:PATH, got 'kubectl'",
    ),
    "reap --idle-threshold 1.5": Case(
        ("reap", "--idle-threshold", "1.5"),
        2,
        "gpu-finops reap: argument --idle-threshold: expected a finite number >= 0 and <= 1, got '1.5'",
    ),
    "reap --window nan": Case(
        ("reap", "--window", "nan"), 2, "gpu-finops reap: argument --window: expected a finite number > 0"
    ),
    "diagnose --window five": Case(
        ("diagnose", "--all", "--window", "five"),
        2,
        "gpu-finops diagnose: argument --window: window must be a positive duration like 300s, 5m or 1h",
    ),
    "diagnose without a kubeconfig": Case(
        ("diagnose", "--all", "--kubeconfig", "{tmp}/no-kubeconfig"),
        2,
        "gpu-finops diagnose: no Kubernetes configuration: ",
    ),
    "ledger --from without --to": Case(
        ("ledger", "month", "--from", "2026-01-01"),
        2,
        "gpu-finops ledger: --from needs --to (the window's end, exclusive, ISO 8601)",
    ),
    "ledger --month 2026-13": Case(
        ("ledger", "month", "--month", "2026-13"),
        2,
        "gpu-finops ledger: --month '2026-13' is not a calendar month YYYY-MM",
    ),
    "cost export without --out": Case(
        ("cost", "export"), 2, "gpu-finops cost export: the following arguments are required: --out"
    ),
    "cost report on an unopenable store": Case(
        ("cost", "report", "--store", "{tmp}/a-file/cost.sqlite"),
        2,
        "gpu-finops cost: cannot open the SQLite cost store {tmp}/a-file/cost.sqlite: {tmp}/a-file: exists and is "
        "not a directory; check the --store path",
    ),
    "check-metrics-csv on a directory": Case(
        ("check-metrics-csv", "{tmp}/config-dir"), 2, "cannot read {tmp}/config-dir: Is a directory"
    ),
    "check-metrics-csv over the size cap": Case(
        ("check-metrics-csv", "{tmp}/big.csv"),
        2,
        f"cannot check {{tmp}}/big.csv: over {MAX_CSV_BYTES:,} bytes, refused unread",
    ),
    "an unknown subcommand": Case(
        ("frobnicate",), 2, "gpu-finops: argument COMMAND: invalid choice: 'frobnicate'"
    ),
    # --- the claim or check is false (exit 1)
    "check-metrics-csv: a bad row": Case(
        ("check-metrics-csv", "{tmp}/bad-row.csv"), 1, "invalid {tmp}/bad-row.csv:1:"
    ),
    "cost report with no records": Case(
        ("cost", "report", "--store", "{tmp}/cost.sqlite", "--png", "{tmp}/cost.png"),
        1,
        "gpu-finops cost: no cost records in {tmp}/cost.sqlite for the range given: run `gpu-finops collect` first",
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
    # --- an external service unreachable or refusing us (exit 3)
    "collect --once with Prometheus down": Case(
        (*COLLECT, "--prometheus-url", "http://127.0.0.1:{closed}", "--prometheus-retry", "0"),
        3,
        "gpu-finops collect: Prometheus at http://127.0.0.1:{closed} did not answer",
    ),
    "gpus with Prometheus down": Case(
        ("gpus", "--prometheus-url", "http://127.0.0.1:{closed}", "--prometheus-retry", "0"),
        3,
        "gpu-finops gpus: Prometheus at http://127.0.0.1:{closed} unreachable",
    ),
    "diagnose with the Kubernetes API down": Case(
        ("diagnose", "--all", "--kubeconfig", "{tmp}/kubeconfig", "--prometheus-retry", "0"),
        3,
        "gpu-finops diagnose: Kubernetes API unreachable: ",
    ),
    "teardown with AWS unreachable": Case(
        TEARDOWN,
        3,
        'gpu-finops teardown: AWS unreachable: Could not connect to the endpoint URL: "http://127.0.0.1:{closed}/"',
        env=(
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:{closed}"),
            ("AWS_ACCESS_KEY_ID", "x"),
            ("AWS_SECRET_ACCESS_KEY", "y"),
            ("AWS_MAX_ATTEMPTS", "1"),
        ),
    ),
    "teardown: account not on the allowlist": Case(
        ("teardown", "verify", "--allow-account", "999999999999", "--report", "{tmp}/report.json"),
        2,
        "refused: account 123456789012 is not on the allowlist ['999999999999']",
        aws=True,
    ),
}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    for name, text in CONFIGS.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "latin1.yaml").write_bytes(b"cluster_name: caf\xe9\n")
    (tmp_path / "config-dir").mkdir()
    (tmp_path / "a-file").write_text("not a directory\n")
    (tmp_path / "big.csv").write_text("#" * (MAX_CSV_BYTES + 1))
    (tmp_path / "bad-row.csv").write_text("DCGM_FI_PROF_SM_ACTIVE, gauge\n")
    (tmp_path / "nodes.json").write_text(json.dumps({"items": []}))
    (tmp_path / "rates.json").write_text(json.dumps({"g6e.xlarge": {"on-demand": 1.86, "spot": 0.6}}))
    port = closed_port()
    (tmp_path / "kubeconfig").write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return {"tmp": str(tmp_path), "closed": str(port)}


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: --help and usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", list(CASES))
def test_a_bad_input_ends_with_its_code_and_one_line_naming_it(name, inputs, capsys, monkeypatch, request):
    case = CASES[name]
    if case.aws:
        request.getfixturevalue("aws_env")
    for key, value in case.env:
        monkeypatch.setenv(key, value.format(**inputs))
    monkeypatch.chdir(inputs["tmp"])  # reports/ and the like land in the test's folder
    code, out, err = run(capsys, [a.format(**inputs) for a in case.argv])
    says = case.says.format(**inputs)
    assert "Traceback" not in out + err, err
    lines = [line for line in err.splitlines() if says in line]
    assert lines, f"expected a stderr line with {says!r}; stderr was:\n{err}"
    assert code == case.code, err


def test_every_subcommand_is_in_the_table():
    tried = {case.argv[0] for case in CASES.values()}
    assert set(SUBCOMMANDS) <= tried, f"no bad input for: {sorted(set(SUBCOMMANDS) - tried)}"


@pytest.mark.parametrize("where", ["before the subcommand", "after its options"])
def test_verbose_adds_the_traceback(where, inputs, capsys):
    argv = [a.format(**inputs) for a in synth("vcpu0.yaml")]
    code, _, err = run(capsys, ["-v", *argv] if where == "before the subcommand" else [*argv, "-v"])
    assert code == 2
    assert "Traceback (most recent call last)" in err and "ConfigError" in err
    assert err.rstrip().splitlines()[-1].startswith("gpu-finops infra: config file ")


def test_a_403_during_teardown_verify_is_unreachable_naming_the_call(aws_env, tmp_path, capsys, monkeypatch):
    """AccessDenied from EC2, which moto cannot answer: every EC2 call is answered 403 the way botocore's
    Stubber answers (a before-call response), whichever EC2 list call teardown makes first."""
    from botocore.awsrequest import AWSResponse

    from teardown.model import Context

    def denied(**_):
        body = {
            "Error": {
                "Code": "UnauthorizedOperation",
                "Message": "You are not authorized to perform this operation.",
            }
        }
        return AWSResponse("https://ec2.us-east-1.amazonaws.com/", 403, {}, None), {
            **body,
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }

    real_client = Context.client

    def client(self, service):
        c = real_client(self, service)
        if service == "ec2" and not getattr(c, "_denied", False):
            c.meta.events.register("before-call.ec2.*", denied)
            c._denied = True
        return c

    monkeypatch.setattr(Context, "client", client)
    code, out, err = run(
        capsys,
        ["teardown", "verify", "--allow-account", "123456789012", "--report", str(tmp_path / "r.json")],
    )
    assert code == 3, err
    assert "Traceback" not in out + err
    said = r"gpu-finops teardown: AWS ec2 Describe\w+ refused: UnauthorizedOperation: You are not authorized"
    assert re.search(said, err), err
    assert "check that the credentials are current and the role allows this action" in err


def test_ctrl_c_during_teardown_exits_130_saying_how_to_finish(tmp_path, capsys, monkeypatch):
    import teardown.cli_teardown

    def interrupted(ctx):
        raise KeyboardInterrupt

    monkeypatch.setattr(teardown.cli_teardown, "check_account", interrupted)
    code, _, err = run(capsys, ["teardown", "destroy", "--journal", str(tmp_path / "j.jsonl")])
    assert code == 130
    assert (
        "gpu-finops teardown: interrupted; run `gpu-finops teardown resume` (make resume) to finish: "
        f"the journal {tmp_path / 'j.jsonl'} records what was deleted" in err
    )
    assert "Traceback" not in err


def test_ctrl_c_where_no_hook_says_run_it_again(capsys, monkeypatch):
    import infra.cli_guard

    def interrupted(*_, **__):
        raise KeyboardInterrupt

    monkeypatch.setattr(infra.cli_guard, "load_config", interrupted)
    code, _, err = run(capsys, ["guard", "estimate", "--rates", "catalog"])
    assert code == 130 and "gpu-finops guard: interrupted before it finished; run it again" in err


def test_an_unexpected_error_is_a_bug_not_a_verdict(capsys, monkeypatch):
    import infra.cli_guard

    def broken(*_, **__):
        return 1 / 0

    monkeypatch.setattr(infra.cli_guard, "load_config", broken)
    code, _, err = run(capsys, ["guard", "estimate", "--rates", "catalog"])
    assert code == 4 and "Traceback" not in err
    assert (
        "gpu-finops guard: unexpected error: ZeroDivisionError: division by zero (a bug in gpu-finops" in err
    )
