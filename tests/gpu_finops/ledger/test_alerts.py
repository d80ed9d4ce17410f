"""The alert rules: the chart's committed file is the rendered generator, Prometheus accepts it, every alert
carries the mixin annotations and a runbook anchor that exists, and `promtool test rules`
(alerts/*.test.yaml) fires each alert where it should and keeps its near miss silent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gpu_finops.facts.dcgm_inputs import PRESETS
from gpu_finops.ledger import alerts
from gpu_finops.ledger.conventions import Conventions

ALERT_TESTS = sorted((Path(__file__).parent / "alerts").glob("*.test.yaml"))
DOCS = Path(__file__).resolve().parents[3] / "docs" / "alerts.md"
EXPECTED = {
    "GpuFinopsGpuHeldIdle",
    "GpuFinopsPodsPendingWhileGpusIdle",
    "GpuFinopsSmActiveMissing",
    "GpuFinopsBusyByMetricIdleByPhysics",
    "GpuFinopsGpuNeverRegistered",
    "GpuFinopsCollectorCyclesFailing",
    "GpuFinopsCollectorRecordsStale",
    "GpuFinopsLedgerGpuHoursUnaccounted",
    "GpuFinopsGpuDevicesUncounted",
}


def _rules() -> list[dict]:
    return alerts.load()["groups"][0]["rules"]


def test_committed_alerts_file_is_the_rendered_generator():
    assert alerts.ALERTS_PATH.read_text() == alerts.render(), (
        "charts/gpu-finops/files/alerts.yaml is stale: run `python -m gpu_finops.ledger.alerts --write`"
    )


def test_every_alert_is_in_the_mixin_style_with_a_runbook_anchor_in_the_docs():
    anchors = {m.lower() for m in re.findall(r"^## (GpuFinops\w+)", DOCS.read_text(), flags=re.M)}
    rules = _rules()
    assert {r["alert"] for r in rules} == EXPECTED
    for rule in rules:
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}, rule["alert"]
        anchor = rule["annotations"]["runbook_url"].rsplit("#", 1)[1]
        assert anchor == rule["alert"].lower() and anchor in anchors, (rule["alert"], sorted(anchors))


def test_every_alert_has_a_firing_case_and_an_explicit_silent_case():
    firing, silent = set(), set()
    for path in ALERT_TESTS:
        for test in yaml.safe_load(path.read_text())["tests"]:
            for case in test.get("alert_rule_test", []):
                (firing if case.get("exp_alerts") else silent).add(case["alertname"])
    assert firing == EXPECTED, f"alerts with no firing case: {sorted(EXPECTED - firing)}"
    # each file's header names the near misses that share the firing case's input series (the firing
    # case's exact list of alerts is what keeps them silent); these alerts also have a case of their own
    assert {"GpuFinopsGpuHeldIdle", "GpuFinopsPodsPendingWhileGpusIdle"} <= silent
    assert {"GpuFinopsLedgerGpuHoursUnaccounted", "GpuFinopsGpuDevicesUncounted"} <= silent


def test_the_alerts_read_the_fleets_spelling():
    text = alerts.render(Conventions(spelling=PRESETS["dcgm-exporter-4.10"]))
    assert "DCGM_FI_PROF_SM_UTIL_RATIO" in text and "DCGM_FI_PROF_SM_ACTIVE" not in text
    assert "DCGM_FI_DEV_GPU_UTIL_RATIO" in text
    old = alerts.render(Conventions(spelling=PRESETS["dcgm-exporter-pre-4.8.3"]))
    assert (
        'count by (Hostname) (group by (Hostname, UUID) ((DCGM_FI_DEV_GPU_UTIL{Hostname!=""} or label_replace('
        in old
    )


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_promtool_accepts_the_alerts_under_every_preset(preset: str, tmp_path: Path, promtool):
    path = tmp_path / "alerts.yaml"
    path.write_text(alerts.render(Conventions(spelling=PRESETS[preset])))
    promtool.check_rules(path)


@pytest.mark.parametrize("test_file", ALERT_TESTS, ids=lambda p: p.name)
def test_promtool_alert_unit_tests(test_file: Path, promtool):
    promtool.test_rules(test_file)
