"""Act 6 for real on the local rehearsal target, then what a FinOps team does with its store: export it as
FOCUS with `gpu-finops cost export --format parquet`, and have the FOCUS project's focus-validator judge it.

Uses the local target tests/local/conftest.py brings up once. The act's collector records who held the GPUs
(the Kubernetes API and the simulated kubelets' pod-resources answer), so the export splits each interval
by tenant: the act's own tenant has rows, and no interval is `no-holdings`."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from tests.local.act_runs import run_acts

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(1800)]
ACT = "acts/test_06_every_record_has_cost_and_idle_share.py"
NAME = "test_every_record_has_gpu_util_sm_active_cost_and_idle_share"


def test_act_6_records_holdings_and_focus_validator_accepts_its_export(local_cluster, tmp_path):
    from acts.test_06_every_record_has_cost_and_idle_share import STORE_NAME
    from gpu_finops.cli import main
    from gpu_finops.cost.holdings_record import STATUS_NO_HOLDINGS
    from tests.gpu_finops.cost.focus_validator import assert_accepted

    code, acts, out = run_acts(tmp_path, ACT, env={"GPU_FINOPS_REQUIRE_ALL_ACTS": "1"})
    act = next(a for name, a in acts.items() if name.split("::")[-1] == NAME)
    assert code == 0 and act["outcome"] == "passed", out[-8000:]
    verdict = act["verdict"]
    assert verdict["holds"] and verdict["evidence"]["holdings_recorded"] >= 3, verdict
    node, tenant = verdict["evidence"]["node"], local_cluster.config.tenants[0].name

    store = tmp_path / "reports" / STORE_NAME
    assert store.exists(), f"act 6 left no cost store at {store}: {sorted((tmp_path / 'reports').iterdir())}"
    export = tmp_path / "export"
    assert main(["cost", "export", "--format", "parquet", "--out", str(export), "--store", f"sqlite:{store}",
                 "--billing-account-id", "123456789012"]) == 0  # fmt: skip
    files = sorted(export.glob("billing_period=*/focus.parquet"))
    assert files, f"no FOCUS partition under {export}"
    rows = [r for f in files for r in pq.read_table(f).to_pylist()]
    unrecorded = [
        (r["ResourceName"], r["ChargePeriodStart"]) for r in rows if r["x_Status"] == STATUS_NO_HOLDINGS
    ]
    assert not unrecorded, f"intervals exported without recorded holdings: {unrecorded}"
    mine = [r for r in rows if r["ResourceName"] == node and r["x_Tenant"] == tenant]
    assert len(mine) >= 3, [(r["ResourceName"], r["x_Tenant"], r["ChargePeriodStart"]) for r in rows]
    assert all(r["EffectiveCost"] > 0 and json.loads(r["x_Pods"]) for r in mine), mine
    for f in files:
        assert_accepted(f, tmp_path)
