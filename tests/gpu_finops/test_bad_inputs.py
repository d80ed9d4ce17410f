"""The CLI's error contract (gpu_finops/facts/errors.py), driven with bad inputs: every one ends with the exit code of
its meaning and one line on stderr naming the input and what is wrong, never a traceback; `-v` adds the
traceback, Ctrl-C exits 130 saying how to finish. Every subcommand appears in the table.

The tables are split by subject, over tests/gpu_finops/bad_inputs.py (the cases' shape and how one is run):
here the product's subcommands (collect, gpus, reap, diagnose, ledger, cost) and an unknown one;
test_bad_inputs_infra.py the deploy side (infra, guard, local, check-metrics-csv); test_bad_inputs_teardown.py
teardown; test_bad_inputs_twin.py the twin's files and options; test_bad_inputs_safety.py and
test_bad_inputs_special_files_and_times.py files, numbers, times and paths. One runner here runs every
table's cases, and the meta-test reads every table."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_finops.cli import SUBCOMMANDS
from tests.gpu_finops import (
    test_bad_inputs_infra,
    test_bad_inputs_names_and_evidence,
    test_bad_inputs_safety,
    test_bad_inputs_special_files_and_times,
    test_bad_inputs_stores_and_shapes,
    test_bad_inputs_teardown,
    test_bad_inputs_twin,
    test_bad_inputs_windows_and_outputs,
)
from tests.gpu_finops.bad_inputs import COLLECT, Case

CASES: dict[str, Case] = {
    # --- arguments (exit 2): the parser names the option and the value
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
    "collect --exporter-spelling nope": Case(
        (*COLLECT, "--exporter-spelling", "nope"),
        2,
        "gpu-finops collect: argument --exporter-spelling: exporter spelling 'nope': neither a preset "
        "(dcgm-exporter-4.8, dcgm-exporter-pre-4.8.3, dcgm-exporter-4.9, dcgm-exporter-4.10) nor a readable YAML file",
    ),
    "reap --apply with no NodePool named or found": Case(
        ("reap", "--apply", "--nodes", "file:{tmp}/nodes.json", "--store", "{tmp}/empty.sqlite"),
        2,
        "gpu-finops reap: --apply needs --nodepool NAME: the GPU nodes are in 0 NodePools (none: no GPU node "
        "carries karpenter.sh/nodepool)",
    ),
    "dcgm-csv with an argument": Case(
        ("dcgm-csv", "extra"), 2, "gpu-finops dcgm-csv: unrecognized arguments: extra"
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
        "gpu-finops cost: the SQLite cost store {tmp}/a-file/cost.sqlite does not exist: a report never creates "
        "one; check the --store path",
    ),
    "report on an acts file that is not JSON": Case(
        ("report", "--acts", "{tmp}/bad-row.csv", "--out", "{tmp}/index.html"),
        2,
        "gpu-finops report: acts report file {tmp}/bad-row.csv: not JSON (Expecting value at line 1 column 1)",
    ),
    "an unknown subcommand": Case(
        ("frobnicate",), 2, "gpu-finops: argument COMMAND: invalid choice: 'frobnicate'"
    ),
    # --- the claim or check is false (exit 1)
    "cost report with no records": Case(
        ("cost", "report", "--store", "{tmp}/empty.sqlite", "--png", "{tmp}/cost.png"),
        1,
        "gpu-finops cost: no cost records in {tmp}/empty.sqlite for the range given: run `gpu-finops collect` first",
    ),
    "report with nothing recorded": Case(
        ("report", "--acts", "{tmp}/none.json", "--store", "{tmp}/none.sqlite", "--out", "{tmp}/index.html"),
        1,
        "gpu-finops report: nothing to report: none of {tmp}/none.json, {tmp}/none.sqlite, ",
    ),
    # --- an external service unreachable or refusing us (exit 3)
    "collect --once with Prometheus down": Case(
        (*COLLECT, "--prometheus-url", "http://127.0.0.1:{closed}", "--prometheus-retry", "0"),
        3,
        "gpu-finops collect: Prometheus at http://127.0.0.1:{closed} did not answer",
    ),
    "gpus with Prometheus down": Case(
        (
            "gpus",
            "--kubeconfig",
            "{tmp}/kubeconfig",
            "--prometheus-url",
            "http://127.0.0.1:{closed}",
            "--prometheus-retry",
            "0",
        ),
        3,
        "gpu-finops gpus: Prometheus at http://127.0.0.1:{closed} unreachable",
    ),
    "diagnose with the Kubernetes API down": Case(
        ("diagnose", "--all", "--kubeconfig", "{tmp}/kubeconfig", "--prometheus-retry", "0"),
        3,
        "gpu-finops diagnose: Kubernetes API unreachable: ",
    ),
}


TABLES: dict[str, dict[str, Case]] = {
    "product": CASES,
    "infra": test_bad_inputs_infra.CASES,
    "teardown": test_bad_inputs_teardown.CASES,
    "twin": test_bad_inputs_twin.CASES,
    "safety": test_bad_inputs_safety.CASES,
    "special-files-and-times": test_bad_inputs_special_files_and_times.CASES,
    "windows-and-outputs": test_bad_inputs_windows_and_outputs.CASES,
    "stores-and-shapes": test_bad_inputs_stores_and_shapes.CASES,
    "names-and-evidence": test_bad_inputs_names_and_evidence.CASES,
}
# What a table's cases need in their folder before they run: files to write, fixtures to make.
WRITE = {
    "twin": test_bad_inputs_twin.write_files,
    "stores-and-shapes": test_bad_inputs_stores_and_shapes.write_files,
    "names-and-evidence": test_bad_inputs_names_and_evidence.write_files,
    "special-files-and-times": lambda inputs: Path(inputs["tmp"], "nan.json").write_text(
        '{"g6e.xlarge": {"spot": NaN}}'
    ),
}
FIXTURES = {
    "safety": ("fifo",),
    "special-files-and-times": ("fifo",),
    "twin": ("fifo",),
    "windows-and-outputs": ("fifo",),
    "stores-and-shapes": ("fifo",),
}


@pytest.mark.parametrize("table, name", [(t, n) for t, cases in TABLES.items() for n in cases])
def test_a_bad_input_ends_with_its_code_and_one_line_naming_it(table, name, inputs, bad_input, request):
    for fixture in FIXTURES.get(table, ()):
        request.getfixturevalue(fixture)
    if table in WRITE:
        WRITE[table](inputs)
    bad_input(TABLES[table][name])


def test_every_subcommand_is_in_the_table():
    tried = {case.argv[0] for table in TABLES.values() for case in table.values()}
    assert set(SUBCOMMANDS) <= tried, f"no bad input for: {sorted(set(SUBCOMMANDS) - tried)}"
