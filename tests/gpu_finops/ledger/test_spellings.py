"""The ledger's rules under each exporter spelling give the pinned figures: one fleet (n1: a card busy and
live, a card busy but idle by physics held by a stepping trainer; n2: a quiet card) written in each
spelling's names, node label and units, evaluated by `promtool test rules` against the rules rendered
for that spelling. Same rungs, same buckets, whatever the exporter calls things."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_finops.facts.dcgm_inputs import PINNED, PRESETS, RATIO, Spelling, spelling_from_dict
from gpu_finops.ledger import rules
from gpu_finops.ledger.conventions import Conventions

OTEL = spelling_from_dict(
    {
        "name": "otel-ratio",
        "gpu_util": "gpu_utilization_ratio",
        "power": "gpu_power_watts",
        "sm_clock": "gpu_sm_clock_hertz",
        "sm_clock_per_mhz": 1_000_000,
        "hostname_labels": ["k8s_node_name"],
        "gpu_util_unit": "ratio",
    }
)
VARIANTS: dict[str, Spelling] = {
    "pinned": PINNED,
    "before 4.8.3": PRESETS["dcgm-exporter-pre-4.8.3"],
    "4.9": PRESETS["dcgm-exporter-4.9"],
    "4.10": PRESETS["dcgm-exporter-4.10"],
    "otel": OTEL,
}
# (node, card, holder or None, GPU_UTIL %, watts, SM MHz)
CARDS = (
    ("n1", "0", "train", 100.0, 700.0, 1980.0),
    ("n1", "1", "train", 100.0, 30.0, 300.0),  # busy by the metric, idle by physics
    ("n2", "0", None, 5.0, 60.0, 1400.0),  # quiet: not busy by the metric, live by physics
)
EXPECTED_RUNGS = {"installed": 3, "schedulable": 3, "allocated": 2, "busy_by_metric": 2, "live_by_physics": 2}
EXPECTED_BUCKETS = {"busy_by_metric_idle_by_physics": 1, "allocated_training_stepping": 1, "free_stranded": 1}


def series(spelling: Spelling) -> list[dict[str, str]]:
    ratio = spelling.gpu_util_unit == RATIO
    out = []
    for node, card, holder, util, watts, mhz in CARDS:
        labels = f'{spelling.hostname_labels[0]}="{node}",gpu="{card}",UUID="G-{node}-{card}"'
        if holder:
            labels += f',namespace="ml",pod="{holder}"'
        for name, value in (
            (spelling.gpu_util, util / 100 if ratio else util),
            (spelling.power, watts),
            (spelling.sm_clock, mhz * spelling.sm_clock_per_mhz),
        ):
            out.append({"series": f"{name}{{{labels}}}", "values": f"{value:g}x10"})
    ksm = []
    for node, gpus in (("n1", 2), ("n2", 1)):
        for kind in ("capacity", "allocatable"):
            ksm.append(
                f'kube_node_status_{kind}{{node="{node}",resource="nvidia_com_gpu",unit="integer"}}={gpus}'
            )
        ksm.append(f'kube_node_status_condition{{node="{node}",condition="Ready",status="true"}}=1')
        ksm.append(f'kube_node_spec_unschedulable{{node="{node}"}}=0')
    pod = 'namespace="ml",pod="train",uid="u1"'
    ksm += [
        f'kube_pod_container_resource_limits{{{pod},container="c",node="n1",resource="nvidia_com_gpu",unit="integer"}}=2',
        f'kube_pod_status_phase{{{pod},phase="Running"}}=1',
        f'kube_pod_info{{{pod},node="n1"}}=1',
        f'kube_pod_labels{{{pod},label_gpu_finops_io_workload_class="training-stepping"}}=1',
    ]
    for entry in ksm:
        name, value = entry.rsplit("=", 1)
        out.append({"series": name, "values": f"{value}x10"})
    return out


def unit_test(spelling: Spelling) -> dict:
    samples = [{"labels": f'{rules.RUNG}{{rung="{r}"}}', "value": v} for r, v in EXPECTED_RUNGS.items()]
    buckets = [{"labels": f'{rules.BUCKET}{{bucket="{b}"}}', "value": v} for b, v in EXPECTED_BUCKETS.items()]
    return {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series(spelling),
                "promql_expr_test": [
                    {
                        "expr": f'{rules.RUNG}{{rung!="useful_training"}}',
                        "eval_time": "5m",
                        "exp_samples": samples,
                    },
                    {"expr": f"{rules.BUCKET} > 0", "eval_time": "5m", "exp_samples": buckets},
                ],
            }
        ],
    }


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_ledger_gives_the_pinned_figures_under_every_spelling(variant: str, tmp_path: Path, promtool):
    spelling = VARIANTS[variant]
    (tmp_path / "rules.yaml").write_text(rules.render(Conventions(spelling=spelling)))
    (tmp_path / "fleet.test.yaml").write_text(yaml.safe_dump(unit_test(spelling), sort_keys=False))
    promtool.test_rules(tmp_path / "fleet.test.yaml")


def test_the_near_miss_pinned_rules_over_a_renamed_fleet_see_no_gpu_at_all():
    """The rules must be rendered for the fleet: the pinned rules name none of the OTel series."""
    text = rules.render()
    assert "gpu_utilization_ratio" not in text and "k8s_node_name" not in text
    otel = rules.render(Conventions(spelling=OTEL))
    assert "gpu_utilization_ratio" in otel and "> 0.1)" in otel  # 10 % as a ratio
    assert "> 6e+08)" in otel  # 600 MHz in hertz
