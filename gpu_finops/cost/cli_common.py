"""Options shared by the finops subcommands."""

from __future__ import annotations

import argparse
import os

from gpu_finops.facts.errors import UsageError

DEFAULT_STORE = os.environ.get("GPU_FINOPS_STORE", "gpu-finops-cost.sqlite")


def add_store_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        default=DEFAULT_STORE,
        help="cost table: a SQLite path (sqlite:PATH) or dynamodb:TABLE (default: $GPU_FINOPS_STORE "
        f"or {DEFAULT_STORE})",
    )


def add_window_arguments(parser: argparse.ArgumentParser) -> None:
    """--since/--until: aware times (a zone is required), compared as times by the store."""
    from gpu_finops.facts.arguments import aware_time

    parser.add_argument(
        "--since",
        type=aware_time,
        default=None,
        help="first ChargePeriodStart (ISO 8601 with a zone, e.g. Z)",
    )
    parser.add_argument(
        "--until", type=aware_time, default=None, help="ChargePeriodStart before this (ISO 8601 with a zone)"
    )


def check_window(args: argparse.Namespace) -> None:
    """--since before --until, when both are given: a reversed window is a mistake, not an empty range."""
    if args.since and args.until and args.since >= args.until:
        raise UsageError(f"--since {args.since.isoformat()} is not before --until {args.until.isoformat()}")


def add_nodes_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nodes",
        default="kube",
        help="where GPU nodes come from: 'kube' (in-cluster or $KUBECONFIG) or file:PATH "
        "(a `kubectl get nodes -o json` file)",
    )
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig for --nodes kube")


def node_source(args: argparse.Namespace):
    from gpu_finops.clients.nodes import FileNodeSource, KubeNodeSource

    if args.nodes.startswith("file:"):
        return FileNodeSource(args.nodes.removeprefix("file:"))
    if args.nodes == "kube":
        return KubeNodeSource.from_kubeconfig(args.kubeconfig)
    raise UsageError(f"--nodes must be 'kube' or file:PATH, got {args.nodes!r}")
