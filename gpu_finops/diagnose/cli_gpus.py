"""`gpu-finops gpus`: per GPU who holds it, SM_ACTIVE, VRAM and power, and, always beside it, the GPUs
that look idle but are held (allocated, low SM, VRAM resident). Activity and availability, never one
without the other; then each GPU node's cards and the part of them each holder holds (whole, time-sliced, MPS,
MIG), the shares and the unheld rest summing to the cards."""

from __future__ import annotations

import argparse
import json
import sys

from gpu_finops.diagnose import activity as act
from gpu_finops.diagnose.cli_diagnose import EXIT_UNREACHABLE, Unreachable, add_common, kube_call, kube_client
from gpu_finops.diagnose.model import Cluster
from gpu_finops.facts.dcgm_inputs import PINNED

EPILOG = (
    "exit 0: both views shown; 2: usage or configuration error; 3: Prometheus unreachable (no view: "
    "activity is what the views are made of) or Kubernetes unreachable"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    parser.epilog = EPILOG


def run(args: argparse.Namespace) -> int:
    from gpu_finops.diagnose.gpus import gpu_view, node_shares
    from gpu_finops.diagnose.kube_observer import KubeObserver, holders
    from gpu_finops.diagnose.prom_observer import read_or_reason

    observer = KubeObserver(kube_client(args.kubeconfig))  # a bad kubeconfig is exit 2 before Prometheus
    stats, why = read_or_reason(
        args.prometheus_url,
        args.window,
        retry_for=args.prometheus_retry,
        spelling=args.exporter_spelling or PINNED,
    )
    if stats is None:
        print(f"gpu-finops gpus: {why}; no GPU view without DCGM", file=sys.stderr)
        return EXIT_UNREACHABLE
    try:
        pods = kube_call(lambda: observer.kube.core.list_pod_for_all_namespaces().items)
        nodes = kube_call(observer.nodes)
        dra = kube_call(observer.dra)  # a DRA node's cards and what its pods hold through claims
    except Unreachable as exc:
        print(f"gpu-finops gpus: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    held = tuple(holders(pods))
    view = gpu_view(Cluster(holders=held, stats=tuple(stats), window_s=args.window))
    shares = node_shares(tuple(nodes), held, dra)
    if args.json:
        json.dump({**view.to_dict(), "shares": [s.to_dict() for s in shares]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from rich.table import Table

    from gpu_finops.clients.terminal import console as wide_console

    console = wide_console()
    t = Table(title=f"GPUs: activity over the last {args.window}s")
    for col in ("node", "gpu", "UUID", "held by", "SM_ACTIVE", "SM occupancy", "FB used", "power W", "class"):
        t.add_column(col)
    for r in view.rows:
        a = r.activity
        t.add_row(
            r.node,
            r.gpu,
            r.uuid,
            ", ".join(r.holders)
            or ("—" if not r.node_holders else f"(on node: {', '.join(r.node_holders)})"),
            "?" if a.sm_active is None else f"{a.sm_active:.2f}",
            "?" if a.sm_occupancy is None else f"{a.sm_occupancy:.2f}",
            "?" if a.fb_ratio is None else f"{a.fb_used_mib:.0f} MiB ({a.fb_ratio:.0%})",
            "?" if a.power_w is None else f"{a.power_w:.0f}",
            a.kind if r.held else "free",
        )
    console.print(t)
    idle = view.looks_idle_is_held
    t2 = Table(
        title=f"Looks idle, is held: allocated, SM_ACTIVE < {act.SM_LOW:.2f}, VRAM >= {act.FB_RESIDENT:.0%} "
        f"({len(idle)} of {len(view.rows)})"
    )
    for col in ("node", "UUID", "held by", "SM_ACTIVE", "FB used"):
        t2.add_column(col)
    for r in idle:
        t2.add_row(
            r.node, r.uuid, ", ".join(r.holders), f"{r.activity.sm_active:.2f}", f"{r.activity.fb_ratio:.0%}"
        )
    console.print(t2)
    t3 = Table(title="Shares: each node's cards, and the part of them each holder holds")
    for col in ("node", "cards", "sharing", "held by", "resource", "devices", "cards held"):
        t3.add_column(col)
    for n in shares:
        if n.cards is None:
            t3.add_row(n.node, "?", "?", f"not read: {n.problem}", "", "", "")
            continue
        for h, r, c, w in n.held:
            t3.add_row(n.node, str(n.cards), n.sharing or "", h, r, str(c), str(w))
        t3.add_row(n.node, str(n.cards), n.sharing or "", "(nobody)", "", "", str(n.unheld))
        if n.problem:
            t3.add_row(n.node, str(n.cards), n.sharing or "", f"(devices disagree: {n.problem})", "", "", "")
    console.print(t3)
    return 0
