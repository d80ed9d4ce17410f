"""Evidence a failing act leaves behind in reports/<act>/: the cluster objects it touched and the tail of each
controller's log, so a red run can be read without rerunning it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpu_finops.clients.karpenter import KarpenterClient
from gpu_finops.clients.kube import Kube
from harness.observe import KUEUE, event_time
from infra.objects.device_plugin import DRA_DRIVER_NAMESPACE

LOG_TAIL = 400  # lines of each controller's log
# On AWS the controllers are pods: namespace -> label selector
CONTROLLER_PODS = {
    "kube-system": "app.kubernetes.io/name=karpenter",
    "kueue-system": "control-plane=controller-manager",
    "nvidia-device-plugin": "app.kubernetes.io/name=nvidia-device-plugin",
    # NVIDIA's DRA driver's kubelet plugin, on the DRA pool's nodes (its chart's selector label); none without one
    DRA_DRIVER_NAMESPACE: "dra-driver-nvidia-gpu-component=kubelet-plugin",
}


def _dump(path: Path, what: Any) -> None:
    path.write_text(json.dumps(what, indent=1, default=str))


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception as exc:  # evidence is best effort: say what could not be read, never hide the failure
        return {"unreadable": f"{type(exc).__name__}: {str(exc)[:500]}"}


def collect(kube: Kube, namespaces: list[str], folder: Path, local_logs: Path | None = None) -> Path:
    """Nodes, NodeClaims, Workloads, pods and events of the act's namespaces, and controller log tails."""
    folder.mkdir(parents=True, exist_ok=True)
    api = kube.api_client
    _dump(folder / "nodes.json", _safe(lambda: api.sanitize_for_serialization(kube.core.list_node().items)))
    _dump(
        folder / "nodeclaims.json",
        _safe(lambda: KarpenterClient(kube.custom).nodeclaim_objects()),
    )
    for ns in namespaces:
        _dump(
            folder / f"{ns}.workloads.json",
            _safe(lambda ns=ns: kube.custom.list_namespaced_custom_object(*KUEUE, ns, "workloads")["items"]),
        )
        _dump(
            folder / f"{ns}.pods.json",
            _safe(lambda ns=ns: api.sanitize_for_serialization(kube.core.list_namespaced_pod(ns).items)),
        )
        _dump(
            folder / f"{ns}.jobs.json",
            _safe(lambda ns=ns: api.sanitize_for_serialization(kube.batch.list_namespaced_job(ns).items)),
        )
    _dump(
        folder / "events.json",
        _safe(
            lambda: [
                {
                    "at": event_time(e),
                    "reason": e.reason,
                    "regarding": f"{o.kind}/{o.namespace or ''}/{o.name}"
                    if (o := e.involved_object)
                    else None,
                    "message": e.message,
                }
                for e in kube.core.list_event_for_all_namespaces().items
                if e.involved_object is None or e.involved_object.namespace in (None, "", *namespaces)
            ]
        ),
    )
    logs = folder / "logs"
    logs.mkdir(exist_ok=True)
    if local_logs is not None and local_logs.is_dir():
        for log in sorted(local_logs.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()[-LOG_TAIL:]
            (logs / log.name).write_text("\n".join(lines) + "\n")
    else:
        for ns, selector in CONTROLLER_PODS.items():
            pods = _safe(
                lambda ns=ns, selector=selector: (
                    kube.core.list_namespaced_pod(ns, label_selector=selector).items
                )
            )
            for p in pods if isinstance(pods, list) else []:
                text = _safe(
                    lambda p=p, ns=ns: kube.core.read_namespaced_pod_log(
                        p.metadata.name, ns, tail_lines=LOG_TAIL
                    )
                )
                (logs / f"{ns}.{p.metadata.name}.log").write_text(
                    text if isinstance(text, str) else json.dumps(text)
                )
    return folder


def for_failed_act(funcargs: dict[str, Any], folder: Path) -> str | None:
    """A failing act leaves the cluster's state and the controllers' log tails in `folder` (reports/<act>/);
    None when the act never connected. Never raises: evidence must not hide the act's own failure."""
    kube = funcargs.get("kube")
    if kube is None:
        return None
    from acts.targets import ROOT

    namespaces = list((funcargs.get("tenant_namespaces") or {}).values())
    target = funcargs.get("act_target")
    logs = ROOT / ".local" / "logs" if target is not None and target.name == "local" else None
    try:
        return str(collect(kube, namespaces, folder, logs))
    except Exception as exc:  # never let evidence hide the act's own failure
        return f"evidence could not be written: {type(exc).__name__}: {exc}"
