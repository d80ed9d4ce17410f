"""The input contract for files, numbers, times and paths, as a table over tests/gpu_finops/bad_inputs.py: every
case ends with the README's exit code for its class and one stderr line naming the input, no traceback;
each one ended otherwise before (a wrong code, a huge or multi-line message, a write, a hang)."""

from __future__ import annotations

from tests.gpu_finops.bad_inputs import (
    AWS_UNREACHABLE,
    COLLECT,
    LEDGER,
    Case,
    config_says,
    prometheus,
    synth,
)

REPORT = ("cost", "report", "--store", "{tmp}/empty.sqlite", "--png", "{tmp}/cost.png")

CASES: dict[str, Case] = {
    # --- item 7: the config file (exit 2, naming the file; the message a short excerpt)
    "a key given twice": Case(
        synth("duplicate.yaml"),
        2,
        config_says(
            "duplicate.yaml", "config key 'allowed_accounts': given twice, on line 1 and line 3; keep one"
        ),
    ),
    "a nested key given twice": Case(
        synth("nested-duplicate.yaml"),
        2,
        config_says("nested-duplicate.yaml", "config key 'kubernetes': given twice, on line 2 and line 3"),
    ),
    "an alias bomb": Case(
        synth("alias-bomb.yaml"),
        2,
        config_says("alias-bomb.yaml", "line 2: an alias (*a); aliases are not allowed in the config"),
    ),
    "nesting 200 deep": Case(
        synth("deep.yaml"), 2, config_says("deep.yaml", "line 1: nested deeper than 16 levels")
    ),
    "a 5000-character value": Case(
        synth("long-value.yaml"),
        2,
        config_says("long-value.yaml", "config key 'cluster_name': 'xxxxxxxxxxxxxxxxxxxxxxxxxxx...xxxx"),
    ),
    "a control character (YAML's error spans lines)": Case(
        synth("control-char.yaml"),
        2,
        config_says(
            "control-char.yaml",
            "not valid YAML: unacceptable character #x0007: special characters are not allowed   in",
        ),
        alone=True,
    ),
    "a config over the size limit": Case(
        synth("huge.yaml"),
        2,
        config_says("huge.yaml", "is 330009 bytes, more than the 262144 a config may be"),
    ),
    # --- item 8: a report never creates or changes a store
    "cost report on a missing store": Case(
        ("cost", "report", "--store", "{tmp}/none.sqlite"),
        2,
        "gpu-finops cost: the SQLite cost store {tmp}/none.sqlite does not exist: a report never creates one",
    ),
    "cost report on another program's SQLite file": Case(
        ("cost", "report", "--store", "{tmp}/foreign.sqlite"),
        2,
        "gpu-finops cost: {tmp}/foreign.sqlite is not a gpu-finops cost store (no cost_records table; found ['songs'])",
    ),
    "cost export on a file that is not SQLite": Case(
        ("cost", "export", "--store", "{tmp}/not-sqlite.sqlite", "--out", "{tmp}/out"),
        2,
        "gpu-finops cost: the SQLite cost store {tmp}/not-sqlite.sqlite cannot be read: file is not a database",
    ),
    # --- item 9: no option retries forever
    **{
        f"gpus --prometheus-retry {v}": Case(
            ("gpus", "--prometheus-retry", v),
            2,
            f"gpu-finops gpus: argument --prometheus-retry: expected a finite number >= 0 and <= 3600, got '{v}'",
        )
        for v in ("nan", "inf", "-5")
    },
    "diagnose --prometheus-retry nan": Case(
        ("diagnose", "--all", "--prometheus-retry", "nan"),
        2,
        "gpu-finops diagnose: argument --prometheus-retry: expected a finite number >= 0 and <= 3600, got 'nan'",
    ),
    # --- item 10: times are aware and compared as times
    "cost report --since yesterday": Case(
        (*REPORT, "--since", "yesterday"),
        2,
        "gpu-finops cost report: argument --since: expected an ISO 8601 time with a zone, like "
        "2026-11-01T00:00:00Z or 2026-11-01T03:00:00+05:00, got 'yesterday'",
    ),
    "cost report --until without a zone": Case(
        (*REPORT, "--until", "2026-11-01T00:00:00"),
        2,
        "gpu-finops cost report: argument --until: expected an ISO 8601 time with a zone",
    ),
    "cost export --since without a zone": Case(
        ("cost", "export", "--out", "{tmp}/out", "--since", "2026-11-01"),
        2,
        "gpu-finops cost export: argument --since: expected an ISO 8601 time with a zone",
    ),
    "cost report --period 2026-13": Case(
        (*REPORT, "--period", "2026-13"),
        2,
        "gpu-finops cost report: argument --period: expected a calendar month YYYY-MM (years 0001-9998), "
        "like 2026-11, got '2026-13'",
    ),
    # --- item 11: ordinary bad input is 2, a Prometheus that is not one is 3; never 4
    "ledger --month 9999-12": Case(
        ("ledger", "month", "--month", "9999-12"),
        2,
        "gpu-finops ledger: --month '9999-12' is not a calendar month YYYY-MM",
    ),
    "ledger --step 0s": Case(
        (*LEDGER, "--step", "0s"), 2, "gpu-finops ledger: --step '0s': must be a positive duration like 1m"
    ),
    **{
        f"{cmd[0]} --prometheus-url not-a-url": Case(
            (*cmd, "--prometheus-url", "not-a-url"),
            2,
            f"gpu-finops {'ledger month' if cmd[0] == 'ledger' else cmd[0]}: argument --prometheus-url: expected an http(s) URL like "
            "http://127.0.0.1:9090, got 'not-a-url'",
        )
        for cmd in (COLLECT, ("gpus",), LEDGER, ("diagnose", "--all"))
    },
    "reap --window 1e308": Case(
        ("reap", "--window", "1e308"),
        2,
        "gpu-finops reap: argument --window: expected a finite number > 0 and <= 527040, got '1e308'",
    ),
    "reap --min-age 1e308": Case(
        ("reap", "--min-age", "1e308"),
        2,
        "gpu-finops reap: argument --min-age: expected a finite number >= 0 and <= 527040, got '1e308'",
    ),
    "cost export --out s3://": Case(
        ("cost", "export", "--store", "{tmp}/empty.sqlite", "--out", "s3://"),
        2,
        "gpu-finops cost export: argument --out: s3://: not an s3:// URL with a bucket; write s3://BUCKET/PREFIX",
    ),
    "cost report --parquet missing": Case(
        (*REPORT, "--parquet", "{tmp}/no-export"),
        2,
        "gpu-finops cost: --parquet {tmp}/no-export does not exist: name the folder `cost export` wrote",
    ),
    "cost report --parquet a plain file": Case(
        (*REPORT, "--parquet", "{tmp}/a-file"),
        2,
        "gpu-finops cost: --parquet {tmp}/a-file is not a directory",
    ),
    "cost report --parquet with no partitions": Case(
        (*REPORT, "--parquet", "{tmp}/config-dir"),
        2,
        "gpu-finops cost: --parquet {tmp}/config-dir: no FOCUS partitions (billing_period=YYYY-MM/focus.parquet)",
    ),
    "cost report --parquet corrupt": Case(
        (*REPORT, "--parquet", "{tmp}/corrupt"),
        2,
        "gpu-finops cost: --parquet {tmp}/corrupt: not the FOCUS export `cost export` writes: ",
    ),
    "cost report --parquet of another schema": Case(
        (*REPORT, "--parquet", "{tmp}/wrong-schema"),
        2,
        "gpu-finops cost: --parquet {tmp}/wrong-schema: not the FOCUS export `cost export` writes: ",
    ),
    "gpus: Prometheus answers HTML": prometheus(
        "html", ("gpus", "--kubeconfig", "{tmp}/kubeconfig"), "/api/v1/query with something that is not JSON"
    ),
    "gpus: Prometheus answers []": prometheus(
        "list", ("gpus", "--kubeconfig", "{tmp}/kubeconfig"), "/api/v1/query with a JSON list, not an object"
    ),
    "gpus: Prometheus answers without data": prometheus(
        "nodata",
        ("gpus", "--kubeconfig", "{tmp}/kubeconfig"),
        "/api/v1/query with an answer of another shape (KeyError: 'data')",
    ),
    "gpus: Prometheus answers a non-number": prometheus(
        "nonnumber",
        ("gpus", "--kubeconfig", "{tmp}/kubeconfig"),
        "/api/v1/query with an answer of another shape (ValueError",
    ),
    "ledger: Prometheus answers HTML": prometheus("html", LEDGER, "/api/v1/query"),
    "ledger: Prometheus answers a non-number": prometheus(
        "matrixnonnumber", LEDGER, "/api/v1/query with an answer of another shape (KeyError: 'value')"
    ),
    "collect: Prometheus answers []": prometheus(
        "list", COLLECT, "/api/v1/query with a JSON list, not an object"
    ),
    "teardown destroy --plan missing, before any AWS call": Case(
        ("teardown", "destroy", "--plan", "{tmp}/no-plan.json", "--journal", "{tmp}/j.jsonl"),
        2,
        "--plan {tmp}/no-plan.json: no such file; write one with `gpu-finops teardown plan --out",
        env=AWS_UNREACHABLE,
    ),
    "teardown destroy --plan not a plan, before any AWS call": Case(
        ("teardown", "destroy", "--plan", "{tmp}/plan.json", "--journal", "{tmp}/j.jsonl"),
        2,
        "--plan {tmp}/plan.json: expected format",
        env=AWS_UNREACHABLE,
    ),
    "check-metrics-csv on a FIFO": Case(
        ("check-metrics-csv", "{tmp}/fifo"),
        2,
        "cannot check metrics CSV file {tmp}/fifo: a FIFO, not a regular file: refusing to read it",
    ),
}


def test_kubernetes_unreachable_is_one_line_without_urllib3_retry_warnings(inputs):
    """In a real process (pytest's log capture would hide the warnings): urllib3 logs one 'Retrying'
    warning per attempt before the error line, unless silenced (item 12)."""
    import subprocess
    import sys

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpu_finops.cli",
            "diagnose",
            "--all",
            "--kubeconfig",
            f"{inputs['tmp']}/kubeconfig",
            "--prometheus-retry",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 3, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("gpu-finops diagnose: Kubernetes API unreachable: ")
