"""`gpu-finops local up|down|status`: the rehearsal cluster on this machine, no Docker.

Real kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok (node and pod stages, so Job
pods run and complete), Kueue (webhooks served on 127.0.0.1 with our certificates) and Karpenter's kwok
provider (GPU instance types with spot and on-demand prices), each a supervised process with its own
log in `.local/logs/`. Then the same NodePool, Kueue queues and priority classes the addons stack ships.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from facts.config import Config, load_config
from harness.waits import eventually
from local import build, catalog, kube_state_metrics, render, versions
from local.certs import Pki
from local.supervisor import Supervisor

ROOT = Path(__file__).resolve().parents[1]
RUN_DIR = ROOT / ".local"
KUEUE_METRICS_CERTS = Path("/etc/kueue/metrics/certs")  # fixed in Kueue's main when it manages no certs

PORTS = {
    "etcd": 23790,
    "etcd-peer": 23800,
    "apiserver": 26443,
    "controller-manager": 26257,
    "scheduler": 26259,
    "kwok": 26080,
    "kueue-health": 26081,
    "kueue-webhook": 26090,
    "kueue-metrics": 26091,
    "karpenter-metrics": 26083,
    "karpenter-health": 26084,
    "moto": 26085,  # the local AWS endpoint: the interruption queue Karpenter reads
    "device-plugin": 26086,  # the simulated kubelets' pod-resources API (local/device_plugin.py)
}
AWS_CREDENTIALS = {  # moto accepts any; real ones must never reach the local target
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_SESSION_TOKEN": "local",
}
STARTUP = 120.0  # seconds a component may take to answer


class LocalError(RuntimeError):
    pass


def module_dir(module_at_version: str) -> Path:
    out = subprocess.run(
        ["go", "mod", "download", "-json", module_at_version],
        capture_output=True,
        text=True,
        env=build.go_env(),
        cwd=build.CACHE,
    )
    if out.returncode != 0:
        raise LocalError(f"go mod download {module_at_version}: {out.stdout[-500:]}{out.stderr[-500:]}")
    return Path(json.loads(out.stdout)["Dir"])


@dataclass
class LocalCluster:
    run_dir: Path = RUN_DIR
    config: Config | None = None

    def __post_init__(self) -> None:
        self.config = self.config or load_config()
        self.pki = Pki(self.run_dir / "pki")
        self.sup = Supervisor(self.run_dir)
        self.kubeconfig = self.run_dir / "kubeconfig"

    # --- helpers -------------------------------------------------------------------------------------
    def _ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_crt))
        crt, key = self.pki.pair("admin")
        ctx.load_cert_chain(str(crt), str(key))
        return ctx

    def _get(self, url: str, tls: bool | str = True) -> str:
        """tls=True: verify with our CA and present the admin cert; "self-signed": a component's own serving
        cert on loopback (controller-manager, scheduler); False: plain HTTP."""
        context = None
        if tls == "self-signed":
            context = ssl._create_unverified_context()  # loopback health check of a self-signed endpoint
        elif tls:
            context = self._ssl()
        try:
            with urllib.request.urlopen(url, context=context, timeout=5) as r:
                return r.read().decode()
        except Exception as exc:
            return f"unreachable: {exc}"

    def _wait(self, name: str, url: str, ok: str = "ok", tls: bool | str = True) -> None:
        def observe() -> str:
            crashed = self.sup.exited(name)
            if crashed is not None:
                raise LocalError(f"{name} exited; end of its log:\n{crashed}")
            return self._get(url, tls)

        try:
            eventually(
                observe,
                lambda body: not body.startswith("unreachable:") and body.strip().startswith(ok),
                timeout=STARTUP,
                interval=0.5,
                what=f"{name} healthy at {url}",
            )
        except AssertionError as exc:
            crashed = self.sup.exited(name)
            raise LocalError(
                f"{exc}\n{name} log tail:\n{crashed or Path(self.run_dir / 'logs' / f'{name}.log').read_text()[-2000:]}"
            ) from None

    def write_kubeconfig(self) -> None:
        crt, key = self.pki.pair("admin")
        b64 = lambda p: base64.b64encode(p.read_bytes()).decode()  # noqa: E731
        self.kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "gpu-finops-local",
                    "clusters": [
                        {
                            "name": "local",
                            "cluster": {
                                "server": f"https://127.0.0.1:{PORTS['apiserver']}",
                                "certificate-authority-data": b64(self.pki.ca_crt),
                            },
                        }
                    ],
                    "users": [
                        {
                            "name": "admin",
                            "user": {"client-certificate-data": b64(crt), "client-key-data": b64(key)},
                        }
                    ],
                    "contexts": [
                        {"name": "gpu-finops-local", "context": {"cluster": "local", "user": "admin"}}
                    ],
                }
            )
        )

    def kube(self):
        from finops.kube import Kube

        return Kube.from_kubeconfig(str(self.kubeconfig))

    # --- components ----------------------------------------------------------------------------------
    def start_control_plane(self, bins: Path) -> None:
        p, pki = PORTS, self.pki
        self.sup.start(
            "etcd",
            [
                str(bins / "etcd"),
                "--name=local",
                f"--data-dir={self.run_dir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{p['etcd']}",
                f"--advertise-client-urls=http://127.0.0.1:{p['etcd']}",
                f"--listen-peer-urls=http://127.0.0.1:{p['etcd-peer']}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{p['etcd-peer']}",
                f"--initial-cluster=local=http://127.0.0.1:{p['etcd-peer']}",
                "--listen-metrics-urls=",
                "--quota-backend-bytes=2147483648",
                "--unsafe-no-fsync",
            ],
        )
        self._wait("etcd", f"http://127.0.0.1:{p['etcd']}/health", ok='{"health":"true"', tls=False)
        crt, key = pki.pair("apiserver")
        self.sup.start(
            "kube-apiserver",
            [
                str(bins / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{p['etcd']}",
                "--etcd-prefix=/registry",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={p['apiserver']}",
                f"--tls-cert-file={crt}",
                f"--tls-private-key-file={key}",
                f"--client-ca-file={pki.ca_crt}",
                f"--service-account-key-file={pki.sa_pub}",
                f"--service-account-signing-key-file={pki.sa_key}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--authorization-mode=Node,RBAC",
                "--allow-privileged=true",
                "--endpoint-reconciler-type=none",
                "--enable-priority-and-fairness=false",
            ],
        )
        self._wait("kube-apiserver", f"https://127.0.0.1:{p['apiserver']}/readyz")
        kc = str(self.kubeconfig)
        self.sup.start(
            "kube-controller-manager",
            [
                str(bins / "kube-controller-manager"),
                f"--kubeconfig={kc}",
                f"--authentication-kubeconfig={kc}",
                f"--authorization-kubeconfig={kc}",
                f"--root-ca-file={pki.ca_crt}",
                f"--service-account-private-key-file={pki.sa_key}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={p['controller-manager']}",
                "--use-service-account-credentials=false",
                "--node-monitor-grace-period=60s",
            ],
        )
        self.sup.start(
            "kube-scheduler",
            [
                str(bins / "kube-scheduler"),
                f"--kubeconfig={kc}",
                f"--authentication-kubeconfig={kc}",
                f"--authorization-kubeconfig={kc}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={p['scheduler']}",
            ],
        )
        self._wait(
            "kube-controller-manager",
            f"https://127.0.0.1:{p['controller-manager']}/healthz",
            tls="self-signed",
        )
        self._wait("kube-scheduler", f"https://127.0.0.1:{p['scheduler']}/healthz", tls="self-signed")

    def apply_crds(self) -> None:
        kueue = module_dir(f"sigs.k8s.io/kueue@{versions.KUEUE}")
        karp = module_dir(f"sigs.k8s.io/karpenter@{versions.KARPENTER}")
        files = sorted((kueue / "config/components/crd/bases").glob("*.yaml"))
        files += sorted((karp / "pkg/apis/crds").glob("karpenter.sh_*.yaml"))
        files += sorted((karp / "kwok/apis/crds").glob("*.yaml"))
        docs = [d for f in files for d in yaml.safe_load_all(f.read_text()) if d]
        self.kube().apply(docs)
        names = [d["metadata"]["name"] for d in docs]

        def established() -> list[str]:
            ext = (
                self.kube()
                .dynamic()
                .resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
            )
            missing = []
            for n in names:
                crd = ext.get(name=n).to_dict()
                conds = {c["type"]: c["status"] for c in crd.get("status", {}).get("conditions", [])}
                if conds.get("Established") != "True":
                    missing.append(n)
            return missing

        eventually(established, lambda m: not m, timeout=STARTUP, what="CRDs Established")

    def stages_config(self) -> Path:
        kwok = module_dir(f"sigs.k8s.io/kwok@{versions.KWOK}") / "kustomize" / "stage"
        files = [
            kwok / "node/fast/node-initialize.yaml",
            kwok / "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
            kwok / "pod/general/pod-create.yaml",
            kwok / "pod/general/pod-ready.yaml",
            kwok / "pod/general/pod-complete.yaml",
            kwok / "pod/general/pod-delete.yaml",
            Path(__file__).with_name("stages") / "pod-terminate.yaml",  # the kubelet's graceful stop
        ]
        out = self.run_dir / "kwok-stages.yaml"
        out.write_text("\n---\n".join(f.read_text() for f in files))
        return out

    def start_kwok(self, bins: Path) -> None:
        self.sup.start(
            "kwok",
            [
                str(bins / "kwok"),
                f"--kubeconfig={self.kubeconfig}",
                f"--config={self.stages_config()}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                f"--server-address=127.0.0.1:{PORTS['kwok']}",
                "--node-lease-duration-seconds=40",
            ],
        )
        self._wait("kwok", f"http://127.0.0.1:{PORTS['kwok']}/healthz", tls=False)

    def kueue_webhooks(self) -> list[dict[str, Any]]:
        """Kueue's webhook configurations, pointed at 127.0.0.1 with our CA; only what the controller serves."""
        kueue = module_dir(f"sigs.k8s.io/kueue@{versions.KUEUE}")
        ca = base64.b64encode(self.pki.ca_crt.read_bytes()).decode()
        out = []
        for doc in yaml.safe_load_all((kueue / "config/components/webhook/manifests.yaml").read_text()):
            if not doc:
                continue
            keep = []
            for hook in doc.get("webhooks", []):
                groups = {g for r in hook.get("rules", []) for g in r.get("apiGroups", [])}
                resources = {res for r in hook.get("rules", []) for res in r.get("resources", [])}
                if not (groups & {"kueue.x-k8s.io"} or (groups == {"batch"} and resources == {"jobs"})):
                    continue
                path = hook["clientConfig"]["service"]["path"]
                hook["clientConfig"] = {
                    "url": f"https://127.0.0.1:{PORTS['kueue-webhook']}{path}",
                    "caBundle": ca,
                }
                keep.append(hook)
            doc["webhooks"] = keep
            doc["metadata"]["name"] = "kueue-" + doc["metadata"]["name"]
            out.append(doc)
        return out

    def start_kueue(self, bins: Path) -> None:
        certs = self.run_dir / "kueue-certs"
        certs.mkdir(exist_ok=True)
        crt, key = self.pki.pair("webhook")
        shutil.copy(crt, certs / "tls.crt")
        shutil.copy(key, certs / "tls.key")
        KUEUE_METRICS_CERTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(crt, KUEUE_METRICS_CERTS / "tls.crt")
        shutil.copy(key, KUEUE_METRICS_CERTS / "tls.key")
        cfg = self.run_dir / "kueue-config.yaml"
        cfg.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                    "kind": "Configuration",
                    "namespace": "kueue-system",
                    "health": {"healthProbeBindAddress": f"127.0.0.1:{PORTS['kueue-health']}"},
                    "metrics": {"bindAddress": f"127.0.0.1:{PORTS['kueue-metrics']}"},
                    "webhook": {"port": PORTS["kueue-webhook"], "host": "127.0.0.1", "certDir": str(certs)},
                    "leaderElection": {"leaderElect": False},
                    "internalCertManagement": {"enable": False},
                    "integrations": {"frameworks": ["batch/job"]},
                }
            )
        )
        k = self.kube()
        k.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}}])
        self.sup.start(
            "kueue",
            [
                str(bins / "kueue"),
                f"--config={cfg}",
                "--feature-gates=VisibilityOnDemand=false",
                "--zap-log-level=info",
            ],
            env={"KUBECONFIG": str(self.kubeconfig)},
        )
        self._wait("kueue", f"http://127.0.0.1:{PORTS['kueue-health']}/readyz", tls=False)
        k.apply(self.kueue_webhooks())

    @property
    def aws_endpoint(self) -> str:
        return f"http://127.0.0.1:{PORTS['moto']}"

    @property
    def aws_env(self) -> dict[str, str]:
        """What a boto3 or AWS SDK client needs to reach the local AWS endpoint (and nothing real)."""
        return {
            "AWS_ENDPOINT_URL": self.aws_endpoint,
            "AWS_REGION": self.config.region,  # type: ignore[union-attr]
            "AWS_DEFAULT_REGION": self.config.region,  # type: ignore[union-attr]
            **AWS_CREDENTIALS,
        }

    @property
    def interruption_queue(self) -> str:
        return f"{self.config.cluster_name}-interruption"  # type: ignore[union-attr]

    def start_aws(self) -> None:
        """A moto server with the interruption queue, shaped as the cluster stack makes it (SSE, 300 s)."""
        self.sup.start(
            "moto",
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(PORTS["moto"])],
        )
        self._wait("moto", f"{self.aws_endpoint}/moto-api/data.json", ok="{", tls=False)
        import boto3

        sqs = boto3.client(
            "sqs",
            endpoint_url=self.aws_endpoint,
            region_name=self.config.region,  # type: ignore[union-attr]
            aws_access_key_id=AWS_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=AWS_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=AWS_CREDENTIALS["AWS_SESSION_TOKEN"],
        )
        sqs.create_queue(
            QueueName=self.interruption_queue,
            Attributes={"MessageRetentionPeriod": "300", "SqsManagedSseEnabled": "true"},
        )

    def start_device_plugin(self) -> None:
        """The simulated device plugin, GFD and kubelet device allocation for kwok GPU nodes."""
        self.sup.start(
            "device-plugin",
            [
                sys.executable,
                "-m",
                "local.device_plugin",
                f"--kubeconfig={self.kubeconfig}",
                f"--port={PORTS['device-plugin']}",
                f"--state={self.run_dir / 'device-allocations.json'}",
            ],
            cwd=Path(__file__).resolve().parents[1],
        )
        self._wait("device-plugin", f"http://127.0.0.1:{PORTS['device-plugin']}/healthz", tls=False)

    def start_karpenter(self, bins: Path, *, interruption_queue: bool = True) -> None:
        """Karpenter with the kwok provider; with the interruption controller reading the queue unless
        `interruption_queue` is False (a Karpenter installed without settings.interruptionQueue)."""
        types = catalog.write(self.config, self.run_dir / "instance-types.json")
        self.kube().apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "karpenter"}}])
        self.sup.start(
            "karpenter-kwok",
            [str(bins / "karpenter-kwok")],
            env={
                **self.aws_env,
                "INTERRUPTION_QUEUE": self.interruption_queue if interruption_queue else "",
                # linking the AWS provider's interruption controller registers its options, which require
                # the cluster's name (as settings.clusterName on AWS)
                "CLUSTER_NAME": self.config.cluster_name,  # type: ignore[union-attr]
                "FEATURE_GATES": "NodeOverlay=true",
                "KUBECONFIG": str(self.kubeconfig),
                "INSTANCE_TYPES_FILE_PATH": str(types),
                "DISABLE_LEADER_ELECTION": "true",
                "METRICS_PORT": str(PORTS["karpenter-metrics"]),
                "HEALTH_PROBE_PORT": str(PORTS["karpenter-health"]),
                "SYSTEM_NAMESPACE": "karpenter",
                "BATCH_MAX_DURATION": "2s",
                "BATCH_IDLE_DURATION": "500ms",
                "LOG_LEVEL": "info",
            },
        )
        self._wait("karpenter-kwok", f"http://127.0.0.1:{PORTS['karpenter-health']}/readyz", tls=False)

    def restart_karpenter(self, *, interruption_queue: bool) -> None:
        """Restart Karpenter with or without its interruption queue (the act-5 mutation and its repair)."""
        self.sup.stop("karpenter-kwok")
        self.start_karpenter(build.bin_dir(), interruption_queue=interruption_queue)

    # --- lifecycle -----------------------------------------------------------------------------------
    def up(self, echo=print) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        echo("building (cached after the first run)...")
        bins = build.build_all()
        self.pki.ensure()
        self.write_kubeconfig()
        echo("control plane...")
        self.start_control_plane(bins)
        echo("CRDs...")
        self.apply_crds()
        echo("kwok, Kueue, the AWS endpoint, Karpenter, the device plugin...")
        self.start_kwok(bins)
        self.start_kueue(bins)
        self.start_aws()
        self.start_karpenter(bins)
        self.start_device_plugin()
        echo("kube-state-metrics...")
        kube_state_metrics.start(self, bins)
        echo("NodePool, queues, priority classes...")
        objs = render.all_objects(self.config)  # type: ignore[arg-type]
        eventually(
            lambda: self._try_apply(objs),
            lambda err: err is None,
            timeout=STARTUP,
            interval=2,
            what="our objects applied (Kueue's webhooks ready)",
        )
        self.describe()
        echo(f"up: KUBECONFIG={self.kubeconfig}")

    def describe(self) -> Path:
        """What the acts need besides the kubeconfig: the AWS endpoint and queue, the pod-resources API."""
        path = self.run_dir / "target.json"
        path.write_text(
            json.dumps(
                {
                    "aws_endpoint": self.aws_endpoint,
                    "region": self.config.region,  # type: ignore[union-attr]
                    "interruption_queue": self.interruption_queue,
                    "pod_resources_url": f"http://127.0.0.1:{PORTS['device-plugin']}",
                    "kube_state_metrics_url": kube_state_metrics.url(),
                    "logs": str(self.run_dir / "logs"),
                },
                indent=2,
            )
        )
        return path

    def _try_apply(self, objs: list[dict[str, Any]]) -> str | None:
        try:
            self.kube().apply(objs)
            return None
        except Exception as exc:
            return f"{type(exc).__name__}: {str(exc)[:300]}"

    def down(self) -> list[str]:
        stopped = self.sup.stop_all()
        for f in ("tls.crt", "tls.key"):
            (KUEUE_METRICS_CERTS / f).unlink(missing_ok=True)
        shutil.rmtree(self.run_dir / "etcd", ignore_errors=True)
        return stopped

    def status(self) -> dict[str, bool]:
        return {name: alive for name, (_, alive) in self.sup.status().items()}
