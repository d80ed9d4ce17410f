"""A throwaway API server for validating manifests: etcd and kube-apiserver only, from the local target's
cached binaries (built through local/build/binaries.py when missing), on free loopback ports, with its own data
folder and PKI. Nothing here touches the local rehearsal cluster (its ports are in local/cluster/processes.PORTS).

    with ValidationServer(Path(tmp)) as server:
        api = server.api_client()
"""

from __future__ import annotations

import ssl
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.waits import eventually
from local.build import binaries as build
from local.cluster.certs import Pki
from local.cluster.prometheus_server import free_port
from local.cluster.supervisor import Supervisor

SERVER_READY = 90.0  # seconds etcd, then kube-apiserver, may take to answer healthy


class ValidationServerError(RuntimeError):
    pass


def ensure_binaries() -> tuple[Path, Path]:
    """etcd and kube-apiserver at the local target's pins; built (once, minutes) when the cache lacks them."""
    bins = build.build_all(names=("etcd", "kube-apiserver"))
    return bins / "etcd", bins / "kube-apiserver"


def _free_ports(n: int) -> list[int]:
    from local.cluster.processes import PORTS  # the rehearsal cluster's fixed ports: never ours

    ports: list[int] = []
    while len(ports) < n:
        port = free_port()
        if port not in PORTS.values() and port not in ports:
            ports.append(port)
    return ports


@dataclass
class ValidationServer:
    run_dir: Path
    ports: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.pki = Pki(self.run_dir / "pki")
        self.sup = Supervisor(self.run_dir)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    def _get(self, url: str, context: ssl.SSLContext | None) -> str:
        try:
            with urllib.request.urlopen(url, context=context, timeout=5) as r:
                return r.read().decode()
        except Exception as exc:
            return f"unreachable: {exc}"

    def _wait(self, name: str, url: str, ok: str, context: ssl.SSLContext | None = None) -> None:
        def observe() -> str:
            crashed = self.sup.exited(name)
            if crashed is not None:
                raise ValidationServerError(f"{name} exited; end of its log:\n{crashed}")
            return self._get(url, context)

        eventually(
            observe,
            lambda body: body.strip().startswith(ok),
            timeout=SERVER_READY,
            interval=0.3,
            what=f"{name} healthy at {url}",
        )

    def _ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_crt))
        crt, key = self.pki.pair("admin")
        ctx.load_cert_chain(str(crt), str(key))
        return ctx

    def start(self) -> ValidationServer:
        etcd, apiserver = ensure_binaries()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.pki.ensure()
        client, peer, secure = _free_ports(3)
        self.ports = {"etcd": client, "etcd-peer": peer, "apiserver": secure}
        self.sup.start(
            "etcd",
            [
                str(etcd),
                "--name=validate",
                f"--data-dir={self.run_dir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{client}",
                f"--advertise-client-urls=http://127.0.0.1:{client}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=validate=http://127.0.0.1:{peer}",
                "--listen-metrics-urls=",
                "--unsafe-no-fsync",
            ],
        )
        self._wait("etcd", f"http://127.0.0.1:{client}/health", ok='{"health":"true"')
        crt, key = self.pki.pair("apiserver")
        self.sup.start(
            "kube-apiserver",
            [
                str(apiserver),
                f"--etcd-servers=http://127.0.0.1:{client}",
                "--etcd-prefix=/validate",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={secure}",
                f"--tls-cert-file={crt}",
                f"--tls-private-key-file={key}",
                f"--client-ca-file={self.pki.ca_crt}",
                f"--service-account-key-file={self.pki.sa_pub}",
                f"--service-account-signing-key-file={self.pki.sa_key}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--authorization-mode=RBAC",
                "--endpoint-reconciler-type=none",
                "--enable-priority-and-fairness=false",
            ],
        )
        self._wait("kube-apiserver", f"{self.url}/readyz", ok="ok", context=self._ssl())
        return self

    def stop(self) -> list[str]:
        """Stop etcd and kube-apiserver (by pid, the ones this server started)."""
        return self.sup.stop_all(grace=5.0)

    def __enter__(self) -> ValidationServer:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def api_client(self) -> Any:
        """A kubernetes client authenticated as the admin (system:masters) of this server."""
        from kubernetes import client

        cfg = client.Configuration()
        cfg.host = self.url
        cfg.ssl_ca_cert = str(self.pki.ca_crt)
        cfg.cert_file, cfg.key_file = (str(p) for p in self.pki.pair("admin"))
        return client.ApiClient(cfg)
