"""What differs between the targets the acts run on."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Target:
    name: str
    kubeconfig: str | None
    gpu_image: str
    gpu_command: list[str] | None
    success_marker: str | None  # None: the target cannot show workload output (kwok pods have no logs)
    simulated: bool  # pods are run by kwok stages: run time comes from an annotation


def local_target() -> Target:
    return Target(
        "local", str(ROOT / ".local" / "kubeconfig"), "registry.k8s.io/pause:3.10", None, None, True
    )


def aws_target() -> Target:
    # CUDA vectorAdd: prints "Test PASSED" only after a kernel ran and its result was checked on the host.
    return Target(
        "aws",
        os.environ.get("KUBECONFIG") or str(ROOT / ".state" / "kubeconfig"),
        "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
        None,
        "Test PASSED",
        False,
    )


def target(name: str) -> Target:
    return local_target() if name == "local" else aws_target()


def unavailable_reason(t: Target) -> str | None:
    """Why this target cannot run acts now (a skip reason), or None."""
    if t.name == "aws":
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        try:
            boto3.client("sts").get_caller_identity()
        except (NoCredentialsError, ClientError, BotoCoreError) as exc:
            return f"TARGET=aws needs credentials for the sandbox account and a deployed stack (`make up`): {exc}"
    if not t.kubeconfig or not Path(t.kubeconfig).exists():
        hint = (
            "`make local-up`"
            if t.name == "local"
            else "`make up` (it writes .state/kubeconfig) or KUBECONFIG"
        )
        return f"no kubeconfig for TARGET={t.name} at {t.kubeconfig}: run {hint}"
    if t.name == "local":
        try:
            from harness.kube import Kube

            Kube.from_kubeconfig(t.kubeconfig).core.list_namespace(limit=1, _request_timeout=5)
        except Exception as exc:
            return f"the {t.name} cluster does not answer ({type(exc).__name__}); is it up?"
    return None


def broken_stack(t: Target) -> str | None:
    """On AWS, credentials and a kubeconfig mean a stack was deployed: a cluster that does not answer then
    is a broken stack (a failure with evidence), not an absent one (a skip)."""
    if t.name != "aws":
        return None
    import yaml

    from harness.kube import Kube

    try:
        kcfg = yaml.safe_load(Path(t.kubeconfig).read_text()) or {}
        server = next((c["cluster"]["server"] for c in kcfg.get("clusters", [])), "<no server in kubeconfig>")
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        return f"the kubeconfig {t.kubeconfig} cannot be read ({exc}); rerun `make up`, which writes it"
    try:
        Kube.from_kubeconfig(t.kubeconfig).core.list_namespace(limit=1, _request_timeout=10)
    except Exception as exc:
        return (
            f"the deployed stack is broken: the kubeconfig {t.kubeconfig} points at {server}, which does not "
            f"answer ({type(exc).__name__}: {str(exc).splitlines()[0][:300]}). Check `aws eks describe-cluster`, "
            "rerun `make up`, or `make destroy`"
        )
    return None
