"""The dashboards as code: the chart's committed JSON is a fresh rendering of tools/dashboards.py, every
panel's query is PromQL Prometheus accepts (promtool, offline), and each dashboard shows what its title
promises (the ladder stacked with its rungs over it; GPU_UTIL beside SM_ACTIVE). That every query returns
series is shown on the local target (tests/local/test_alerts_dashboards_on_local.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpu_finops.facts.dcgm_inputs import PRESETS
from gpu_finops.ledger import rules
from tools import dashboards

PROMTOOL = shutil.which("promtool")


def test_committed_dashboards_are_a_fresh_rendering():
    committed = {p.name: p.read_text() for p in sorted(dashboards.DASHBOARDS_DIR.glob("*.json"))}
    assert committed == dashboards.render(), (
        "charts/gpu-finops/files/dashboards/ is stale: run `python -m tools.dashboards --write`"
    )


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (`make setup` installs prometheus)")
@pytest.mark.parametrize("preset", ["dcgm-exporter-4.8", "dcgm-exporter-4.10"])
def test_every_panel_query_is_promql_prometheus_accepts(preset: str, tmp_path: Path):
    exprs = [e for text in dashboards.render(PRESETS[preset]).values() for _, e in dashboards.queries(text)]
    as_rules = [{"record": f"dashboard:query_{i}:check", "expr": e} for i, e in enumerate(exprs)]
    path = tmp_path / "queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard-queries", "rules": as_rules}]}))
    result = subprocess.run(
        [PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in result.stdout


def test_the_ladder_stacks_the_buckets_and_draws_the_rungs_over_them():
    body = json.loads(dashboards.render()["gpu-finops-ladder.json"])
    (ladder, _, by_resource) = body["panels"]
    assert [t["expr"] for t in ladder["targets"]] == [rules.BUCKET, rules.RUNG]
    assert [t["expr"] for t in by_resource["targets"]] == [rules.RESOURCE_RUNG]
    assert ladder["fieldConfig"]["defaults"]["custom"]["stacking"] == {"group": "buckets", "mode": "normal"}
    (override,) = ladder["fieldConfig"]["overrides"]
    assert override["matcher"] == {"id": "byRegexp", "options": "^rung: .*"}
    assert {"id": "custom.stacking", "value": {"group": "rungs", "mode": "none"}} in override["properties"]


def test_gpu_util_is_never_shown_without_sm_active_and_each_reads_the_fleets_spelling():
    for preset, util, sm in (("dcgm-exporter-4.8", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE"),
                             ("dcgm-exporter-4.9", "DCGM_FI_DEV_GPU_UTIL_RATIO", "DCGM_FI_PROF_SM_UTIL_RATIO")):  # fmt: skip
        body = json.loads(dashboards.render(PRESETS[preset])["gpu-finops-activity.json"])
        titles = [p["title"] for p in body["panels"]]
        assert titles[:2] == ["GPU_UTIL by GPU (percent)", "SM_ACTIVE by GPU (percent)"]
        exprs = [p["targets"][0]["expr"] for p in body["panels"]]
        assert util in exprs[0] and sm in exprs[1]
        assert (" * 100" in exprs[0]) == (preset == "dcgm-exporter-4.9")  # a ratio shown in percent


def test_every_dashboard_asks_for_its_prometheus_and_every_target_uses_it():
    for name, text in dashboards.render().items():
        body = json.loads(text)
        (variable,) = body["templating"]["list"]
        assert (variable["type"], variable["name"], variable["query"]) == (
            "datasource",
            "datasource",
            "prometheus",
        )
        for panel in body["panels"]:
            for target in panel["targets"]:
                assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, (
                    name,
                    panel["title"],
                )
