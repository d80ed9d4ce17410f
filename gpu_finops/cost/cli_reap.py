"""`gpu-finops reap`: rank nodes by idle dollars per hour; with --apply, delete the NodeClaims of the worst."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

from rich.table import Table

from gpu_finops.clients.terminal import console as wide_console
from gpu_finops.cost.cli_common import add_nodes_argument, add_store_argument, node_source
from gpu_finops.cost.reaper import ReapPolicy, rank, reap
from gpu_finops.cost.store import open_store
from gpu_finops.facts import arguments
from gpu_finops.facts.errors import UsageError

YEAR_MINUTES = 366 * 24 * 60  # the longest --window/--min-age: finite, so every time sum stays a date


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    add_nodes_argument(parser)
    parser.add_argument(
        "--nodepool",
        type=arguments.non_empty,
        default=None,
        help="only nodes of this Karpenter NodePool are ever touched. Default: discovered, when exactly "
        "one NodePool has GPU nodes now (said in the output); with several (or none) it must be named "
        "for --apply, and a dry run ranks every GPU node with none eligible",
    )
    parser.add_argument(
        "--window",
        type=arguments.number(0, above=True, maximum=YEAR_MINUTES),  # 1e308 minutes overflows a timedelta
        default=60,
        help="minutes of records to rank by (default 60)",
    )
    parser.add_argument(
        "--min-age",
        type=arguments.number(0, maximum=YEAR_MINUTES),
        default=30,
        help="minutes a node must have lived (default 30)",
    )
    parser.add_argument(
        "--idle-threshold",
        type=arguments.number(0, maximum=1),
        default=0.9,
        help="idle share counting as idle (default 0.9)",
    )
    parser.add_argument(
        "--consecutive",
        type=arguments.integer(1),
        default=10,
        help="idle intervals in a row required (default 10)",
    )
    parser.add_argument("--apply", action="store_true", help="delete NodeClaims (default: dry run)")


def interrupted(args: argparse.Namespace) -> str:
    if args.apply:
        return (
            "interrupted; NodeClaims already deleted stay deleted: run `gpu-finops reap` to see what is left"
        )
    return "interrupted; a dry run changes nothing"


def nodepool_of(args: argparse.Namespace, nodes: list) -> tuple[str | None, str]:
    """The NodePool to reap and how it was chosen: named, or the one NodePool the GPU nodes are in."""
    if args.nodepool:
        return args.nodepool, f"NodePool {args.nodepool} (--nodepool)"
    pools = sorted({n.nodepool for n in nodes if n.nodepool})
    if len(pools) == 1:
        return pools[0], f"NodePool {pools[0]} (discovered: the only NodePool with GPU nodes)"
    seen = ", ".join(pools) if pools else "none: no GPU node carries karpenter.sh/nodepool"
    if args.apply:
        raise UsageError(
            f"--apply needs --nodepool NAME: the GPU nodes are in {len(pools)} NodePools ({seen}), and the "
            "reaper deletes NodeClaims of one NodePool only"
        )
    return None, f"no NodePool chosen (GPU nodes' NodePools: {seen}): name one with --nodepool"


def run(args: argparse.Namespace) -> int:
    from gpu_finops.clients.karpenter import KarpenterClient

    store = open_store(args.store, read_only=True)  # reap reads the store, never makes one at a typo'd path
    nodes = node_source(args).gpu_nodes()
    nodepool, chosen = nodepool_of(args, nodes)
    policy = ReapPolicy(
        nodepool=nodepool,
        window=timedelta(minutes=args.window),
        min_age=timedelta(minutes=args.min_age),
        idle_threshold=args.idle_threshold,
        consecutive=args.consecutive,
    )
    now = datetime.now(UTC)
    candidates = rank(nodes, store.records(), policy, now)
    if not candidates:
        print(f"no GPU nodes to rank (nodes from {args.nodes}): nothing to reap")
        return 0
    reap(candidates, KarpenterClient.from_kubeconfig(args.kubeconfig), apply=args.apply)
    t = Table(title=f"GPU nodes by idle $/h ({'APPLY' if args.apply else 'dry run'}; {chosen})")
    for col in ("node", "nodepool", "idle $/h", "cost $/h", "idle streak", "eligible", "action / why not"):
        t.add_column(col)
    for c in candidates:
        t.add_row(
            c.node.name,
            c.node.nodepool or "—",
            "—" if c.idle_usd_per_hour is None else f"{c.idle_usd_per_hour:.3f}",
            "—" if c.cost_usd_per_hour is None else f"{c.cost_usd_per_hour:.3f}",
            str(c.consecutive_idle),
            "yes" if c.eligible else "no",
            c.action if c.eligible else "; ".join(c.reasons),
        )
    wide_console().print(t)
    return 0
