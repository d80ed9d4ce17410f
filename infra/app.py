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
from infra.state import cluster_state, state_account

STACKS = CLUSTER_STACKS  # the order `make up` applies; destroy reverses it
# The Terraform-compatible runtimes the stacks are written for: S3's native state lock (`use_lockfile`) came in
# 1.10 of both; the nightly pins a newer Terraform (.github/workflows/nightly.yml). cdktn checks each feature
# a stack uses against these ranges at synth.
TARGET_VERSIONS = {"terraform": ">=1.10.0", "opentofu": ">=1.10.0"}


def build(
    c: Config,
    outdir: str | Path = "cdktf.out",
    metrics: tuple[MetricRow, ...] = PROJECT_METRICS,
    account: str | None = None,
) -> App:
    """The app; `account` names the state bucket when state_backend is s3 (infra/state.py). The stacks read
    the configuration as AWS gets it (`Config.for_aws`: the MIG pool only with mig_on_aws)."""
    c = c.for_aws()
    outdir = Path(outdir)
    holder = state_account(c, account)  # first: an s3 backend with no account refuses before any file
    product = copy_product_chart(outdir, metrics)  # then a bad metrics row fails before any stack
    chart = write_chart(c, outdir)
    app = App(outdir=str(outdir), context={"targetVersions": TARGET_VERSIONS})
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
    for name, stack in zip(STACKS, (network, cluster, addons), strict=True):
        cluster_state(stack, c, name, holder)
    if c.github_repository:  # applied once by an administrator, never by up/destroy (docs/runbook.md)
        from infra.ci_role import ci_role_stack

        ci_role_stack(app, c)
    return app


def synth(c: Config, outdir: str | Path = "cdktf.out", account: str | None = None) -> Path:
    build(c, outdir, account=account).synth()
    return Path(outdir)
