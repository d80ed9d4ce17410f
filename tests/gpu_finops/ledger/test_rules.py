"""The ledger's recording rules: the committed file is the rendered conventions, Prometheus accepts it,
and `promtool test rules` proves every rule where it holds and on its adjacent case (rules/*.test.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_finops.ledger import rules
from gpu_finops.ledger.conventions import BUCKETS, RUNGS, Conventions, interval_seconds, ksm_label

RULE_TESTS = sorted((Path(__file__).parent / "rules").glob("*.test.yaml"))


def test_committed_rules_file_is_the_rendered_conventions():
    assert rules.RULES_PATH.read_text() == rules.render(), (
        "gpu_finops/ledger/rules.yaml is stale: run `python -m gpu_finops.ledger.rules --write`"
    )


def test_every_rung_and_bucket_has_exactly_one_rule():
    recorded = rules.load()["groups"][0]["rules"]
    rungs = [r["labels"]["rung"] for r in recorded if r["record"] == rules.RUNG]
    buckets = [r["labels"]["bucket"] for r in recorded if r["record"] == rules.BUCKET]
    assert rungs == list(RUNGS)
    assert sorted(buckets) == sorted(BUCKETS)


def test_conventions_are_configurable():
    custom = Conventions(
        reason_label="example.com/why",
        reasons={"rma": "unschedulable_repair_queue", "drivers": "unschedulable_driver_rollout"},
        class_label="example.com/class",
        busy_util_percent=25,
        interval="30s",
        replicas_label="example.com/slices",
        replica_values=(2, 8),
    )
    text = rules.render(custom)
    assert '"label_example_com_why", "(rma|drivers)"' in text
    assert "label_example_com_class" in text
    assert '"(.+)")) > 25)' in text  # the busy threshold, after the node-label normalisation
    assert yaml.safe_load(text)["groups"][0]["interval"] == "30s"
    assert "gpu_finops_io" not in text
    assert 'label_example_com_slices="2"}) * 2 or' in text and 'label_example_com_slices="8"}) * 8 or' in text
    assert 'slices="4"' not in text and "nvidia_com_gpu_replicas" not in text


def test_ksm_label_and_interval_parsing():
    assert ksm_label("gpu-finops.io/workload-class") == "label_gpu_finops_io_workload_class"
    assert interval_seconds("1m") == 60
    assert interval_seconds("1h30m") == 5400
    with pytest.raises(ValueError):
        interval_seconds("1.5m")


def test_promtool_accepts_the_rules_file(promtool):
    promtool.check_rules(rules.RULES_PATH)


@pytest.mark.parametrize("test_file", RULE_TESTS, ids=lambda p: p.name)
def test_promtool_rule_unit_tests(test_file: Path, promtool):
    promtool.test_rules(test_file)


def test_the_addons_prometheus_loads_the_committed_rules_from_the_charts_configmap():
    """The stack's Prometheus mounts the gpu-finops chart's rules ConfigMap and lists its files; the chart's
    copy is this file (tests/infra/test_product_chart.py renders it)."""
    from infra.objects.monitoring import RULES_CONFIGMAP, RULES_MOUNT, prometheus_values
    from tools.chart_files import RECORDING_RULES

    values = prometheus_values()
    (mount,) = values["server"]["extraConfigmapMounts"]
    assert (mount["configMap"], mount["mountPath"]) == (RULES_CONFIGMAP, RULES_MOUNT)
    assert f"{RULES_MOUNT}/*.yaml" in values["serverFiles"]["prometheus.yml"]["rule_files"]
    assert "recording_rules.yml" not in values["serverFiles"]  # one source: the chart's ConfigMap
    assert RECORDING_RULES.read_text() == rules.RULES_PATH.read_text() == rules.render()


def test_kube_state_metrics_allowlists_the_labels_the_rules_read_on_aws_and_locally():
    from pathlib import Path

    from infra.objects.monitoring import prometheus_values
    from local.cluster.kube_state_metrics import argv

    entries = [
        "nodes=[gpu-finops.io/unschedulable-reason,nvidia.com/gpu.replicas,nvidia.com/mig.strategy,"
        "karpenter.k8s.aws/instance-gpu-count,nvidia.com/gpu.count]",
        "pods=[gpu-finops.io/workload-class]",
    ]
    ksm = prometheus_values()["kube-state-metrics"]
    assert ksm == {"enabled": True, "metricLabelsAllowlist": entries}
    local = argv(Path("/bin/kube-state-metrics"), Path("/kubeconfig"))
    assert f"--metric-labels-allowlist={','.join(entries)}" in local
    assert "--resources=nodes,pods" in local
    text = rules.RULES_PATH.read_text()
    for key in (
        "gpu-finops.io/unschedulable-reason",
        "nvidia.com/gpu.replicas",
        "nvidia.com/mig.strategy",
        "gpu-finops.io/workload-class",
    ):
        assert ksm_label(key) in text, key
