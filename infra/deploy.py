"""`make up` and `make destroy`: Terraform over the synthesized stacks, in dependency order.

up: synth, preflight (stop before any apply when something is missing), then network, cluster, the
collector image in the repository the cluster stack created (pushed here when built locally), addons.
destroy: the CR chart first (NodePools gone, so Karpenter drains and terminates its own nodes), wait for
Karpenter's instances to go, then addons, cluster, network in reverse, then teardown's verify. A failed
step never stops the ones after it; destroy reports each failure and exits 1."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import boto3

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import LABEL_NODEPOOL, cluster_tag
from harness.waits import WaitTimeout, eventually
from infra.addons import CHART_NAME
from infra.app import STACKS, synth
from infra.preflight import Preflight, collector_image_ref, collector_registry, report

KARPENTER_DRAIN = 900.0


class DeployError(RuntimeError):
    pass


def terraform_bin() -> str:
    for tool in ("terraform", "tofu"):
        if path := shutil.which(tool):
            return path
    raise DeployError("neither terraform nor tofu is on PATH")


def tf(stack_dir: Path, *args: str) -> None:
    cmd = [terraform_bin(), f"-chdir={stack_dir}", *args]
    print("+", " ".join(cmd), flush=True)
    if subprocess.run(cmd).returncode != 0:
        raise DeployError(
            f"{' '.join(cmd)} failed; fix the cause and rerun (state is in the stack's backend)"
        )


def up(c: Config, outdir: Path = Path("cdktf.out")) -> int:
    session = boto3.Session(region_name=c.region)
    print("preflight:")
    if not report(Preflight(c, session).run(create_spot_role=True)):
        print("preflight failed: nothing was applied")
        return 2
    # an s3 backend's bucket is the caller's account's (infra/state.py); local state needs no account
    account = session.client("sts").get_caller_identity()["Account"] if c.state_backend == "s3" else None
    synth(c, outdir, account)
    for stack in STACKS:
        if stack == "addons":
            ensure_collector_image(c, session)
        d = outdir / "stacks" / stack
        tf(d, "init", "-input=false")
        tf(d, "apply", "-input=false", "-auto-approve")
    path = write_kubeconfig(c)
    print(f"kubeconfig for the acts: {path} (TARGET=aws reads it)")
    return 0


def ensure_collector_image(c: Config, session: boto3.Session, run=subprocess.run) -> None:
    """Before the addons stack: the collector's image tag must be in the repository the cluster stack just
    created. When it is missing and an image of that name was built here (the nightly builds it before
    `make up`; by hand `docker build -t <ref> .`), push it; else stop, saying how to build and push it."""
    account = session.client("sts").get_caller_identity()["Account"]
    pf, ref = Preflight(c, session), collector_image_ref(c, account)
    check = pf.collector_image(account)
    if check.ok:
        print(f"collector image: {check.detail}")
        return
    if run(["docker", "image", "inspect", ref], capture_output=True).returncode == 0:
        login = run(
            ["aws", "ecr", "get-login-password", "--region", c.region], capture_output=True, text=True
        )
        steps = [] if login.returncode else [
            ["docker", "login", "--username", "AWS", "--password-stdin", collector_registry(c, account)],
            ["docker", "push", ref],
        ]  # fmt: skip
        for cmd in steps:
            print("+", " ".join(cmd), flush=True)
            if run(cmd, input=login.stdout if "login" in cmd else None, text=True).returncode:
                break
        check = pf.collector_image(account)
        if check.ok:
            print(f"collector image: pushed {ref}")
            return
    raise DeployError(
        f"the addons stack was not applied: {check.detail}; then rerun `make up` (network and cluster are up)"
    )


def kubeconfig_path(c: Config) -> Path:
    return Path(c.state_dir) / "kubeconfig"


def write_kubeconfig(c: Config, run=subprocess.run) -> Path:
    """The acts' kubeconfig; tokens come from `aws eks get-token`, as the cluster creator's access entry."""
    path = kubeconfig_path(c)
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["aws", "eks", "update-kubeconfig", "--name", c.cluster_name, "--region", c.region]
    cmd += ["--kubeconfig", str(path), "--alias", c.cluster_name]
    print("+", " ".join(cmd), flush=True)
    if run(cmd).returncode != 0:
        raise DeployError(
            f"{' '.join(cmd)} failed: the stacks are applied but the acts have no kubeconfig; "
            "rerun that command once `aws eks describe-cluster` works"
        )
    return path


def karpenter_instances(session: boto3.Session, c: Config) -> list[str]:
    ec2 = session.client("ec2")
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": f"tag:{cluster_tag(c.cluster_name)}", "Values": ["owned"]},
            {"Name": "tag-key", "Values": [LABEL_NODEPOOL]},
            {
                "Name": "instance-state-name",
                "Values": ["pending", "running", "stopping", "stopped", "shutting-down"],
            },
        ]
    )
    return [i["InstanceId"] for p in pages for r in p["Reservations"] for i in r["Instances"]]


def destroy(c: Config, outdir: Path = Path("cdktf.out")) -> int:
    session = boto3.Session(region_name=c.region)
    cred, account = Preflight(c, session).credentials()
    allowed = Preflight(c, session).account(account)
    if not (cred.ok and allowed.ok):
        report([cred, allowed])
        return 2
    synth(c, outdir, account)  # the same config and state, so every variable `up` used is there
    # Every step runs whatever failed before it: after a partial `up` (or a stuck release) the cluster and
    # the network must still go. Each failure is recorded and reported at the end (exit 1).
    failures: list[tuple[str, str]] = []

    def attempt(what: str, step: Callable[[], object]) -> None:
        try:
            step()
        except (DeployError, WaitTimeout) as exc:
            print(f"failed ({what}): {exc}; going on with the next step", flush=True)
            failures.append((what, str(exc)))

    addons = outdir / "stacks" / "addons"
    attempt("the CR chart", lambda: tf(addons, "init", "-input=false"))
    attempt(
        "the CR chart",
        lambda: tf(addons, "destroy", "-input=false", "-auto-approve", f"-target=helm_release.{CHART_NAME}"),
    )
    attempt(
        "Karpenter's nodes",
        lambda: eventually(
            lambda: karpenter_instances(session, c),
            lambda ids: not ids,
            timeout=KARPENTER_DRAIN,
            interval=15,
            what="Karpenter to terminate its nodes after the NodePool was deleted",
        ),
    )
    for stack in reversed(STACKS):
        d = outdir / "stacks" / stack
        attempt(stack, lambda d=d: tf(d, "init", "-input=false"))
        attempt(stack, lambda d=d: tf(d, "destroy", "-input=false", "-auto-approve"))
    if failures:
        print(f"destroy failed at {len(failures)} steps (every other step ran):")
        for what, why in failures:
            print(f"  - {what}: {why}")
        print("fix each cause and rerun `make destroy`, then `make resume` (teardown resume) to finish")
        return 1
    return 0
