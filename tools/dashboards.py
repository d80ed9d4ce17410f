"""The Grafana dashboards as code (grafana-foundation-sdk), rendered into the chart's
`files/dashboards/*.json`, which the chart ships as ConfigMaps for Grafana's dashboard sidecar.

Three dashboards, each answering one question with the figures beside what they are measured against:
- the allocation ladder: installed GPUs split into the ledger's buckets, stacked (the stack is the installed
  count), with each rung of the ladder as a line over it; utilization never alone
- idle dollars: per hour by tenant (the collector's holdings split) and by node
- GPU activity: GPU_UTIL beside SM_ACTIVE per GPU, the GPU pods waiting by the cause the diagnosis names
  (the diagnosis exporter's gauge, `gpu-finops diagnose --all --port`), and by what Kubernetes records

Every query reads the fleet's spelling of the DCGM inputs (gpu_finops/facts/dcgm_inputs.py) and the names the
ledger's rules (gpu_finops/ledger/rules.py) and the collector (gpu_finops/facts/collector_metrics.py) record, so the dashboards
query what the chart's rules and collector produce. `python -m tools.dashboards --write` renders them; a test keeps the committed JSON equal to a fresh rendering, and a test on
the local target runs every panel's query against its Prometheus.

Hand-written JSON would drift from the rules' names; the SDK's builders check the panel options' types.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import common as cb
from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.builders import prometheus, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as cm
from grafana_foundation_sdk.models import dashboard as dm

from gpu_finops.facts import collector_metrics as names
from gpu_finops.facts.dcgm_inputs import PINNED, Spelling
from gpu_finops.facts.names import PROJECT
from gpu_finops.ledger import rules
from gpu_finops.ledger.conventions import BUCKETS, GPU_RESOURCE_SELECTOR, RUNGS

DASHBOARDS_DIR = Path(__file__).resolve().parents[1] / "charts" / PROJECT / "files" / "dashboards"
DATASOURCE = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")
TAGS = [PROJECT, "gpu", "finops"]


def _query(expr: str, legend: str, ref: str) -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref).datasource(DATASOURCE)


def _dashboard(uid: str, title: str, description: str) -> db.Dashboard:
    return (
        db.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(TAGS)
        .editable()
        .time("now-24h", "now")
        .refresh("1m")
        .timezone("utc")
        .with_variable(db.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
    )


def _series(title: str, description: str, unit: str, width: int = 12, height: int = 9) -> timeseries.Panel:
    return (
        timeseries.Panel()
        .title(title)
        .description(description)
        .unit(unit)
        .datasource(DATASOURCE)
        .span(width)
        .height(height)
        .legend(
            cb.VizLegendOptions()
            .show_legend(True)
            .display_mode(cm.LegendDisplayMode.TABLE)
            .placement(cm.LegendPlacement.BOTTOM)
            .calcs(["lastNotNull", "mean"])
        )
    )


def ladder_queries() -> list[tuple[str, str]]:
    """(expr, legend) of the ladder panel: the buckets (stacked), then the rungs (lines)."""
    return [(rules.BUCKET, "{{bucket}}"), (rules.RUNG, "rung: {{rung}}")]


def ladder() -> db.Dashboard:
    panel = _series(
        "Installed GPUs by bucket, with the ladder's rungs",
        "The stacked areas are the ledger's buckets ("
        + ", ".join(BUCKETS)
        + "): they partition the installed GPUs at every evaluation, so the stack's top is the installed "
        "count. The lines are the rungs ("
        + ", ".join(RUNGS)
        + "): busy by GPU_UTIL above live by power and clocks is work that only looks like work. "
        "docs/ledger.md defines each.",
        "short",
        width=24,
        height=12,
    ).stacking(cb.StackingConfig().mode(cm.StackingMode.NORMAL).group("buckets"))
    for i, (expr, legend) in enumerate(ladder_queries()):
        panel = panel.with_target(_query(expr, legend, "AB"[i]))
    # rungs are lines over the stack, not part of it
    panel = panel.override_by_regexp(
        "^rung: .*",
        [
            dm.DynamicConfigValue(id_val="custom.stacking", value={"mode": "none", "group": "rungs"}),
            dm.DynamicConfigValue(id_val="custom.fillOpacity", value=0),
            dm.DynamicConfigValue(id_val="custom.lineWidth", value=2),
        ],
    )
    panel = panel.fill_opacity(60).axis_label("GPUs (cards)")
    largest = _series(
        "Largest placeable request (GPUs on one node)",
        "The most free GPUs on any one schedulable node: a request larger than this waits, however many "
        "GPUs are free across the fleet.",
        "short",
        width=24,
        height=6,
    ).with_target(_query(rules.LARGEST_PLACEABLE, "largest placeable", "A"))
    by_resource = _series(
        "Installed, schedulable and allocated GPUs by resource (cards' worth)",
        "The installed, schedulable and allocated rungs per GPU resource: whole cards (nvidia_com_gpu), "
        "time-sliced or MPS replicas (nvidia_com_gpu_shared) and each MIG profile (nvidia_com_mig_<profile>), "
        "each in cards at the share of a card one device is worth, as the collector reads the node "
        '(gpu_finops_device_share). A rung\'s resources sum to the rung. docs/ledger.md, "MIG and MPS".',
        "short",
        width=24,
        height=8,
    ).with_target(_query(rules.RESOURCE_RUNG, "{{rung}}: {{resource}}", "A"))
    return (
        _dashboard("gpu-finops-ladder", "gpu-finops / Allocation ladder",
                   "Where every installed GPU-hour goes: the ledger's buckets and the ladder's rungs.")
        .with_panel(panel)
        .with_panel(largest)
        .with_panel(by_resource)
    )  # fmt: skip


def idle_queries() -> list[tuple[str, str, str]]:
    """(title, expr, legend) of the idle-dollars panels."""
    return [
        ("Idle dollars per hour by tenant",
         f"sum by (tenant) ({names.TENANT_IDLE_DOLLARS_PER_HOUR})", "{{tenant}}"),
        ("Idle dollars per hour by node",
         f"sum by (node) ({names.NODE_IDLE_DOLLARS_PER_HOUR})", "{{node}}"),
        ("Price of one GPU-hour by node",
         f"max by (node, capacity_type, instance_type) ({names.GPU_DOLLARS_PER_HOUR})",
         "{{node}} ({{instance_type}}, {{capacity_type}})"),
    ]  # fmt: skip


def idle() -> db.Dashboard:
    descriptions = [
        "Each node's idle dollars per hour (cost x (1 - SM_ACTIVE)) split by the tenants that held its GPUs "
        'in the last interval; tenant "" is the part nobody held. Needs the collector\'s holdings '
        "(--holdings auto, the default where it can list pods).",
        "What each GPU node cost per hour in the last interval that bought no computation, by SM_ACTIVE.",
        "What the collector priced one GPU-hour at on each node (on-demand, spot or catalog): the weight "
        "behind every idle dollar.",
    ]
    d = _dashboard("gpu-finops-idle-dollars", "gpu-finops / Idle dollars",
                   "What GPU money bought no computation, per hour, by who held the GPUs and where.")  # fmt: skip
    for (title, expr, legend), description in zip(idle_queries(), descriptions, strict=True):
        d = d.with_panel(_series(title, description, "currencyUSD").with_target(_query(expr, legend, "A")))
    return d


def activity_queries(spelling: Spelling = PINNED) -> list[tuple[str, str, str]]:
    """(title, expr, legend) of the activity panels, in the fleet's spelling."""
    host = spelling.hostname_label
    util = rules.placed(spelling.gpu_util, spelling.hostname_labels)
    util_percent = f"{util} * 100" if spelling.gpu_util_unit == "ratio" else util
    sm = rules.placed(spelling.sm_active, spelling.hostname_labels)
    held = f"{GPU_RESOURCE_SELECTOR}"
    pending = 'max by (namespace, pod) (kube_pod_status_phase{phase="Pending"}) == 1'
    gpu_pending = f"sum by (namespace, pod) (kube_pod_container_resource_limits{{{held}}}) > 0"
    waiting = f"({gpu_pending}) * on (namespace, pod) group_left () ({pending})"
    unschedulable = "max by (namespace, pod) (kube_pod_status_unschedulable) == 1"
    not_scheduled = 'max by (namespace, pod) (kube_pod_status_scheduled{condition="false"}) == 1'
    causes = " or ".join(
        [
            f'label_replace(count({waiting} and on (namespace, pod) ({unschedulable})) or vector(0), "cause", '
            '"unschedulable: no node fits (quota, taints, shape, devices)", "", "")',
            f"label_replace(count({waiting} and on (namespace, pod) ({not_scheduled}) unless on (namespace, pod) "
            f'({unschedulable})) or vector(0), "cause", "not yet scheduled: gated or queued (Kueue admission)", '
            '"", "")',
            f'label_replace(count({waiting} unless on (namespace, pod) ({not_scheduled})) or vector(0), "cause", '
            '"scheduled, not started: image, volumes, device plugin", "", "")',
        ]
    )
    by_cause = f"sum by (cause) ({names.PENDING_GPU_PODS})"
    unhealthy = f"1 - min({names.DIAGNOSIS_HEALTHY})"
    return [
        (
            "GPU_UTIL by GPU (percent)",
            f"avg by ({host}, gpu) ({util_percent})",
            "{{" + host + "}} gpu {{gpu}}",
        ),
        ("SM_ACTIVE by GPU (percent)", f"avg by ({host}, gpu) ({sm}) * 100", "{{" + host + "}} gpu {{gpu}}"),
        ("GPU pods waiting, by why", causes, "{{cause}}"),
        ("Waiting GPU pods by diagnosed cause", by_cause, "{{cause}}"),
        ("Waiting GPU pods by diagnosed cause", unhealthy, "diagnosis unhealthy (1: see its /healthz)"),
    ]


