"""What differs between the targets the acts run on: where the cluster is, what a GPU workload runs, how a
spot interruption is delivered, and how a pod's GPU devices are read."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOCAL_DESCRIPTION = ROOT / ".local" / "target.json"  # written by `gpu-finops local up`


@dataclass(frozen=True)
class Target:
    name: str
    kubeconfig: str | None
    gpu_image: str
    success_marker: str | None  # None: the target cannot show workload output (kwok pods have no logs)
    simulated: bool  # pods are run by kwok stages: run time comes from an annotation


def local_target() -> Target:
    return Target("local", str(ROOT / ".local" / "kubeconfig"), "registry.k8s.io/pause:3.10", None, True)


def aws_target() -> Target:
    # CUDA vectorAdd: prints "Test PASSED" only after a kernel ran and its result was checked on the host.
    return Target(
        "aws",
        os.environ.get("KUBECONFIG") or str(ROOT / ".state" / "kubeconfig"),
        "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
        "Test PASSED",
        False,
    )


def local_description() -> dict[str, Any]:
    """The local target's endpoints (AWS endpoint, interruption queue, pod-resources API), from `local up`."""
    if not LOCAL_DESCRIPTION.exists():
        raise FileNotFoundError(f"{LOCAL_DESCRIPTION} is missing: run `make local-up`")
    return json.loads(LOCAL_DESCRIPTION.read_text())


def interrupter(t: Target, config: Any) -> Any:
    """How this target delivers a spot interruption warning to Karpenter's queue."""
    import boto3

    from harness.interruption import FisInterrupter, SqsInterrupter

    if t.name == "local":
        d = local_description()
        sqs = boto3.client(
            "sqs",
            endpoint_url=d["aws_endpoint"],
            region_name=d["region"],
            aws_access_key_id="local",
            aws_secret_access_key="local",
            aws_session_token="local",
        )
        return SqsInterrupter(sqs, d["interruption_queue"], d["region"])
    account = boto3.client("sts", region_name=config.region).get_caller_identity()["Account"]
    return FisInterrupter(
        boto3.client("fis", region_name=config.region), config.project, config.region, account
    )


def pod_devices(t: Target, kube: Any, namespace: str, pod: str, node: str) -> tuple[str, ...]:
    """The GPU device ids a pod's containers were given. Local: the simulated kubelet's pod-resources API
    (GPU-uuid or GPU-uuid::replica). AWS: the UUID the workload printed from `nvidia-smi -L` (the replica
    index is not visible inside the container)."""
    if t.name == "local":
        url = f"{local_description()['pod_resources_url']}/v1/nodes/{node}/pod-resources"
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.loads(r.read())
        for entry in body.get("podResources", []):
            if entry["namespace"] == namespace and entry["name"] == pod:
                return tuple(d for c in entry["containers"] for dev in c["devices"] for d in dev["deviceIds"])
        return ()
    log = kube.core.read_namespaced_pod_log(pod, namespace)
    return tuple(dict.fromkeys(w for w in log.replace(",", " ").split() if w.startswith("GPU-")))


def mps_daemon(t: Target, node: str) -> tuple[str, ...] | None:
    """The commands the MPS control daemon of `node` set (its clients' pinned memory and active thread
    percentage), None where no daemon runs. Local: the simulated daemon's answer. AWS: not read (the daemon's
    log would say it; act 9 does not run on AWS)."""
    if t.name != "local":
        raise NotImplementedError(
            "reading the MPS control daemon on AWS is not built: run act 9 on TARGET=local"
        )
    url = f"{local_description()['pod_resources_url']}/v1/nodes/{node}/mps-control-daemon"
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            answer = json.loads(r.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 404:  # no daemon on that node
            return None
        raise
    commands = answer.get("commands") if isinstance(answer, dict) else None
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        raise ValueError(
            f"{url} answered {answer!r}: expected {{'commands': [the daemon's commands, each a string]}}; is the "
            "GPU simulator (local/sim) the one this checkout builds? `gpu-finops local down` and `local up` again"
        )
    return tuple(commands)


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
    return None


def broken_stack(t: Target) -> str | None:
    """Credentials (AWS) and a kubeconfig mean a cluster was brought up: one that does not answer then is
    broken (a failure naming the server and the error), not absent (a skip)."""
    if t.name == "local":
        try:
            from gpu_finops.clients.kube import Kube

            Kube.from_kubeconfig(t.kubeconfig).core.list_namespace(limit=1, _request_timeout=5)
        except Exception as exc:
            return (
                f"the local target's API server (kubeconfig {t.kubeconfig}) does not answer "
                f"({type(exc).__name__}: {str(exc).splitlines()[0][:200]}): `make local-up` again, or "
                "`make local-down` to clear a half-started one"
            )
        return None
    import yaml

    from gpu_finops.clients.kube import Kube

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
