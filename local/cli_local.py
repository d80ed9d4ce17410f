"""`gpu-finops local up|down|status`: the rehearsal cluster on this machine."""

from __future__ import annotations

import argparse

from local.cluster import LocalCluster, LocalError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["up", "down", "status", "build"])
    parser.epilog = (
        "exit 0 done (status: every process running); 1 a component failed (its log tail is printed)"
    )


def run(args: argparse.Namespace) -> int:
    cluster = LocalCluster()
    if args.action == "build":
        from local.build import build_all

        print(build_all())
        return 0
    if args.action == "up":
        try:
            cluster.up()
        except LocalError as exc:
            print(
                f"local up failed: {exc}\nlogs: {cluster.run_dir / 'logs'}; `gpu-finops local down` stops what started"
            )
            return 1
        return 0
    if args.action == "down":
        stopped = cluster.down()
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
        return 0
    status = cluster.status()
    for name, alive in status.items():
        print(f"  {name:24} {'running' if alive else 'STOPPED'}")
    if not status:
        print("local target is not up")
    return 0 if status and all(status.values()) else 1
