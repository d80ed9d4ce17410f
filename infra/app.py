"""The CDK Terrain app: network -> cluster -> addons, synthesized into Terraform JSON."""

from __future__ import annotations

from pathlib import Path

from cdktn import App

from gpu_finops.dcgm.metrics_csv import PROJECT_METRICS, MetricRow
from gpu_finops.facts.config import Config
from gpu_finops.facts.names import CLUSTER_STACKS
from infra.addons import AddonsStack, copy_product_chart, write_chart
from infra.cluster import ClusterStack
from infra.network import NetworkStack

STACKS = CLUSTER_STACKS  # the order `make up` applies; destroy reverses it


def build(
    c: Config, outdir: str | Path = "cdktf.out", metrics: tuple[MetricRow, ...] = PROJECT_METRICS
) -> App:
    outdir = Path(outdir)
    product = copy_product_chart(outdir, metrics)  # first: a bad metrics row fails before anything else
    chart = write_chart(c, outdir)
    app = App(outdir=str(outdir))
    network = NetworkStack(app, c)
    cluster = ClusterStack(app, c, network)
    cluster.add_dependency(network)
    addons = AddonsStack(
        app,
        c,
        cluster,
        chart_path=str(Path("..") / ".." / chart.relative_to(outdir)),
        product_chart_path=str(Path("..") / ".." / product.relative_to(outdir)),
    )
    addons.add_dependency(cluster)
    if c.github_repository:  # applied once by an administrator, never by up/destroy (docs/runbook.md)
        from infra.ci_role import ci_role_stack

        ci_role_stack(app, c)
    return app


def synth(c: Config, outdir: str | Path = "cdktf.out") -> Path:
    build(c, outdir).synth()
    return Path(outdir)