def activity(spelling: Spelling = PINNED) -> db.Dashboard:
    util, sm, wait, (cause_t, cause_q, cause_l), (_, health_q, health_l) = activity_queries(spelling)
    (util_t, util_q, util_l), (sm_t, sm_q, sm_l), (wait_t, wait_q, wait_l) = util, sm, wait
    pct = "GPU_UTIL counts time any kernel was resident: a card with one thread running reads 100 %."
    sm_doc = "SM_ACTIVE counts time warps were active, averaged over every SM: the share of the card in use."
    wait_doc = (
        "Pending pods that ask for GPUs, split by what Kubernetes records (kube-state-metrics): the scheduler "
        "found no node, the pod is not yet scheduled (scheduling gates: Kueue has not admitted it), or it is "
        "scheduled and not started. The panel above names the cause the diagnosis finds behind each."
    )
    cause_doc = (
        "Pending pods that ask for GPUs, by the first cause `gpu-finops diagnose` finds (admission, "
        "allocation, memory, placement, application; unexplained: every check made, none explains; "
        "not-checked: DCGM was not read), counted by the chart's diagnosis exporter every interval. A 0 is "
        "a reading: the pending pods were listed. No series when the diagnosis could not run; the health "
        "line is 1 then, and when it ran without DCGM (its /healthz and log say why). `gpu-finops diagnose "
        "--all` shows each pod's evidence."
    )
    causes = (
        _series(cause_t, cause_doc, "short", width=24)
        .stacking(cb.StackingConfig().mode(cm.StackingMode.NORMAL).group("causes"))
        .fill_opacity(60)
        .axis_label("pods")
        .with_target(_query(cause_q, cause_l, "A"))
        .with_target(_query(health_q, health_l, "B"))
        .override_by_name(
            health_l,
            [
                dm.DynamicConfigValue(id_val="custom.stacking", value={"mode": "none", "group": "health"}),
                dm.DynamicConfigValue(id_val="custom.fillOpacity", value=0),
            ],
        )
    )
    return (
        _dashboard("gpu-finops-activity", "gpu-finops / GPU activity",
                   "GPU_UTIL beside SM_ACTIVE, never one without the other; and the GPU pods that wait.")
        .with_panel(_series(util_t, pct, "percent").max(100).min(0).with_target(_query(util_q, util_l, "A")))
        .with_panel(_series(sm_t, sm_doc, "percent").max(100).min(0).with_target(_query(sm_q, sm_l, "A")))
        .with_panel(causes)
        .with_panel(_series(wait_t, wait_doc, "short", width=24).with_target(_query(wait_q, wait_l, "A")))
    )  # fmt: skip


