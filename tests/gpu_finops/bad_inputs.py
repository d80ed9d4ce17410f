"""The CLI's error contract (gpu_finops/facts/errors.py), driven with bad inputs: the shared parts of the tables in
tests/gpu_finops/test_bad_inputs*.py (one per subcommand group or source of cases): a case, the config files
that must be refused, the argv builders, and the check every case passes (run through conftest.py's
`bad_input` fixture)."""

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
    "backend.yaml": "state_backend: S3\n",
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
    # the input contract of the config file itself
    "duplicate.yaml": 'allowed_accounts: ["111111111111"]\nregion: us-east-1\nallowed_accounts: ["222222222222"]\n',
    "nested-duplicate.yaml": "versions:\n  kubernetes: '1.33'\n  kubernetes: '1.34'\n",
    "alias-bomb.yaml": "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcd", "bcde", strict=True))
    + "cluster_name: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
    "deep.yaml": "tenants: " + "[" * 200 + "]" * 200 + "\n",
    "long-value.yaml": f"cluster_name: {'x' * 5000}\n",
    "control-char.yaml": "cluster_name: a\x07b\n",
    "huge.yaml": "tenants:\n" + "  - {name: team-a, gpu_quota: 1}\n" * 10_000,
}
MAX_LINE = 1000  # no error line is longer: values are quoted as excerpts


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]  # {tmp}: the test's folder; {closed}: a port nothing listens on
    code: int
    says: str  # on one stderr line, after the placeholders are filled
    env: tuple[tuple[str, str], ...] = ()
    aws: bool = False  # needs the moto server (and its credentials)
    alone: bool = False  # the error is all of stderr: one line, nothing before it (no library warnings)


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


LEDGER = ("ledger", "month", "--month", "2026-11")
AWS_UNREACHABLE = (  # an offline check must answer before the first AWS call would say 3
    ("AWS_ENDPOINT_URL", "http://127.0.0.1:{closed}"),
    ("AWS_ACCESS_KEY_ID", "x"),
    ("AWS_SECRET_ACCESS_KEY", "y"),
    ("AWS_MAX_ATTEMPTS", "1"),
)


def prometheus(kind: str, argv: tuple[str, ...], says: str) -> Case:
    """A Prometheus URL that answers, but not as Prometheus (conftest.py's ANSWERS[kind]): exit 3, naming
    Prometheus."""
    return Case(
        (*argv, "--prometheus-url", f"{{prom}}/{kind}"), 3, f"Prometheus at {{prom}}/{kind} answered {says}"
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
    assert lines, f"expected a stderr line with {says!r}; stderr was:\n{err[:3000]}"
    assert code == case.code, err[:3000]
    assert all(len(line) <= MAX_LINE for line in lines), f"a {max(map(len, lines))}-character error line"
    if case.alone:
        assert err.strip().splitlines() == lines, f"stderr is more than the one error line:\n{err[:3000]}"
