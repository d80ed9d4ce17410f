"""`gpu-finops diagnose`: why is this GPU pod (or Kueue workload) waiting while the GPUs look idle?

Walks admission -> allocation -> memory -> placement -> application for each target, names the first
cause with its evidence and next action, and still shows what every later check saw.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

from gpu_finops.diagnose.model import Cluster, Diagnosis, document
from gpu_finops.facts import arguments, errors, timeouts
from gpu_finops.facts.dcgm_inputs import PINNED, SPELLING_ENV, SPELLING_HELP, spelling_argument
from gpu_finops.facts.errors import EXIT_FALSE, EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE, UsageError

# The contract's codes (gpu_finops/facts/errors.py), by what they mean here.
EXIT_DIAGNOSED = EXIT_OK
EXIT_NOT_A_TARGET = EXIT_FALSE
DEFAULT_WINDOW_S = 300

EPILOG = (
    "exit 0: diagnosed (every check made); "
    "1: the pod is not pending, not a GPU pod, or gone, or the workload is not found or already admitted "
    "(said on stderr); "
    "2: usage or configuration error (no kubeconfig, bad --window, POD with --workload); "
    "3: an external service is unreachable: Kubernetes (nothing diagnosed) or Prometheus (the "
    "Kubernetes-side findings are shown; memory and application are named as not checked); "
    "--all with nothing pending is exit 0, whether or not Prometheus answers (nothing needed it)"
)


def parse_window(text: str) -> int:
    """'300', '300s', '5m', '1h' -> seconds."""
    m = re.fullmatch(r"\s*([0-9]+)\s*([smh]?)\s*", text)
    if not m or int(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f"window must be a positive duration like 300s, 5m or 1h, got {text!r}"
        )
    return int(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prometheus-url",
        type=arguments.http_url,
        default=os.environ.get("PROMETHEUS_URL", "http://127.0.0.1:9090"),
        help="Prometheus that scrapes dcgm-exporter (default: $PROMETHEUS_URL or :9090)",
    )
    parser.add_argument(
        "--window",
        type=parse_window,
        default=DEFAULT_WINDOW_S,
        help="DCGM averaging window: 300s, 5m, 1h (default 5m)",
    )
    parser.add_argument("--json", action="store_true", help="JSON to stdout instead of tables")
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig (default: in-cluster or $KUBECONFIG)")
    parser.add_argument(
        "--exporter-spelling",
        type=spelling_argument,
        default=os.environ.get(SPELLING_ENV) or None,
        help=SPELLING_HELP,
    )
    parser.add_argument(
        "--prometheus-retry",
        type=arguments.number(0, maximum=timeouts.PROM_RETRY_MAX),  # nan/inf would retry forever
        default=None,
        help="seconds to retry Prometheus before counting it unreachable (default: the harness's)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pod", nargs="?", type=arguments.kube_name, help="the pending pod to diagnose")
    parser.add_argument(
        "--workload",
        type=arguments.kube_name,
        default=None,
        help="a Kueue Workload to diagnose instead of a pod",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        type=arguments.kube_label,
        default=None,
        help="namespace (default: 'default'; --all: every)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="every pending GPU pod and unadmitted workload (in -n, or everywhere)",
    )
    add_common(parser)
    parser.add_argument(
        "--port",
        type=arguments.integer(1, 65535),
        default=None,
        help="with --all: run every --interval and serve the pending GPU pods by cause on /metrics and "
        "/healthz on this port (gpu_finops_pending_gpu_pods{cause,namespace}), until stopped",
    )
    parser.add_argument(
        "--interval",
        type=arguments.integer(1),
        default=60,
        help="with --port: seconds between diagnoses (default %(default)s)",
    )
    parser.epilog = EPILOG


class Unreachable(errors.Unreachable):
    """Kubernetes did not answer."""


def kube_client(kubeconfig: str | None) -> Any:
    """A harness Kube; UsageError (exit 2) when there is no configuration to reach a cluster with."""
    from kubernetes import config

    from gpu_finops.clients.kube import Kube

    try:
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config()
            from kubernetes import client

            return Kube(client.ApiClient())
        return Kube.from_kubeconfig(kubeconfig)
    except (config.ConfigException, FileNotFoundError, OSError) as exc:
        raise UsageError(
            f"no Kubernetes configuration: {exc}; set KUBECONFIG or --kubeconfig, or run in a cluster"
        ) from exc


def kube_call(fn, *args, **kw):
    """Run a Kubernetes read; connection failures become Unreachable (exit 3), 404s pass through."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    try:
        return fn(*args, **kw)
    except urllib3.exceptions.HTTPError as exc:
        raise Unreachable(f"Kubernetes API unreachable: {exc}") from exc
    except ApiException as exc:
        if exc.status in (None, 0) or exc.status >= 500:
            raise Unreachable(f"Kubernetes API error {exc.status}: {exc.reason}") from exc
        raise


def read_cluster(args: argparse.Namespace, observer: Any, namespace: str | None):
    from gpu_finops.diagnose.read import read_cluster as read

    return read(
        observer,
        args.prometheus_url,
        args.window,
        retry_for=args.prometheus_retry,
        namespace=namespace,
        kube_call=kube_call,
        spelling=args.exporter_spelling or PINNED,
    )


