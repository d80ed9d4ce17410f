"""The alert rules, in the monitoring-mixins style, rendered from the same conventions and exporter spelling
as the ledger's recording rules into the chart's `files/alerts.yaml`.

Each alert has `severity` and `summary`, `description`, `runbook_url` (an anchor of docs/alerts.md, which
says what each means and what to do). Thresholds are `AlertSettings` fields. Most alerts read the
exporter, kube-state-metrics and the collector directly; the two that judge the ledger (busy by the
metric but idle by physics, GPU-hours unaccounted) read its recorded series, so the chart ships both files.

`python -m gpu_finops.ledger.alerts --write` re-renders the committed file; a test keeps the two equal, and
`promtool test rules` (tests/gpu_finops/ledger/alerts/*.test.yaml) fires each alert and shows its near miss silent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpu_finops.facts import collector_metrics as cm
from gpu_finops.facts.names import PROJECT
from gpu_finops.ledger import rules
from gpu_finops.ledger.conventions import (
    GPU_NODE_LABELS,
    GPU_RESOURCE_SELECTOR,
    UNSHARED_NODES,
    Conventions,
    ksm_label,
)
from gpu_finops.ledger.generated_file import write_or_print

ALERTS_PATH = Path(__file__).resolve().parents[2] / "charts" / PROJECT / "files" / "alerts.yaml"
GROUP = "gpu-finops-alerts"
# where each alert's runbook lives: docs/alerts.md, one anchor per alert (the lower-cased alert name)
RUNBOOK_BASE = "https://github.com/gpu-finops/gpu-finops/blob/main/docs/alerts.md"


@dataclass(frozen=True)
class AlertSettings:
    """Thresholds and windows (Prometheus durations) of the alerts."""

    idle_sm_active: float = 0.05  # a held GPU under this SM_ACTIVE ratio is idle
    idle_for: str = "30m"
    pending_for: str = "15m"
    missing_sm_active_for: str = "10m"
    busy_idle_for: str = "15m"
    unregistered_for: str = "15m"
    collector_failures_window: str = "15m"
    collector_failures: int = 2  # more failed cycles than this in the window is failing, not a blip
    collector_failing_for: str = "5m"
    records_stale_seconds: int = 600  # three missed 60 s intervals and a scrape, with room to spare
    records_stale_for: str = "5m"
    unaccounted_gpus: float = 0.01  # installed GPUs the buckets do not account for, above rounding
    unaccounted_for: str = "15m"
    mig_unshared_for: str = "10m"  # the collector exports a new node's shares within two 60 s cycles
    runbook_base: str = RUNBOOK_BASE


def _alert(name: str, expr: str, duration: str, severity: str, summary: str, description: str, base: str):
    return {
        "alert": name,
        "expr": " ".join(expr.split()),
        "for": duration,
        "labels": {"severity": severity},
        "annotations": {
            "summary": summary,
            "description": " ".join(description.split()),
            "runbook_url": f"{base}#{name.lower()}",
        },
    }


def price_by_host(host_label: str) -> str:
    """The collector's price of one GPU-hour per node, keyed by the exporter's node label."""
    return f'label_replace(max by (node) ({cm.GPU_DOLLARS_PER_HOUR}), "{host_label}", "$1", "node", "(.+)")'


def gpu_alerts(c: Conventions, a: AlertSettings) -> list[dict[str, Any]]:
    sp, base = c.spelling, a.runbook_base
    host = sp.hostname_label
    sm = rules.placed(sp.sm_active, sp.hostname_labels)
    util = rules.placed(sp.gpu_util, sp.hostname_labels)
    # a GPU a pod holds (dcgm-exporter names the holder in `pod`) whose SMs are idle
    held_sm = rules.placed(sp.sm_active, sp.hostname_labels, extra='pod!=""')
    idle = f"({held_sm} < {a.idle_sm_active:g})"
    held_gpus = f"kube_pod_container_resource_limits{{{GPU_RESOURCE_SELECTOR}}}"
    pending = 'max by (namespace, pod) (kube_pod_status_phase{phase="Pending"}) == 1'
    gpu_node = " or ".join(f'kube_node_labels{{{ksm_label(k)}=~"[1-9][0-9]*"}}' for k in GPU_NODE_LABELS)
    return [
        _alert(
            "GpuFinopsGpuHeldIdle",
            # the value is the GPU's idle dollars per hour, split evenly among a time-sliced card's sharers
            # (dcgm-exporter copies the card's SM_ACTIVE onto each: docs/infra.md, "Time-sliced
            # attribution"); -1 where the collector has no price for its node
            f"""(1 - {idle}) * on ({host}) group_left () {price_by_host(host)}
            / on (UUID) group_left () count by (UUID) ({held_sm})
            or {idle} * 0 - 1""",
            a.idle_for,
            "warning",
            "A GPU held by a pod has done almost no work for {{ $labels.pod }}.",
            f"""GPU {{{{ $labels.gpu }}}} ({{{{ $labels.UUID }}}}) on {{{{ $labels.{host} }}}}, held by
            {{{{ $labels.namespace }}}}/{{{{ $labels.pod }}}}, has had {sp.sm_active} below
            {a.idle_sm_active:g} for {a.idle_for}:
            {{{{ if ge $value 0.0 }}}}about ${{{{ printf "%.2f" $value }}}} per hour buys no computation.
            {{{{ else }}}}the collector has no price for this node ({cm.GPU_DOLLARS_PER_HOUR}), so its idle
            dollars are unknown.{{{{ end }}}}""",
            base,
        ),
        _alert(
            "GpuFinopsPodsPendingWhileGpusIdle",
            f"""sum({held_gpus} * on (namespace, pod) group_left () ({pending})) > 0
            and on () count({idle}) > 0""",
            a.pending_for,
            "warning",
            "GPU pods wait while held GPUs sit idle.",
            f"""{{{{ $value }}}} GPU(s) are requested by Pending pods while at least one GPU held by a pod
            has {sp.sm_active} below {a.idle_sm_active:g}: the fleet is not short of GPUs, it is short of
            GPUs that are let go. `gpu-finops diagnose --all` says why each pod waits.""",
            base,
        ),
        _alert(
            "GpuFinopsSmActiveMissing",
            # one per GPU: a held card's GPU_UTIL also has per-pod series (KUBERNETES_VIRTUAL_GPUS)
            f"count by ({host}) (group by ({host}, UUID) ({util})) unless on ({host}) count by ({host}) ({sm})",
            a.missing_sm_active_for,
            "warning",
            "dcgm-exporter serves {{ $labels." + host + " }}'s GPU_UTIL but not SM_ACTIVE.",
            f"""The exporter on {{{{ $labels.{host} }}}} serves {sp.gpu_util} for {{{{ $value }}}} GPU(s)
            but no {sp.sm_active}: its metrics CSV does not collect it (dcgm-exporter's default CSV leaves
            it out), so idle dollars cannot be measured and GPU_UTIL alone calls a barely used GPU busy.
            Deploy the CSV that `gpu-finops dcgm-csv` prints to the exporter.""",
            base,
        ),
        _alert(
            "GpuFinopsBusyByMetricIdleByPhysics",
            # one alert per GPU and holder: a held card's own GPU_UTIL series (no pod labels, beside its
            # holders' under KUBERNETES_VIRTUAL_GPUS) only where no holder's series reads busy
            f"""count by ({host}, gpu, UUID, namespace, pod) (gpu:ledger_busy_idle_by_physics:bool{{pod!=""}}
            or (gpu:ledger_busy_idle_by_physics:bool unless on (UUID)
            gpu:ledger_busy_idle_by_physics:bool{{pod!=""}}))""",
            a.busy_idle_for,
            "warning",
            "A GPU reads busy by GPU_UTIL but draws the power and clocks of an idle one.",
            f"""GPU {{{{ $labels.gpu }}}} ({{{{ $labels.UUID }}}}) on {{{{ $labels.{host} }}}}
            ({{{{ $labels.namespace }}}}/{{{{ $labels.pod }}}}) has had {sp.gpu_util} above
            {c.busy_util_percent:g}% while drawing at most {c.live_power_watts:g} W or clocking at most
            {c.live_sm_clock_mhz:g} MHz, for {a.busy_idle_for}: a kernel is resident but not running
            (a stalled job, a hung collective).""",
            base,
        ),
        _alert(
            "GpuFinopsGpuNeverRegistered",
            f"""max by (node) ({gpu_node})
            unless on (node) (max by (node) (kube_node_status_allocatable{{{GPU_RESOURCE_SELECTOR}}}) > 0)""",
            a.unregistered_for,
            "warning",
            "GPU node {{ $labels.node }} advertises no nvidia.com/gpu.",
            f"""Node {{{{ $labels.node }}}} carries a GPU count label ({", ".join(GPU_NODE_LABELS)}) but has
            advertised no allocatable nvidia.com/gpu for {a.unregistered_for}: the NVIDIA device plugin is
            not running there, or the driver did not load. It is paid for and can run no GPU pod.""",
            base,
        ),
    ]


def collector_alerts(c: Conventions, a: AlertSettings) -> list[dict[str, Any]]:
    base = a.runbook_base
    installed = rules.INSTALLED
    return [
        _alert(
            "GpuFinopsCollectorCyclesFailing",
            f"increase({cm.CYCLE_FAILURES_TOTAL}[{a.collector_failures_window}]) > {a.collector_failures}",
            a.collector_failing_for,
            "warning",
            "The gpu-finops collector's cycles are failing.",
            f"""{{{{ $labels.instance }}}} has failed {{{{ printf "%.0f" $value }}}} cycle(s) in the last
            {a.collector_failures_window} (more than {a.collector_failures}), and kept failing for
            {a.collector_failing_for}: intervals go unrecorded. Its log and /healthz say why.""",
            base,
        ),
        _alert(
            "GpuFinopsCollectorRecordsStale",
            f"""time() - max by (job, instance) ({cm.LAST_RECORD_END}) > {a.records_stale_seconds}
            or absent({cm.LAST_RECORD_END})""",
            a.records_stale_for,
            "critical",
            "The gpu-finops collector has written no cost records recently.",
            f"""{{{{ if $labels.instance }}}}{{{{ $labels.instance }}}} last wrote records for an interval that
            ended {{{{ printf "%.0f" $value }}}} s ago (more than {a.records_stale_seconds}
            s).{{{{ else }}}}No collector exports {cm.LAST_RECORD_END}: it is not running, or Prometheus
            does not scrape it.{{{{ end }}}} GPU cost is not being recorded: is the collector running, are GPU
            nodes listed, and can it reach Prometheus?""",
            base,
        ),
        _alert(
            "GpuFinopsGpuDevicesUncounted",
            UNSHARED_NODES,
            a.mig_unshared_for,
            "warning",
            "A GPU node's devices are in no ledger count.",
            f"""{{{{ $labels.node }}}} advertises GPU devices of a resource whose share of a card is not known
            (no agreeing {cm.DEVICE_SHARE} for it, and it cannot be read by its replicas label): the ledger
            leaves them out of installed, schedulable and allocated. The collector's /healthz names a node the
            held-GPU model refuses; else the collector is not running or not scraped.""",
            base,
        ),
        _alert(
            "GpuFinopsLedgerGpuHoursUnaccounted",
            f"""abs({installed} - on () sum({rules.BUCKET})) > {a.unaccounted_gpus:g}""",
            a.unaccounted_for,
            "warning",
            "The ledger's buckets do not add up to the installed GPUs.",
            f"""{{{{ printf "%.2f" $value }}}} installed GPU(s) fall in no ledger bucket (or in two) for
            {a.unaccounted_for}: GPU-hours go unaccounted. A kube-state-metrics or DCGM input is missing or
            double-reported; `gpu-finops ledger ladder` names the inputs.""",
            base,
        ),
    ]


def build(c: Conventions | None = None, a: AlertSettings | None = None) -> dict[str, Any]:
    c, a = c or Conventions(), a or AlertSettings()
    return {"groups": [{"name": GROUP, "rules": gpu_alerts(c, a) + collector_alerts(c, a)}]}


def render(c: Conventions | None = None, a: AlertSettings | None = None) -> str:
    header = (
        "# Generated by `python -m gpu_finops.ledger.alerts --write` from gpu_finops/ledger/alerts.py; edit that, not this\n"
        "# file. What each alert means and what to do: docs/alerts.md.\n"
    )
    return header + yaml.safe_dump(build(c, a), sort_keys=False, width=1000)


def load() -> dict[str, Any]:
    return yaml.safe_load(ALERTS_PATH.read_text())


def main() -> None:
    write_or_print(ALERTS_PATH, render, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
