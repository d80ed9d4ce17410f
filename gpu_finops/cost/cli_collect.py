"""`gpu-finops collect`: the cost collector, once or every interval."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import textwrap
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, RootModel

from gpu_finops.clients.promql import PrometheusClient
from gpu_finops.cost.cli_common import add_nodes_argument, add_store_argument, node_source
from gpu_finops.cost.collector import DEFAULT_GRACE, DEFAULT_INTERVAL, Collector
from gpu_finops.cost.metrics import CollectorMetrics, serve
from gpu_finops.cost.store import open_store
from gpu_finops.facts import arguments, file_schema, input_files, timeouts
from gpu_finops.facts.dcgm_inputs import PINNED, SPELLING_ENV, SPELLING_HELP, spelling_argument
from gpu_finops.facts.errors import CONTRACT, CheckFailed, ConfigError, UsageError
from gpu_finops.facts.file_schema import Number, Text

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prometheus-url",
        type=arguments.http_url,
        default=os.environ.get("PROMETHEUS_URL", "http://127.0.0.1:9090"),
        help="Prometheus that scrapes dcgm-exporter (default: $PROMETHEUS_URL or :9090)",
    )
    add_store_argument(parser)
    add_nodes_argument(parser)
    parser.add_argument(
        "--rates",
        default="aws",
        help="'aws' (Pricing API + spot price history through boto3) or catalog:PATH (JSON "
        '{"instance-type": {"on-demand": $/h, "spot": $/h}})',
    )
    parser.add_argument(
        "--region",
        type=arguments.region,
        default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
        help="region of nodes without a zone label",
    )
    parser.add_argument(
        "--interval",
        type=arguments.integer(1),
        default=DEFAULT_INTERVAL,
        help="seconds per record (default 60)",
    )
    parser.add_argument(
        "--grace",
        type=arguments.number(0),
        default=DEFAULT_GRACE,
        help="seconds a new node may show no GPU series before it is an error (default 300)",
    )
    parser.add_argument(
        "--prometheus-retry",
        type=arguments.number(0, maximum=timeouts.PROM_RETRY_MAX),
        default=timeouts.PROM_RETRY,
        help="seconds to retry Prometheus before counting it unreachable (default %(default)s)",
    )
    parser.add_argument(
        "--holdings",
        default="auto",
        choices=["auto", "kube", "none"],
        help="record who held each node's GPUs every interval (the export splits cost by tenant with it): "
        "'auto' (default: from the Kubernetes API whenever GPU nodes come from it and the collector may list "
        "pods; a collector that may not is told so in its log, and records none), 'kube' (pods from the "
        "Kubernetes API, --kubeconfig or in-cluster; an error when it cannot read them), 'none' (not "
        "recorded: the export shows each interval unallocated with x_Status no-holdings)",
    )
    parser.add_argument(
        "--exporter-spelling",
        type=spelling_argument,
        default=os.environ.get(SPELLING_ENV) or None,
        help=SPELLING_HELP,
    )
    parser.add_argument(
        "--pod-resources-url",
        type=arguments.http_url,
        default=None,
        help="with --holdings kube or auto: also record the device ids from this kubelet pod-resources HTTP "
        "endpoint (the local target's; a real kubelet serves it on a node-local socket only)",
    )
    parser.add_argument("--once", action="store_true", help="collect the last complete interval, then exit")
    parser.add_argument(
        "--port",
        type=arguments.integer(1, 65535),
        default=None,
        help="serve /metrics and /healthz on this port",
    )
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        textwrap.fill(
            "exit codes with --once: 0 records written and healthy; 1 a problem was found (missing "
            "SM_ACTIVE, no GPU series, no price: records keep the gaps; or no GPU node observed: nothing "
            "written); 2 a bad argument or rates file; 3 Kubernetes, Prometheus or AWS unreachable (nothing "
            "written)",
            width=100,
        )
        + "\n\n"
        + CONTRACT
    )


Price = Annotated[Number, Field(gt=0, le=10_000)]


class RateCatalogFile(RootModel[dict[Text, dict[Literal["on-demand", "spot"], Price]]]):
    """`--rates catalog:PATH`: instance type -> capacity type -> $ per hour (a number, more than 0, at most
    $10,000 an hour: no GPU instance costs more)."""


def rate_book(args: argparse.Namespace):
    from gpu_finops.cost.pricing import AwsRates, CatalogRates

    if args.rates.startswith("catalog:"):
        path = args.rates.removeprefix("catalog:")
        try:
            catalog = input_files.read_json(Path(path), "rate catalog")
            checked = file_schema.validate(RateCatalogFile, catalog, path, "rate catalog file").root
        except ConfigError as exc:
            raise UsageError(
                f"--rates {args.rates}: not a readable JSON catalog "
                f'{{"instance-type": {{"on-demand": $/h, "spot": $/h}}}}: {exc.problem}'
            ) from None
        return CatalogRates({(t, cap): p for t, caps in checked.items() for cap, p in caps.items()})
    if args.rates == "aws":
        import boto3

        from gpu_finops.cost.rates import PRICING_REGION, OnDemandPrices, SpotPrices

        return AwsRates(
            OnDemandPrices(boto3.client("pricing", region_name=PRICING_REGION)),
            SpotPrices(boto3.client("ec2", region_name=args.region)),
            default_region=args.region,
        )
    raise UsageError(f"--rates must be 'aws' or catalog:PATH, got {args.rates!r}")


def interrupted(args: argparse.Namespace) -> str:
    return f"interrupted; the intervals already collected are in {args.store}: run collect again to go on"


def holdings_reader(args: argparse.Namespace):
    """The holdings reader `--holdings` asks for; None for `none`, and for `auto` where pods cannot be
    read (GPU nodes from a file, or RBAC forbids listing pods), said in the log."""
    if args.holdings == "none":
        return None
    if args.holdings == "auto" and args.nodes != "kube":
        log.warning(
            "--holdings auto: GPU nodes come from %s, not Kubernetes; no holdings recorded", args.nodes
        )
        return None
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    from gpu_finops.clients.kube import Kube, check_kubeconfig
    from gpu_finops.cost.holdings_record import kube_reader

    if args.kubeconfig:
        kube = Kube.from_kubeconfig(args.kubeconfig)
    else:  # in-cluster, as the node source (its ClusterRole: list pods, namespaces, jobs, localqueues)
        try:
            config.load_incluster_config()
        except config.ConfigException:
            check_kubeconfig(None)
            config.load_kube_config()
        kube = Kube(client.ApiClient())
    if args.holdings == "auto":
        try:
            kube.core.list_pod_for_all_namespaces(limit=1)
        except ApiException as exc:
            if exc.status not in (401, 403):
                raise
            log.warning(
                "--holdings auto: this collector may not list pods (HTTP %s), so who held the GPUs is not "
                "recorded and the export shows every interval unallocated; grant list on pods, namespaces "
                "and nodes (the chart's ClusterRole does) or pass --holdings none to say so",
                exc.status,
            )
            return None
    return kube_reader(kube, args.pod_resources_url)


def run(args: argparse.Namespace) -> int:
    spelling = args.exporter_spelling or PINNED
    nodes = node_source(args)
    rates = rate_book(args)  # the catalog is read before anything is bound or written
    metrics = CollectorMetrics()
    server = serve(metrics, args.port) if args.port else None  # a port in use: exit 2 before the store opens
    if args.rates == "aws":  # nodes with no capacity label: EC2's instance lifecycle says spot or not
        import boto3

        from gpu_finops.cost.lifecycle import Ec2Lifecycle, LifecycleNodeSource

        nodes = LifecycleNodeSource(nodes, Ec2Lifecycle(boto3.client("ec2", region_name=args.region)))
    collector = Collector(
        nodes,
        PrometheusClient(args.prometheus_url, retry_for=args.prometheus_retry),
        rates,
        open_store(args.store),
        interval=args.interval,
        grace_seconds=args.grace,
        metrics=metrics,
        holdings=holdings_reader(args),
        spelling=spelling,
    )
    try:
        if args.once:
            result = collector.cycle()
            if not result.records:
                raise CheckFailed(
                    "no samples: no GPU node was observed in the interval; nothing was written (check --nodes "
                    "and that the GPU nodes are up)"
                )
            return 0 if result.healthy else 1
        stopping = {"now": False}
        signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
        collector.run_forever(stop=lambda: stopping["now"])
        return 0
    finally:
        if server:
            server.shutdown()