def run(args: argparse.Namespace) -> int:
    from gpu_finops.diagnose.engine import NotDiagnosable, diagnose_all, diagnose_pod, diagnose_workload
    from gpu_finops.diagnose.kube_observer import KubeObserver, PodGone

    err = sys.stderr
    if args.pod and args.workload:
        print("gpu-finops diagnose: give a POD or --workload NAME, not both", file=err)
        return EXIT_USAGE
    if not (args.pod or args.workload or args.all):
        print("gpu-finops diagnose: name a POD, --workload NAME, or --all", file=err)
        return EXIT_USAGE
    if args.port is not None and not args.all:
        print("gpu-finops diagnose: --port serves the diagnosis of --all; add --all", file=err)
        return EXIT_USAGE
    observer = KubeObserver(kube_client(args.kubeconfig))
    if args.port is not None:
        return serve(args, observer)
    namespace = args.namespace if (args.namespace or args.all) else "default"
    try:
        if args.pod:
            try:
                pod = kube_call(observer.pod, namespace, args.pod)
            except PodGone as exc:
                print(f"gpu-finops diagnose: {exc}", file=err)
                return EXIT_NOT_A_TARGET
            _, cluster = read_cluster(args, observer, namespace)
            try:
                diagnoses = [diagnose_pod(pod, cluster)]
            except NotDiagnosable as exc:
                print(f"gpu-finops diagnose: {exc}; nothing to diagnose", file=err)
                return EXIT_NOT_A_TARGET
        elif args.workload:
            _, cluster = read_cluster(args, observer, namespace)
            w = next((w for w in cluster.workloads if w.name == args.workload), None)
            if w is None:
                print(f"gpu-finops diagnose: workload {namespace}/{args.workload} not found", file=err)
                return EXIT_NOT_A_TARGET
            if w.admitted and w.job_suspended is not True:
                print(
                    f"gpu-finops diagnose: workload {w.key} is admitted: its pods are the scheduler's; "
                    "diagnose a pending pod of it instead",
                    file=err,
                )
                return EXIT_NOT_A_TARGET
            diagnoses = [diagnose_workload(w, cluster)]
        else:
            pods, cluster = read_cluster(args, observer, args.namespace)
            diagnoses = diagnose_all(pods, cluster, namespace=args.namespace)
    except Unreachable as exc:
        print(f"gpu-finops diagnose: {exc}; nothing diagnosed", file=err)
        return EXIT_UNREACHABLE
    emit(diagnoses, cluster, args)
    if cluster.stats is None and diagnoses:
        # DCGM's series were needed (memory, application) and not read: say so, on the line the code means
        print(
            f"gpu-finops diagnose: Prometheus not read ({cluster.stats_unavailable}): memory and application "
            "not checked",
            file=err,
        )
        return EXIT_UNREACHABLE
    return EXIT_DIAGNOSED  # with nothing pending, nothing needed Prometheus


def serve(args: argparse.Namespace, observer: Any) -> int:
    """`--all --port`: the diagnosis every interval as gauges (gpu_finops/diagnose/exporter.py), until SIGTERM."""
    import signal

    from gpu_finops.clients.metrics_http import serve as serve_http
    from gpu_finops.diagnose.exporter import DiagnosisMetrics, kube_pending, run_forever

    metrics = DiagnosisMetrics()
    server = serve_http(metrics.registry, lambda: metrics.problems, args.port)
    stopping = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
    try:
        run_forever(
            metrics,
            kube_pending(observer, kube_call),
            lambda: read_cluster(args, observer, args.namespace),
            args.interval,
            stop=lambda: stopping["now"],
        )
    finally:
        server.shutdown()
    return EXIT_OK


_MARK = {True: "[bold red]explains[/]", False: "[green]no[/]", None: "[yellow]not checked[/]"}


def emit(diagnoses: list[Diagnosis], cluster: Cluster, args: argparse.Namespace) -> None:
    if args.json:
        json.dump(document(diagnoses, cluster), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return
    from rich.markup import escape
    from rich.table import Table

    from gpu_finops.clients.terminal import console as wide_console

    console = wide_console()
    if not diagnoses:
        console.print(
            "no pending GPU pod and no unadmitted workload"
            + (f" in {args.namespace}" if args.namespace else "")
            + ": nothing to diagnose"
        )
    for d in diagnoses:
        first = d.first
        # what the cluster said (condition messages, event text, names) is escaped: `[/x]` in a Kueue
        # message must print as itself, not end the command as rich markup
        head = f"[bold]{escape(d.target)}[/] ({escape(d.kind)}): "
        head += (
            f"first cause [bold red]{first.check}[/]"
            if first
            else "[yellow]no cause found by the checks made[/]"
        )
        if d.also_explains:
            head += f" (also holding, later in the order: {escape(', '.join(d.also_explains))})"
        console.print(head)
        t = Table(show_lines=True)
        for col in ("check", "result", "what it saw", "next action", "key evidence"):
            t.add_column(col, overflow="fold")
        for f in d.findings:
            mark = _MARK[f.explains]
            if f is first:
                mark = "[bold red]FIRST CAUSE[/]"
            t.add_row(
                escape(f.check),
                mark,
                escape(f.summary),
                escape(f.next_action),
                escape("\n".join(f.key_evidence)),
            )
        console.print(t)
        if d.not_checked:
            console.print(
                f"[yellow]not checked: {escape(', '.join(d.not_checked))}[/] "
                f"({escape(cluster.stats_unavailable or 'see above')})"
            )
