"""The ledger's Prometheus recording rules, rendered from `Conventions` into one rules file.

Every ledger series is a GPU *count* per evaluation, so that over a window
`sum_over_time(series[window]) * interval / 3600` is GPU-hours. The buckets partition installed GPUs at
every evaluation (docs/ledger.md derives why); rules in one group run in order, so later rules read the
earlier ones' output at the same timestamp.

`python -m gpu_finops.ledger.rules --write` re-renders the committed `rules.yaml`; a test keeps the two equal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpu_finops.facts.collector_metrics import DEVICE_SHARE, NODE_UNREADABLE
from gpu_finops.facts.dcgm import HOSTNAME_LABELS
from gpu_finops.facts.kube_keys import LABEL_MIG_STRATEGY, ksm_sanitized
from gpu_finops.ledger.conventions import (
    BUCKETS,
    CLASS_BUCKETS,
    DRA_HELD,
    DRA_INSTALLED,
    DRA_RESOURCE,
    DRA_SCHEDULABLE,
    DRA_UNAGREED,
    GPU_RESOURCE,
    GPU_RESOURCE_SELECTOR,
    INSTALLED_NODES,
    KSM_INPUTS,
    MIG_RESOURCES,
    OFF_INSTALLED,
    SHARE,
    SHARED_GPU_RESOURCE,
    UNCLAIMED,
    UNSHARED,
    WHOLE_OR_REPLICA_SELECTOR,
    WORKING_CLASSES,
    Conventions,
    spelled_dcgm_inputs,
    spelled_dcgm_unplaced,
)
from gpu_finops.ledger.generated_file import write_or_print
from gpu_finops.ledger.measures import DENSE_PEAKS
from gpu_finops.model.holding import CARD_COMPUTE_SLICES

RULES_PATH = Path(__file__).with_name("rules.yaml")
GROUP = "gpu-finops-ledger"

# Recorded series the report reads.
RUNG = "fleet:ledger_rung_gpus:sum"  # label rung=<conventions.RUNGS>
BUCKET = "fleet:ledger_bucket_gpus:sum"  # label bucket=<conventions.BUCKETS>
LARGEST_PLACEABLE = "fleet:ledger_largest_placeable_gpus:max"
INPUTS = "fleet:ledger_input_series:count"  # label input=<series name>
INSTALLED = f'{RUNG}{{rung="installed"}}'
RESOURCE_RUNG = "fleet:ledger_resource_gpus:sum"  # labels rung=installed|schedulable|allocated, resource
MIG_STRATEGY_LABEL = "label_" + ksm_sanitized(LABEL_MIG_STRATEGY)


def _rule(record: str, expr: str, **labels: str) -> dict[str, Any]:
    rule: dict[str, Any] = {"record": record, "expr": " ".join(expr.split())}
    if labels:
        rule["labels"] = dict(labels)
    return rule


def _gated(expr: str) -> str:
    """Zero when empty, but only at evaluations where installed GPUs were observed: a gap in
    kube-state-metrics stays a gap (unobserved), never a run of zeros."""
    return f"(({expr}) or vector(0)) and on () {INSTALLED}"


def _alternation(values: list[str] | tuple[str, ...]) -> str:
    return "|".join(values)


def replicas_expr(c: Conventions) -> str:
    """Devices per physical card on each GPU node: GFD's replicas label when its value is one the
    conventions list (PromQL cannot parse a label value into a number), else 1."""
    label = c.replicas_ksm_label
    known = [f'max by (node) (kube_node_labels{{{label}="{r}"}}) * {r}' for r in c.replica_values]
    return " or ".join(
        [*known, f"max by (node) (kube_node_status_capacity{{{GPU_RESOURCE_SELECTOR}}}) * 0 + 1"]
    )


def share_expr() -> str:
    """What one device of each GPU resource on each node is worth in cards: the collector's reading of the node
    through the held-GPU model (`gpu_finops_device_share`: the only reading of MIG slices) where every collector
    exporting it agrees, else, on a node none exports, that is not under MIG and that no collector refused, a
    whole card or replica at 1/replicas."""
    exported = f"max by (node, resource) ({DEVICE_SHARE}) == on (node, resource) min by (node, resource) ({DEVICE_SHARE})"
    fallback = f"""(max by (node, resource) (kube_node_status_capacity{{{WHOLE_OR_REPLICA_SELECTOR}}}) * 0 + 1)
        / on (node) group_left () node:ledger_gpu_replicas:max
        unless on (node) kube_node_labels{{{MIG_STRATEGY_LABEL}=~".+"}}
        unless on (node) {NODE_UNREADABLE}"""
    return f"({exported}) or on (node) ({fallback} unless on (node) {DEVICE_SHARE})"


def unoffered_profiles() -> str:
    """A Pending pod's MIG profile that no node offers, in cards: its compute slices of a card's 7 (the least a
    slice of it is worth), read from the profile's name by one selector per compute size, since PromQL cannot
    turn a label into a number."""
    pending = 'kube_pod_container_resource_limits{{resource=~"nvidia_com_mig_{g}g_.+",node=""}}'
    return " or ".join(
        f"{pending.format(g=g)} * {g} / {CARD_COMPUTE_SLICES}" for g in range(1, CARD_COMPUTE_SLICES + 1)
    )


def in_cards(series: str) -> str:
    """A per-node, per-resource device count (whole cards, replicas or MIG slices) in physical cards."""
    return f"{series} * on (node, resource) group_left () {SHARE}"


def as_dra(series: str) -> str:
    """A per-node (or per-pod) DRA count in cards, labelled with the driver as its resource."""
    return f'label_replace({series}, "resource", "{DRA_RESOURCE}", "", "")'


def node_rules(c: Conventions) -> list[dict[str, Any]]:
    gpu = GPU_RESOURCE_SELECTOR
    reasons = _alternation(list(c.reasons))
    return [
        # time-slicing: the device plugin advertises replicas per card; every count below is in cards
        _rule("node:ledger_gpu_replicas:max", replicas_expr(c)),
        # MIG: a slice is worth its share of a card, as the collector reads the node (docs/finops.md)
        _rule(SHARE, share_expr()),
        # a DRA node's cards come from its driver's ResourceSlices (the collector's DRA_GPUS), under the driver's
        # name as resource, only where the node advertises no GPU resource: each card counted once
        _rule(
            "node_resource:ledger_gpus_installed:sum",
            f"""(sum by (node, resource) ({in_cards(f"kube_node_status_capacity{{{gpu}}}")})
                unless on (node) {DRA_INSTALLED})
            or on (node) {as_dra(DRA_INSTALLED)}""",
        ),
        _rule("node:ledger_gpus_installed:sum", "sum by (node) (node_resource:ledger_gpus_installed:sum)"),
        # schedulable: Ready and not cordoned; what the device plugin advertises as allocatable
        _rule(
            "node_resource:ledger_gpus_schedulable:sum",
            f"""((sum by (node, resource) ({in_cards(f"kube_node_status_allocatable{{{gpu}}}")})
                    unless on (node) {DRA_INSTALLED})
                or on (node) ({as_dra(DRA_SCHEDULABLE)} and on (node) {DRA_INSTALLED}))
            and on (node) (kube_node_status_condition{{condition="Ready",status="true"}} == 1)
            unless on (node) (kube_node_spec_unschedulable == 1)""",
        ),
        _rule(
            "node:ledger_gpus_schedulable:sum", "sum by (node) (node_resource:ledger_gpus_schedulable:sum)"
        ),
        # reason: the node label's value when it is a known one, `other` for any other value or none
        _rule(
            "node:ledger_unschedulable_reason:info",
            f"""max by (node, reason) (label_replace(label_replace(kube_node_labels,
            "reason", "$1", "{c.reason_ksm_label}", "({reasons})"), "reason", "other", "reason", ""))""",
        ),
    ]


def pod_rules(c: Conventions) -> list[dict[str, Any]]:
    classes = _alternation([k for k in CLASS_BUCKETS if k != "unclassified"])
    return [
        # the GPU request shape of every pod that exists, whatever its phase, in cards: a replica is
        # 1/replicas of its node's card; a pod on no node yet counts a shared replica at the fleet's
        # largest replicas value (the smallest share of a card it could be given)
        _rule(
            "pod:ledger_gpus_requested:sum",
            f"""sum by (namespace, pod) (
            {in_cards(f'kube_pod_container_resource_limits{{{GPU_RESOURCE_SELECTOR},node!=""}}')}
            or kube_pod_container_resource_limits{{resource="{GPU_RESOURCE}",node=""}}
            or kube_pod_container_resource_limits{{resource="{SHARED_GPU_RESOURCE}",node=""}}
                / on () group_left () max(node:ledger_gpu_replicas:max)
            or kube_pod_container_resource_limits{{resource=~"{MIG_RESOURCES}",node=""}}
                * on (resource) group_left () min by (resource) ({SHARE})
            or {unoffered_profiles()}) > 0
            or on (namespace, pod) sum by (namespace, pod) ({DRA_HELD}) > 0""",
        ),
        # the same, per GPU resource, of Running pods on a node: the allocated rung per MIG profile
        _rule(
            "resource:ledger_gpus_allocated:sum",
            f"""sum by (resource) (({in_cards(f'kube_pod_container_resource_limits{{{GPU_RESOURCE_SELECTOR},node!=""}}')}
                or {as_dra(f'{DRA_HELD} * on (namespace, pod) group_left (node) max by (namespace, pod, node) (kube_pod_info{{node!=""}})')})
            * on (namespace, pod) group_left () (max by (namespace, pod) (kube_pod_status_phase{{phase="Running"}}) == 1)
            and on (node, resource) node_resource:ledger_gpus_installed:sum)""",
        ),
        _rule(
            "pod:ledger_workload_class:info",
            f"""max by (namespace, pod, class) (label_replace(label_replace(kube_pod_labels,
            "class", "$1", "{c.class_ksm_label}", "({classes})"), "class", "unclassified", "class", ""))""",
        ),
        # allocated: GPU limits of Running pods, on the node kube_pod_info names, with the pod's class
        # (unclassified when kube_pod_labels has no series for the pod); only on a node counted installed at
        # the same evaluation, so that allocated never exceeds installed (OFF_INSTALLED counts the others)
        _rule(
            "pod:ledger_gpus_allocated:sum",
            f"""((pod:ledger_gpus_requested:sum
                * on (namespace, pod) group_left () (max by (namespace, pod) (kube_pod_status_phase{{phase="Running"}}) == 1)
                * on (namespace, pod) group_left (node) max by (namespace, pod, node) (kube_pod_info{{node!=""}}))
            * on (namespace, pod) group_left (class) (pod:ledger_workload_class:info
                or on (namespace, pod) label_replace(max by (namespace, pod) (kube_pod_info), "class", "unclassified", "", "")))
            and on (node) {INSTALLED_NODES}""",
        ),
    ]


def capacity_rules(c: Conventions) -> list[dict[str, Any]]:
    zero_installed = "node:ledger_gpus_installed:sum * 0"
    return [
        _rule("node:ledger_gpus_allocated:sum", "sum by (node) (pod:ledger_gpus_allocated:sum)"),
        # free: allocatable on a schedulable node less what Running pods hold there
        _rule(
            "node:ledger_gpus_free:sum",
            """clamp_min(node:ledger_gpus_schedulable:sum - on (node)
            (node:ledger_gpus_allocated:sum or on (node) node:ledger_gpus_schedulable:sum * 0), 0)""",
        ),
        # unschedulable: the rest of installed; all of a cordoned or NotReady node's unallocated GPUs,
        # and capacity the device plugin does not advertise as allocatable on a schedulable one
        _rule(
            "node:ledger_gpus_unschedulable:sum",
            f"""clamp_min(node:ledger_gpus_installed:sum
            - on (node) (node:ledger_gpus_allocated:sum or on (node) {zero_installed})
            - on (node) (node:ledger_gpus_free:sum or on (node) {zero_installed}), 0)""",
        ),
        # the smallest GPU request of any pod that exists now; over the shape window, the smallest seen
        _rule("fleet:ledger_gpu_request_shape:min", "min(pod:ledger_gpus_requested:sum)"),
        # stranded: all of a node's free GPUs when even the smallest shape seen in the window does not fit
        _rule(
            "node:ledger_gpus_free_stranded:sum",
            f"""node:ledger_gpus_free:sum * on (node) (node:ledger_gpus_free:sum < bool on () group_left ()
            min_over_time(fleet:ledger_gpu_request_shape:min[{c.shape_window}]))""",
        ),
    ]


def placed(metric: str, labels: tuple[str, ...] = HOSTNAME_LABELS, extra: str = "") -> str:
    """A DCGM metric's series that name their node, the node in the first of `labels` whichever spelling
    the exporter used (by default `hostname` since dcgm-exporter 4.8.3, `Hostname` before): a series
    carrying the first as it is, one carrying only a later one with it copied into the first. A series
    with none is left out (it cannot be put on a node; `DCGM_UNPLACED` counts it). The selectors are
    disjoint, and the device rules group by the first label only, so a series carrying both spellings,
    or a card reported under both during an exporter rollout, is one device, never two. `extra`: more
    matchers for every alternative (`pod!=""`: held GPUs only)."""
    first, *rest = labels
    more = f",{extra}" if extra else ""
    parts = [f'{metric}{{{first}!=""{more}}}']
    for i, label in enumerate(rest):
        empty = "".join(f'{earlier}="",' for earlier in labels[: i + 1])
        selector = f'{metric}{{{empty}{label}!=""{more}}}'
        parts.append(f'label_replace({selector}, "{first}", "$1", "{label}", "(.+)")')
    return f"({' or '.join(parts)})"


def device_rules(c: Conventions) -> list[dict[str, Any]]:
    sp = c.spelling
    by = f"{sp.hostname_label}, gpu, UUID, namespace, pod"
    power, clock = placed(sp.power, sp.hostname_labels), placed(sp.sm_clock, sp.hostname_labels)
    return [
        _rule(
            "gpu:ledger_busy_by_metric:bool",
            f"group by ({by}) ({placed(sp.gpu_util, sp.hostname_labels)} > {c.busy_threshold:g})",
        ),
        _rule(
            "gpu:ledger_live_by_physics:bool",
            f"""group by ({by}) (({power} > {c.live_power_watts:g})
            and on (UUID) ({clock} > {c.live_clock_threshold:g}))""",
        ),
        # busy by the metric, idle by physics; only where both physics readings exist, so a missing
        # power or clock series is never read as idle
        _rule(
            "gpu:ledger_busy_idle_by_physics:bool",
            f"""gpu:ledger_busy_by_metric:bool unless on (UUID) gpu:ledger_live_by_physics:bool
            and on (UUID) {power} and on (UUID) {clock}""",
        ),
        _rule(
            "pod:ledger_gpus_busy_idle_by_physics:count",
            'count by (namespace, pod) (gpu:ledger_busy_idle_by_physics:bool{pod!=""})',
        ),
        # carved out of working classes: min(allocated, stalled devices) = a - clamp_min(a - s, 0)
        _rule(
            "pod:ledger_gpus_busy_idle_attributed:sum",
            f"""pod:ledger_gpus_allocated:sum{{class=~"{_alternation(WORKING_CLASSES)}"}}
            - on (namespace, pod) group_left () clamp_min(pod:ledger_gpus_allocated:sum
            - on (namespace, pod) group_left () pod:ledger_gpus_busy_idle_by_physics:count, 0)""",
        ),
        _rule(
            "pod:ledger_gpus_live_by_physics:count",
            'count by (namespace, pod) (gpu:ledger_live_by_physics:bool{pod!=""})',
        ),
    ]


def measure_rules() -> list[dict[str, Any]]:
    peaks = [
        _rule("gpu_model:dense_bf16_peak_flops:max", f"vector({p.flops:.6g})", gpu_model=p.key)
        for p in DENSE_PEAKS
    ]
    serving = 'class=~"serving-traffic|serving-headroom"'
    return [
        *peaks,
        _rule(
            "run:training_mfu:ratio",
            """6 * max by (run) (training_model_parameters)
            * on (run) max by (run) (training_tokens_per_step)
            / on (run) max by (run) (training_step_seconds)
            / on (run) (max by (run, gpu_model) (training_world_size)
                * on (gpu_model) group_left () gpu_model:dense_bf16_peak_flops:max)""",
        ),
        _rule("run:training_mfu:median_7d", "quantile_over_time(0.5, run:training_mfu:ratio[7d])"),
        _rule(
            "run:training_goodput:ratio",
            "clamp_max(sum by (run) (rate(training_useful_seconds_total[1h])), 1)",
        ),
        _rule("run:training_goodput:median_7d", "quantile_over_time(0.5, run:training_goodput:ratio[7d])"),
        _rule(
            "model:serving_provisioned_gpus:sum",
            f"""sum by (model) (pod:ledger_gpus_allocated:sum{{{serving}}}
            * on (namespace, pod) group_left (model) group by (namespace, pod, model) (serving_tokens_total))""",
        ),
        _rule(
            "model:serving_tokens_per_provisioned_gpu_hour:ratio",
            """sum by (model) (rate(serving_tokens_total[5m])) * 3600
            / on (model) (model:serving_provisioned_gpus:sum > 0)""",
        ),
        _rule(
            "fleet:serving_warm_idle_share:ratio",
            f"""sum(clamp_min(pod:ledger_gpus_allocated:sum{{{serving}}} - on (namespace, pod) group_left ()
                (pod:ledger_gpus_live_by_physics:count or on (namespace, pod) pod:ledger_gpus_allocated:sum{{{serving}}} * 0), 0))
            / (sum(pod:ledger_gpus_allocated:sum{{{serving}}}) > 0)""",
        ),
    ]


def fleet_rules(c: Conventions) -> list[dict[str, Any]]:
    reason_of = "node:ledger_unschedulable_reason:info"
    unsched = "node:ledger_gpus_unschedulable:sum"
    rules = [
        _rule(RUNG, "sum(node:ledger_gpus_installed:sum)", rung="installed"),
        _rule(RUNG, _gated("sum(node:ledger_gpus_schedulable:sum)"), rung="schedulable"),
        _rule(RUNG, _gated("sum(pod:ledger_gpus_allocated:sum)"), rung="allocated"),
        # DCGM rungs count cards (UUIDs): a time-sliced card has one series per holder
        _rule(RUNG, _gated("count(group by (UUID) (gpu:ledger_busy_by_metric:bool))"), rung="busy_by_metric"),
        _rule(
            RUNG, _gated("count(group by (UUID) (gpu:ledger_live_by_physics:bool))"), rung="live_by_physics"
        ),
        # useful: training GPUs weighted by their MFU (GPU-equivalents of model arithmetic)
        _rule(
            RUNG,
            _gated("sum(run:training_mfu:ratio * on (run) max by (run) (training_world_size))"),
            rung="useful_training",
        ),
        _rule(LARGEST_PLACEABLE, _gated("max(node:ledger_gpus_free:sum)")),
        # per GPU resource (a MIG profile, whole cards, replicas), in cards: each rung sums over them
        _rule(RESOURCE_RUNG, "sum by (resource) (node_resource:ledger_gpus_installed:sum)", rung="installed"),
        _rule(
            RESOURCE_RUNG, "sum by (resource) (node_resource:ledger_gpus_schedulable:sum)", rung="schedulable"
        ),
        _rule(RESOURCE_RUNG, "resource:ledger_gpus_allocated:sum", rung="allocated"),
    ]
    for value, bucket in c.reasons.items():
        rules.append(
            _rule(
                BUCKET,
                _gated(f'sum({unsched} * on (node) group_left () {reason_of}{{reason="{value}"}})'),
                bucket=bucket,
            )
        )
    known = _alternation(list(c.reasons))
    rules.append(
        _rule(
            BUCKET,
            _gated(f'sum({unsched} unless on (node) {reason_of}{{reason=~"{known}"}})'),
            bucket="unschedulable_other",
        )
    )
    rules += [
        _rule(
            BUCKET,
            _gated("sum(node:ledger_gpus_free:sum) - (sum(node:ledger_gpus_free_stranded:sum) or vector(0))"),
            bucket="free_placeable",
        ),
        _rule(BUCKET, _gated("sum(node:ledger_gpus_free_stranded:sum)"), bucket="free_stranded"),
    ]
    for klass, bucket in CLASS_BUCKETS.items():
        allocated = f'sum(pod:ledger_gpus_allocated:sum{{class="{klass}"}})'
        if klass in WORKING_CLASSES:
            carved = f'(sum(pod:ledger_gpus_busy_idle_attributed:sum{{class="{klass}"}}) or vector(0))'
            allocated = f"{allocated} - {carved}"
        rules.append(_rule(BUCKET, _gated(allocated), bucket=bucket))
    rules.append(
        _rule(
            BUCKET,
            _gated("sum(pod:ledger_gpus_busy_idle_attributed:sum)"),
            bucket="busy_by_metric_idle_by_physics",
        )
    )
    assert sorted(r["labels"]["bucket"] for r in rules if r["record"] == BUCKET) == sorted(BUCKETS)
    dcgm = {**spelled_dcgm_inputs(c.spelling), **spelled_dcgm_unplaced(c.spelling)}
    for name, selector in {
        **KSM_INPUTS,
        **dcgm,
        **UNSHARED,
        **OFF_INSTALLED,
        **UNCLAIMED,
        **DRA_UNAGREED,
    }.items():
        rules.append(_rule(INPUTS, f"count({selector}) or vector(0)", input=name))
    return rules


def build(c: Conventions | None = None) -> dict[str, Any]:
    """The rules file as a dict: one group, evaluated in order every `c.interval`."""
    c = c or Conventions()
    rules = node_rules(c) + pod_rules(c) + capacity_rules(c) + device_rules(c) + measure_rules()
    rules += fleet_rules(c)
    return {"groups": [{"name": GROUP, "interval": c.interval, "rules": rules}]}


def render(c: Conventions | None = None) -> str:
    header = (
        "# Generated by `python -m gpu_finops.ledger.rules --write` from gpu_finops/ledger/conventions.py;\n"
        "# edit those, not this file. What each rule means: docs/ledger.md.\n"
    )
    return header + yaml.safe_dump(build(c), sort_keys=False, width=1000)


def load() -> dict[str, Any]:
    """The committed rules file, parsed (what the addons stack ships to the cluster's Prometheus)."""
    return yaml.safe_load(RULES_PATH.read_text())


def main() -> None:
    write_or_print(RULES_PATH, render, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
