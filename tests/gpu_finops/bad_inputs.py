"""The CLI's error contract (facts/errors.py), driven with bad inputs: the shared parts of the tables in
test_bad_inputs.py, test_bad_inputs_infra.py and test_bad_inputs_teardown.py (one per subcommand group): a
case, the config files that must be refused, the argv builders, and the check every case passes."""

from __future__ import annotations

import socket
from dataclasses import dataclass

import pytest

from gpu_finops.cli import main

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


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: --help and usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def check(case: Case, inputs: dict[str, str], capsys, monkeypatch, request: pytest.FixtureRequest) -> None:
    """The case ends with the exit code of its meaning and one stderr line saying what it says, no traceback."""
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
