"""The CDK Terrain app: network -> cluster -> addons, synthesized into Terraform JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cdktn import App

from facts.config import Config, load_config
from infra.addons import AddonsStack, write_chart
from infra.cluster import ClusterStack
from infra.metrics_csv import PROJECT_METRICS, MetricRow
from infra.network import NetworkStack

STACKS = ("network", "cluster", "addons")  # the order `make up` applies; destroy reverses it
BOOTSTRAP_STACKS = ("ci-role",)  # applied once per account by an administrator, outside up/destroy


def build(
    c: Config, outdir: str | Path = "cdktf.out", metrics: tuple[MetricRow, ...] = PROJECT_METRICS
) -> App:
    outdir = Path(outdir)
    chart = write_chart(c, outdir, metrics)  # first: a bad metrics row fails before anything is written
    app = App(outdir=str(outdir))
    network = NetworkStack(app, c)
    cluster = ClusterStack(app, c, network)
    cluster.add_dependency(network)
    addons = AddonsStack(app, c, cluster, chart_path=str(Path("..") / ".." / chart.relative_to(outdir)))
    addons.add_dependency(cluster)
    if c.github_repository:  # applied once by an administrator, never by up/destroy (docs/runbook.md)
        from infra.ci_role import ci_role_stack

        ci_role_stack(app, c)
    return app


def synth(c: Config, outdir: str | Path = "cdktf.out") -> Path:
    build(c, outdir).synth()
    return Path(outdir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="synthesize the gpu-finops stacks")
    parser.add_argument("--config", default=None, help="config YAML (default facts/config.yaml)")
    parser.add_argument("--outdir", default="cdktf.out")
    args = parser.parse_args(argv)
    out = synth(load_config(args.config), args.outdir)
    for stack in STACKS:
        print(f"synthesized {out / 'stacks' / stack / 'cdk.tf.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
