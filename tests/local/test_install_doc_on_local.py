"""docs/install.md's read-only commands, exactly as the doc writes them, run by bash against the local target
(its Prometheus is the user's, its API server the cluster): the SM_ACTIVE check, the rule-groups check, the
first ledger and the first diagnosis. Each must exit 0 and show what the doc says it shows. The commands that
change a cluster (the chart's install, the exporter's ConfigMap) are rendered offline by
tests/docs/test_install_doc.py; the local target installs the same chart itself (local/cluster/product.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.test_install_doc import blocks

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(300)]
ROOT = Path(__file__).resolve().parents[2]


def doc_line(*words: str) -> str:
    """The one command line of the doc's blocks holding every word."""
    (line,) = [
        line.split("   #")[0].strip()
        for block in blocks()
        for line in block.splitlines()
        if all(w in line for w in words)
    ]
    return line


def bash(cluster, line: str) -> subprocess.CompletedProcess[str]:
    from local.cluster import product

    env = dict(os.environ, COLUMNS="160")
    for export in product.exports(cluster).splitlines():
        key, _, value = export.removeprefix("export ").partition("=")
        env[key] = value
    env["PATH"] = (
        f"{Path(sys.executable).parent}:{env['PATH']}"  # the venv's gpu-finops, as after `pip install`
    )
    return subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, timeout=180, env=env, cwd=ROOT
    )


def test_the_sm_active_check_shows_both_families(local_cluster):
    line = doc_line("curl", "count by (__name__)")
    out = bash(local_cluster, line)
    assert out.returncode == 0, out.stderr
    names = {r["metric"]["__name__"] for r in json.loads(out.stdout)["data"]["result"]}
    assert names == {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_GPU_UTIL"}, out.stdout  # the sim ships our CSV


def test_the_rules_check_lists_the_ledger_group(local_cluster):
    out = bash(local_cluster, doc_line("curl", "/api/v1/rules"))
    assert out.returncode == 0, out.stderr
    assert "'gpu-finops-ledger'" in out.stdout, out.stdout  # "The `gpu-finops-ledger` group must be listed."


@pytest.mark.parametrize(
    "words",
    [
        ("gpu-finops ledger ladder", "--prometheus-url"),
        ("gpu-finops ledger month", "--prometheus-url"),
        ("gpu-finops gpus", "--prometheus-url"),
        ("gpu-finops diagnose --all", "--prometheus-url"),
    ],
    ids=["ledger-ladder", "ledger-month", "gpus", "diagnose-all"],
)
def test_the_first_ledger_and_diagnosis_answer(local_cluster, words):
    line = doc_line(*words)
    out = bash(local_cluster, line)
    assert out.returncode == 0, f"{line}: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    assert out.stdout.strip(), f"{line} printed nothing"
