"""Bad inputs a second reader found: teardown's local evidence and allowlist checked before AWS is called,
names the API would refuse (namespaces, pods, buckets, billing names), digits that are not ASCII, JSON
objects with a key twice, report values no run writes (empty or control-character names, a window that
ends before it starts, a share over 100 %), empty environment values, and contradictory or repeated
options. Each is exit 2 and one line naming the input, before a service is called (run by
test_bad_inputs.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.gpu_finops.bad_inputs import AWS_UNREACHABLE, Case
from tests.gpu_finops.cost.test_gpu_holdings import GOOD_HOLDING
from tests.gpu_finops.report import fixtures as report_fixtures
from tests.gpu_finops.test_bad_inputs_stores_and_shapes import _store
from tests.gpu_finops.test_bad_inputs_twin import FLEET

CLOSED = ("--prometheus-url", "http://127.0.0.1:{closed}")
VERIFY = ("teardown", "verify", "--allow-account", "123456789012", "--report", "{tmp}/report.json")
RECORD = {"format": "gpu-finops-teardown-run/1", "account": "123456789012", "region": "us-east-1", "cluster": "c",
          "started_at": "2026-11-30T10:00:00Z"}  # fmt: skip
REPORT = ("report", "--store", "{tmp}/none.sqlite", "--out", "{tmp}/r.html")


def write_files(inputs: dict[str, str]) -> None:
    tmp = Path(inputs["tmp"])
    (tmp / "record-list.json").write_text("[1, 2, 3]")
    (tmp / "record-key.json").write_text(json.dumps({**RECORD, "started_by": "ci"}))
    (tmp / "state").mkdir()
    (tmp / "state" / "terraform.network.tfstate").write_text(json.dumps({"version": 4, "resources": "nope"}))
    (tmp / "plan-nan.json").write_text('{"format": "gpu-finops-teardown-plan/1", "account": NaN}')
    (tmp / "plan-key.json").write_text(
        json.dumps({"format": "gpu-finops-teardown-plan/1", "approved_by": "me"})
    )
    (tmp / "twice.json").write_text('{"target": "local", "target": "aws", "acts": []}')
    passing = report_fixtures.passing_acts()[0]
    for name, act in (("empty-name.json", {**passing, "act": ""}), ("bell.json", {**passing, "act": "a\x07b"}),
                      ("rtl.json", {**passing, "act": "test_\u202eevil"})):  # fmt: skip
        body = {"target": "local", "finished": "2026-11-30T10:05:00+00:00", "acts": [act]}
        (tmp / name).write_text(json.dumps(body))
    ledger = report_fixtures.LEDGER
    (tmp / "ledger-reversed.json").write_text(
        json.dumps({**ledger, "start": ledger["end"], "end": ledger["start"]})
    )
    line = {**ledger["lines"][0], "share_percent": "900"}
    (tmp / "ledger-900.json").write_text(json.dumps({**ledger, "lines": [line]}))
    (tmp / "ledger-samples.json").write_text(
        json.dumps({**ledger, "observed_samples": 999, "expected_samples": 1})
    )
    (tmp / "diagnosis-window.json").write_text(json.dumps({**report_fixtures.DIAGNOSE, "window_s": -300}))
    unknown = {**report_fixtures.DIAGNOSE["diagnoses"][0], "first_cause": "karma"}
    (tmp / "diagnosis-cause.json").write_text(
        json.dumps({**report_fixtures.DIAGNOSE, "diagnoses": [unknown]})
    )
    _store(tmp / "good.sqlite")
    (tmp / "holdings-empty.json").write_text(json.dumps([{**GOOD_HOLDING, "tenant": ""}]))
    (tmp / "quota.yaml").write_text("gvt_spot_vcpu_quota: 999999999999999999\n")
    os.mkfifo(tmp / "kubeconfig-fifo")
    with open(tmp / "journal-huge.jsonl", "wb") as f:  # sparse: its size is what is checked
        f.truncate(65 * 1024 * 1024)


CASES: dict[str, Case] = {
    # teardown: what it can check on this machine is checked before STS (AWS is unreachable: exit 3 after)
    "teardown plan with an allowlist entry that is no account": Case(
        ("teardown", "plan", "--allow-account", "abc"),
        2,
        "refused: account allowlist: ['abc'] is not an AWS account id (12 digits; ",
        env=AWS_UNREACHABLE,
    ),
    "teardown plan with an allowlist of ids and spaces": Case(
        ("teardown", "plan"),
        2,
        "refused: account allowlist: [' 210987654321'] is not an AWS account id (12 digits; ",
        env=(*AWS_UNREACHABLE, ("GPU_FINOPS_ALLOWED_ACCOUNTS", "123456789012, 210987654321")),
    ),
    "teardown resume on a journal of 65 MB": Case(
        (
            "teardown",
            "resume",
            "--allow-account",
            "123456789012",
            "--journal",
            "{tmp}/journal-huge.jsonl",
            "--yes",
        ),
        2,
        "refused: --journal {tmp}/journal-huge.jsonl: not a regular file of at most 67,108,864 bytes",
        env=AWS_UNREACHABLE,
    ),
    "teardown plan with no allowlist": Case(
        ("teardown", "plan"),
        2,
        "refused: no account allowlist configured: refusing to touch any",
        env=(*AWS_UNREACHABLE, ("GPU_FINOPS_ALLOWED_ACCOUNTS", "")),
    ),
    "teardown plan --out under a file": Case(
        ("teardown", "plan", "--allow-account", "123456789012", "--out", "{tmp}/a-file/plan.json"),
        2,
        "gpu-finops teardown plan: argument --out: cannot create {tmp}/a-file/plan.json",
        env=AWS_UNREACHABLE,
    ),
    "teardown verify on a run record that is a list": Case(
        (*VERIFY, "--run-record", "{tmp}/record-list.json"),
        2,
        "refused: run record {tmp}/record-list.json: expected format 'gpu-finops-teardown-run/1'",
        env=AWS_UNREACHABLE,
    ),
    "teardown verify on a run record with a key it never writes": Case(
        (*VERIFY, "--run-record", "{tmp}/record-key.json"),
        2,
        "run record {tmp}/record-key.json: ['started_by'] is not a key `teardown begin` writes",
        env=AWS_UNREACHABLE,
    ),
    "teardown verify --state-dir a file": Case(
        (*VERIFY, "--state-dir", "{tmp}/a-file"),
        2,
        "refused: --state-dir {tmp}/a-file: not a directory; name infra's state directory",
        env=AWS_UNREACHABLE,
    ),
    "teardown verify on a state whose resources are text": Case(
        (*VERIFY, "--state-dir", "{tmp}/state"),
        2,
        "Terraform state {tmp}/state/terraform.network.tfstate: resources is 'nope' (str), not a list",
        env=AWS_UNREACHABLE,
    ),
    "teardown destroy on a plan whose account is NaN": Case(
        ("teardown", "destroy", "--allow-account", "123456789012", "--plan", "{tmp}/plan-nan.json", "--yes"),
        2,
        "--plan {tmp}/plan-nan.json: not a readable JSON plan (NaN is not a JSON number)",
        env=AWS_UNREACHABLE,
    ),
    "teardown resume on a plan with a key it never writes": Case(
        ("teardown", "resume", "--allow-account", "123456789012", "--plan", "{tmp}/plan-key.json", "--yes"),
        2,
        "--plan {tmp}/plan-key.json: ['approved_by'] is not a key `teardown plan --out` writes",
        env=AWS_UNREACHABLE,
    ),
    # names the API would refuse, digits that are not ASCII
    "diagnose -n Bad_NS": Case(
        ("diagnose", "--all", "-n", "Bad_NS"),
        2,
        "gpu-finops diagnose: argument -n/--namespace: 'Bad_NS' is not a Kubernetes namespace",
    ),
    "diagnose -n empty": Case(
        ("diagnose", "--all", "-n", ""),
        2,
        "gpu-finops diagnose: argument -n/--namespace: '' is not a Kubernetes",
    ),
    "diagnose a pod named 'My Pod!'": Case(
        ("diagnose", "My Pod!"),
        2,
        "gpu-finops diagnose: argument pod: 'My Pod!' is not a Kubernetes object name",
    ),
    "diagnose --window of Arabic-Indic digits": Case(
        ("diagnose", "--all", "--window", "\u0665m"),
        2,
        "gpu-finops diagnose: argument --window: window must be a positive duration like 300s, 5m or 1h",
    ),
    "ledger ladder --window of Arabic-Indic digits": Case(
        ("ledger", "ladder", "--window", "\u0662d", *CLOSED),
        2,
        "gpu-finops ledger: --window not a whole-second Prometheus duration: '\u0662d'",
    ),
    "gpus with $KUBECONFIG a FIFO": Case(
        ("gpus", *CLOSED),
        2,
        "gpu-finops gpus: $KUBECONFIG {tmp}/kubeconfig-fifo: not a regular file (a directory, FIFO or device)",
        env=(("KUBECONFIG", "{tmp}/kubeconfig-fifo"),),
    ),
    "reap on a store path that does not exist": Case(
        ("reap", "--nodes", "file:{tmp}/nodes.json", "--store", "sqlite:{tmp}/typo.sqlite"),
        2,
        "the SQLite cost store {tmp}/typo.sqlite does not exist",
    ),
    "cost export --out S3:// in capitals": Case(
        ("cost", "export", "--store", "{tmp}/empty.sqlite", "--out", "S3://bucket/x"),
        2,
        "gpu-finops cost export: argument --out: 'S3://bucket/x': write the scheme as s3:// (lower case)",
    ),
    "cost export to a bucket name S3 refuses": Case(
        ("cost", "export", "--store", "{tmp}/empty.sqlite", "--out", "s3://Bad_Bucket!/x"),
        2,
        "'Bad_Bucket!' is not an S3 bucket name (3-63 of a-z, 0-9, '.' and '-'",
    ),
    "cost export --billing-account-id empty": Case(
        ("cost", "export", "--store", "{tmp}/empty.sqlite", "--out", "{tmp}/x", "--billing-account-id", ""),
        2,
        "gpu-finops cost export: argument --billing-account-id: must not be empty",
    ),
    "cost export --billing-account-name of escapes": Case(
        (
            "cost",
            "export",
            "--store",
            "{tmp}/empty.sqlite",
            "--out",
            "{tmp}/x",
            "--billing-account-name",
            "\x1b[2J\x07",
        ),
        2,
        "argument --billing-account-name: '\\\\x1b[2J\\\\x07': expected at most 256 characters without control",
    ),
    "cost export --holdings with an empty tenant": Case(
        (
            "cost",
            "export",
            "--store",
            "{tmp}/good.sqlite",
            "--out",
            "{tmp}/x",
            "--holdings",
            "file:{tmp}/holdings-empty.json",
        ),
        2,
        "holdings file {tmp}/holdings-empty.json: [1].tenant: expected a name (not empty), found ''",
    ),
    # report values no run writes
    "report on an object with a key twice": Case(
        (*REPORT, "--acts", "{tmp}/twice.json"),
        2,
        "acts report file {tmp}/twice.json: key 'target' is given twice in one object; keep one",
    ),
    "report on an act with an empty name": Case(
        (*REPORT, "--acts", "{tmp}/empty-name.json"),
        2,
        "acts[1].act: expected a name (not empty), found ''",
    ),
    "report on an act named with a bell": Case(
        (*REPORT, "--acts", "{tmp}/bell.json"),
        2,
        "acts[1].act: expected a name without control or bidirectional formatting characters, found 'a\\x07b'",
    ),
    "report on an act named with a right-to-left override": Case(
        (*REPORT, "--acts", "{tmp}/rtl.json"),
        2,
        "acts[1].act: expected a name without control or bidirectional formatting characters",
    ),
    "report on a ledger that ends before it starts": Case(
        (*REPORT, "--ledger", "{tmp}/ledger-reversed.json"),
        2,
        "ledger month file {tmp}/ledger-reversed.json: <root>: expected start 2026-12-01T00:00:00+00:00 before end",
    ),
    "report on a ledger share of 900 %": Case(
        (*REPORT, "--ledger", "{tmp}/ledger-900.json"),
        2,
        "lines[1].share_percent: expected a share from 0 to 100, found '900'",
    ),
    "report on a ledger observing more samples than expected": Case(
        (*REPORT, "--ledger", "{tmp}/ledger-samples.json"),
        2,
        "<root>: expected observed_samples 999 at most expected_samples 1",
    ),
    "report on a diagnosis window of -300 s": Case(
        (*REPORT, "--diagnose", "{tmp}/diagnosis-window.json"),
        2,
        "window_s: expected a value > 0, found -300",
    ),
    "report on a diagnosis of an unknown cause": Case(
        (*REPORT, "--diagnose", "{tmp}/diagnosis-cause.json"),
        2,
        "diagnoses[1].first_cause: expected one of 'admission', 'allocation', 'memory', 'placement' or "
        "'application', found 'karma'",
    ),
    # environment values and options
    "collect with AWS_REGION mars-1": Case(
        ("collect", "--once", "--nodes", "file:{tmp}/nodes.json"),
        2,
        "gpu-finops collect: argument --region: 'mars-1' is not an AWS region",
        env=(("AWS_REGION", "mars-1"),),
    ),
    "collect --pod-resources-url file:": Case(
        (
            "collect",
            "--once",
            "--nodes",
            "file:{tmp}/nodes.json",
            "--pod-resources-url",
            "file:///etc/passwd",
        ),
        2,
        "gpu-finops collect: argument --pod-resources-url: expected an http(s) URL",
    ),
    "guard estimate with $GPU_FINOPS_BUDGET_USD empty": Case(
        ("guard", "estimate", "--rates", "catalog:{tmp}/rates.json"),
        2,
        "$GPU_FINOPS_BUDGET_USD is set but empty; unset it or give a number",
        env=(("GPU_FINOPS_BUDGET_USD", ""),),
    ),
    "guard estimate with a teardown reserve past the run": Case(
        ("guard", "estimate", "--max-hours", "1", "--teardown-reserve-minutes", "90"),
        2,
        "--teardown-reserve-minutes 90 leaves nothing of --max-hours 1 for up and the acts",
    ),
    "guard estimate --deadline-file under a file": Case(
        ("guard", "estimate", "--json", "{tmp}/g.json", "--deadline-file", "{tmp}/a-file/d.json"),
        2,
        "gpu-finops guard estimate: argument --deadline-file: cannot create {tmp}/a-file/d.json",
    ),
    "infra synth on a quota of 10^18 vCPUs": Case(
        ("infra", "synth", "--config", "{tmp}/quota.yaml", "--outdir", "{tmp}/out"),
        2,
        "config key 'gvt_spot_vcpu_quota': must be <= 1000000, found 999999999999999999",
    ),
    "twin compare with a policy twice": Case(
        (
            "twin",
            "compare",
            "--fleet",
            FLEET,
            "--trace",
            "{tmp}/none.jsonl",
            "--policy",
            "strict",
            "--policy",
            "strict",
            "--out",
            "{tmp}/c.json",
            "--chart",
            "{tmp}/c.png",
        ),
        2,
        "gpu-finops twin: --policy: strict given twice; compare each policy once",
    ),
    "local validate-charts --no-synth on a missing folder": Case(
        ("local", "validate-charts", "--no-synth", "--outdir", "{tmp}/missing"),
        2,
        "gpu-finops local: --outdir {tmp}/missing: no synthesized stacks there (not a directory)",
    ),
}
