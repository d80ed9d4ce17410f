"""`gpu-finops collect`: the cost collector, once or every interval."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal

from finops.cli_common import add_nodes_argument, add_store_argument, node_source
from finops.collector import DEFAULT_GRACE, DEFAULT_INTERVAL, Collector
from finops.metrics import CollectorMetrics, serve
from finops.promql import PrometheusClient
from finops.store import open_store

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prometheus-url",
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
        default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
        help="region of nodes without a zone label",
    )
    parser.add_argument(
        "--interval", type=int, default=DEFAULT_INTERVAL, help="seconds per record (default 60)"
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE,
        help="seconds a new node may show no GPU series before it is an error (default 300)",
    )
    parser.add_argument(
        "--holdings",
        default="none",
        choices=["kube", "none"],
        help="record who held each node's GPUs every interval: 'kube' (pods from the Kubernetes API, "
        "--kubeconfig or in-cluster; the export splits cost by them), 'none' (default: not recorded, the "
        "export shows each interval unallocated with x_Status no-holdings)",
    )
    parser.add_argument(
        "--pod-resources-url",
        default=None,
        help="with --holdings kube: also record the device ids from this kubelet pod-resources HTTP "
        "endpoint (the local target's; a real kubelet serves it on a node-local socket only)",
    )
    parser.add_argument("--once", action="store_true", help="collect the last complete interval, then exit")
    parser.add_argument("--port", type=int, default=None, help="serve /metrics and /healthz on this port")
    parser.epilog = (
        "exit codes with --once: 0 records written and healthy; 1 a configuration problem (missing "
        "SM_ACTIVE, no GPU series, no price) was found, records keep the gaps; 2 nothing could be collected"
    )


def rate_book(args: argparse.Namespace):
    from finops.pricing import AwsRates, CatalogRates

    if args.rates.startswith("catalog:"):
        with open(args.rates.removeprefix("catalog:")) as f:
            catalog = json.load(f)
        return CatalogRates({(t, cap): float(p) for t, caps in catalog.items() for cap, p in caps.items()})
    if args.rates == "aws":
        import boto3

        from finops.rates import PRICING_REGION, OnDemandPrices, SpotPrices

        return AwsRates(
            OnDemandPrices(boto3.client("pricing", region_name=PRICING_REGION)),
            SpotPrices(boto3.client("ec2", region_name=args.region)),
            default_region=args.region,
        )
    raise SystemExit(f"--rates must be 'aws' or catalog:PATH, got {args.rates!r}")


def holdings_reader(args: argparse.Namespace):
    if args.holdings == "none":
        return None
    from kubernetes import client, config

    from finops.gpu_holdings import kube_reader
    from finops.kube import Kube

    if args.kubeconfig:
        kube = Kube.from_kubeconfig(args.kubeconfig)
    else:  # in-cluster, as the node source (its ServiceAccount needs list on pods, namespaces, localqueues)
        try:
            config.load_incluster_config()
        except config.ConfigException:
            config.load_kube_config()
        kube = Kube(client.ApiClient())
    return kube_reader(kube, args.pod_resources_url)


def run(args: argparse.Namespace) -> int:
    metrics = CollectorMetrics()
    server = serve(metrics, args.port) if args.port else None
    collector = Collector(
        node_source(args),
        PrometheusClient(args.prometheus_url),
        rate_book(args),
        open_store(args.store),
        interval=args.interval,
        grace_seconds=args.grace,
        metrics=metrics,
        holdings=holdings_reader(args),
    )
    try:
        if args.once:
            result = collector.cycle()
            if not result.records:
                log.error("no samples: no GPU node was observed in the interval; nothing was written")
                return 2
            return 0 if result.healthy else 1
        stopping = {"now": False}
        signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
        collector.run_forever(stop=lambda: stopping["now"])
        return 0
    finally:
        if server:
            server.shutdown()
