"""`gpu-finops collect --once` against the test Prometheus, read back with `gpu-finops cost report`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from gpu_finops.cli import main
from gpu_finops.clients.promql import PrometheusClient
from gpu_finops.cost.collector import align
from gpu_finops.facts import dcgm
from harness.waits import eventually
from tests.gpu_finops.cost.conftest import gpu
from tests.gpu_finops.cost.test_collector import wait_for_series


def kubectl_nodes(*names: str) -> dict:
    created = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "metadata": {
                    "name": n,
                    "creationTimestamp": created,
                    "labels": {
                        "node.kubernetes.io/instance-type": "g6e.xlarge",
                        "karpenter.sh/capacity-type": "spot",
                        "topology.kubernetes.io/zone": "us-east-1a",
                        "karpenter.sh/nodepool": "gpu-spot",
                    },
                },
                "spec": {"providerID": f"aws:///us-east-1a/i-{i:017x}"},
                "status": {"capacity": {"nvidia.com/gpu": "1", "cpu": "4"}},
            }
            for i, n in enumerate(names)
        ],
    }


def test_collect_once_then_cost_report(sim, prometheus, tmp_path, capsys):
    sim.set_gpus([gpu("cli-a", 0, sm=0.25), gpu("cli-b", 0, sm=None)])
    prom = PrometheusClient(prometheus.url)
    wait_for_series(prom, "cli-a", dcgm.SM_ACTIVE)
    wait_for_series(prom, "cli-b")
    seen = datetime.now(UTC)
    # --once collects the last complete 5 s interval: wait until one lies wholly after the first samples.
    eventually(
        lambda: datetime.now(UTC),
        lambda t: align(t, 5) - timedelta(seconds=5) >= seen,
        timeout=15,
        interval=0.5,
        what="a complete 5 s interval with samples",
    )
    (tmp_path / "nodes.json").write_text(json.dumps(kubectl_nodes("cli-a", "cli-b")))
    (tmp_path / "catalog.json").write_text(json.dumps({"g6e.xlarge": {"on-demand": 1.861, "spot": 0.7}}))
    store = str(tmp_path / "cost.sqlite")
    code = main(
        [
            "collect",
            "--once",
            "--interval",
            "5",
            "--prometheus-url",
            prometheus.url,
            "--store",
            store,
            "--nodes",
            f"file:{tmp_path / 'nodes.json'}",
            "--rates",
            f"catalog:{tmp_path / 'catalog.json'}",
        ]
    )
    assert code == 1  # cli-b has GPU_UTIL but no SM_ACTIVE: a configuration problem, reported
    png, js = tmp_path / "cost.png", tmp_path / "cost.json"
    assert main(["cost", "report", "--store", store, "--png", str(png), "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "cli-a" in out and "cli-b" in out and "missing-sm-active" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = {s["node"]: s for s in json.loads(js.read_text())}
    assert summary["cli-a"]["idle_share"] == pytest.approx(0.75)
    assert summary["cli-b"]["idle_share"] is None and summary["cli-b"]["problems"] == {"missing-sm-active": 1}
    assert summary["cli-a"]["cost"] > 0


def test_cost_report_on_empty_store_fails_with_a_message(tmp_path, capsys):
    from gpu_finops.cost.store import SqliteCostStore

    SqliteCostStore(tmp_path / "empty.sqlite").close()  # a report never creates the store it reads
    assert main(["cost", "report", "--store", str(tmp_path / "empty.sqlite")]) == 1
    assert "no cost records" in capsys.readouterr().err