def build(spelling: Spelling = PINNED) -> dict[str, db.Dashboard]:
    """File name -> dashboard."""
    return {
        "gpu-finops-ladder.json": ladder(),
        "gpu-finops-idle-dollars.json": idle(),
        "gpu-finops-activity.json": activity(spelling),
    }


def render(spelling: Spelling = PINNED) -> dict[str, str]:
    """File name -> the dashboard's JSON text (sorted keys, so a rendering is byte-stable)."""
    return {
        name: json.dumps(d.build(), cls=JSONEncoder, sort_keys=True, indent=2) + "\n"
        for name, d in build(spelling).items()
    }


def queries(text: str) -> list[tuple[str, str]]:
    """(panel title, expr) of every target in a rendered dashboard."""
    body: dict[str, Any] = json.loads(text)
    return [(p["title"], t["expr"]) for p in body.get("panels", []) for t in p.get("targets", [])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write the JSON files into {DASHBOARDS_DIR}")
    args = parser.parse_args()
    rendered = render()
    if not args.write:
        for name, text in rendered.items():
            print(f"--- {name}\n{text}", end="")
        return
    DASHBOARDS_DIR.mkdir(parents=True, exist_ok=True)
    for name, text in rendered.items():
        (DASHBOARDS_DIR / name).write_text(text)
    stale = sorted(p.name for p in DASHBOARDS_DIR.glob("*.json") if p.name not in rendered)
    for name in stale:  # a dashboard the generator no longer makes
        (DASHBOARDS_DIR / name).unlink()


if __name__ == "__main__":
    main()
