"""`make up` and `make destroy`: Terraform over the synthesized stacks, in dependency order.

up: synth, preflight (stop before any apply when something is missing), then network, cluster, the
collector image in the repository the cluster stack created (pushed here when built locally), addons.
destroy: the CR chart first (NodePools gone, so Karpenter drains and terminates its own nodes), wait for
Karpenter's instances to go, then addons, cluster, network in reverse, then teardown's verify. A failed
step never stops the ones after it; destroy reports each failure and exits 1."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import boto3

from gpu_finops.facts.config import Config
from gpu_finops.facts.kube_keys import LABEL_NODEPOOL, cluster_tag
from harness.waits import WaitTimeout, eventually
from infra.addons import CHART_NAME
from infra.app import STACKS, synth
from infra.preflight import TERRAFORM_TOOLS, Preflight, collector_image_ref, collector_registry, report

KARPENTER_DRAIN = 900.0


class DeployError(RuntimeError):
    pass


def terraform_bin() -> str:
    for tool in TERRAFORM_TOOLS:
        if path := shutil.which(tool):
            return path
    raise DeployError(
        "neither tofu nor terraform is on PATH: install OpenTofu (docs/runbook.md, prerequisites)"
    )


@dataclass(frozen=True)
class Diagnostic:
    """One of Terraform's diagnostics (its machine-readable UI): what, why, and the resource when it names one."""

    severity: str
    summary: str
    detail: str
    address: str | None

    def line(self) -> str:
        where = f"{self.address}: " if self.address else ""
        first = self.detail.strip().splitlines()[0] if self.detail.strip() else ""
        return f"{where}{self.summary}" + (f" ({first})" if first else "")


@dataclass
class TfRun:
    """What one plan, apply or destroy said: its diagnostics, the changes it planned (action, address) and the
    resources whose change it completed."""

    command: list[str]
    returncode: int = 0
    diagnostics: list[Diagnostic] = field(default_factory=list)
    planned: list[tuple[str, str]] = field(default_factory=list)
    completed: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


class TfFailed(DeployError):
    def __init__(self, message: str, run: TfRun):
        super().__init__(message)
        self.run = run


MACHINE_READABLE = ("plan", "apply", "destroy")


def read_ui(line: str, run: TfRun) -> str:
    """One line of Terraform's `-json` UI into `run`; what to print for it (its own human message)."""
    try:
        event = json.loads(line)
    except ValueError:
        return line.rstrip("\n")
    if not isinstance(event, dict):
        return line.rstrip("\n")
    kind, message = event.get("type"), str(event.get("@message", ""))
    if kind == "diagnostic" and isinstance(event.get("diagnostic"), dict):
        d = event["diagnostic"]
        diag = Diagnostic(str(d.get("severity", "")), str(d.get("summary", "")), str(d.get("detail", "")),
                          d.get("address"))  # fmt: skip
        run.diagnostics.append(diag)
        return "\n".join([message, *("    " + x for x in diag.detail.splitlines())])
    hook = event.get("hook") if isinstance(event.get("hook"), dict) else {}
    resource = hook.get("resource") if isinstance(hook.get("resource"), dict) else {}
    change = event.get("change") if isinstance(event.get("change"), dict) else {}
    if kind == "planned_change" and isinstance(change.get("resource"), dict):
        run.planned.append((str(change.get("action")), str(change["resource"].get("addr"))))
    if kind == "apply_complete" and resource.get("addr"):
        run.completed.append(str(resource["addr"]))
    return message


def tf(stack_dir: Path, *args: str, ok: tuple[int, ...] = (0,)) -> TfRun:
    """Terraform in `stack_dir`; plan, apply and destroy through its machine-readable UI, each event printed as
    Terraform words it and its diagnostics kept, so a failure names every resource that failed and why.
    A code outside `ok` raises TfFailed with that list."""
    machine = bool(args) and args[0] in MACHINE_READABLE
    cmd = [terraform_bin(), f"-chdir={stack_dir}", *args, *(["-json"] if machine else [])]
    print("+", " ".join(cmd), flush=True)
    run = TfRun(cmd)
    if not machine:
        run.returncode = subprocess.run(cmd).returncode
    else:
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                if text := read_ui(line, run):
                    print(text, flush=True)
        run.returncode = proc.returncode
    if run.returncode not in ok:
        failed = "; ".join(d.line() for d in run.errors) or "see its output above"
        raise TfFailed(
            f"{' '.join(cmd)} failed ({len(run.errors)} errors: {failed}); fix the cause and rerun (state is in "
            "the stack's backend)",
            run,
        )
    return run


def up(c: Config, outdir: Path = Path("cdktf.out"), through: str = STACKS[-1]) -> int:
    """Preflight, synth, then each stack in order up to and including `through` (all three by default)."""
    session = boto3.Session(region_name=c.region)
    print("preflight:")
    if not report(Preflight(c, session).run(create_spot_role=True)):
        print("preflight failed: nothing was applied")
        return 2
    # an s3 backend's bucket is the caller's account's (infra/state.py); local state needs no account
    account = session.client("sts").get_caller_identity()["Account"] if c.state_backend == "s3" else None
    synth(c, outdir, account)
    for stack in STACKS[: STACKS.index(through) + 1]:
        if stack == "addons":
            ensure_collector_image(c, session)
        d = outdir / "stacks" / stack
        tf(d, "init", "-input=false")
        tf(d, "apply", "-input=false", "-auto-approve")
    if through == "network":
        return 0
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
