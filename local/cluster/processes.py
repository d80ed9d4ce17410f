"""What the local target's supervised processes share: the fixed ports, the AWS credentials that are never
real, health waits against a component's endpoint, and the admin kubeconfig (moved from cluster.py)."""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import urllib.request
from pathlib import Path

import yaml

from gpu_finops.facts.config import Config
from harness import process_group
from harness.waits import eventually
from local.build import binaries as build
from local.cluster.certs import Pki
from local.cluster.supervisor import Supervisor

ROOT = Path(__file__).resolve().parents[2]
RUN_DIR = ROOT / ".local"
KUEUE_METRICS_CERTS = Path("/etc/kueue/metrics/certs")  # fixed in Kueue's main when it manages no certs
KUEUE_VISIBILITY_CERTS = Path("/visibility")  # fixed in Kueue's pkg/visibility/server.go (certDir), likewise

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
    "device-plugin": 26086,  # the simulated kubelets' pod-resources API (local/sim/device_plugin.py)
    "kube-state-metrics": 26087,  # /metrics, /healthz (local/cluster/kube_state_metrics.py)
    "kube-state-metrics-telemetry": 26088,  # kube-state-metrics' own metrics
    "gpu-sim": 26089,  # the simulated dcgm-exporter (local/sim/serve.py)
    "prometheus": 26092,  # the product's Prometheus (local/cluster/product.py)
    "collector": 26093,  # the collector's /metrics and /healthz
    "diagnosis": 26094,  # the diagnosis exporter's /metrics and /healthz (diagnose --all --port)
    # Kueue's visibility API server (visibility.kueue.x-k8s.io, through kube-apiserver's aggregation layer),
    # bound on the host's non-loopback address: the API server refuses a loopback endpoint (host_address)
    "kueue-visibility": 26095,
}
AWS_CREDENTIALS = {  # moto accepts any; real ones must never reach the local target
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_SESSION_TOKEN": "local",
}
STARTUP = 120.0  # seconds a component may take to answer


class LocalError(RuntimeError):
    pass


def host_address() -> str:
    """This machine's first non-loopback, non-link-local IPv4 address: what an EndpointSlice may point at
    (kube-apiserver rejects loopback and link-local endpoint addresses), so the aggregator can reach a server
    on this host. LocalError when there is none."""
    import fcntl
    import ipaddress
    import socket
    import struct

    found = []
    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                packed = fcntl.ioctl(
                    s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15])
                )  # SIOCGIFADDR
            except OSError:
                continue  # no IPv4 address on this interface
        ip = ipaddress.ip_address(packed[20:24])
        if not (ip.is_loopback or ip.is_link_local or ip.is_unspecified):
            found.append((name, str(ip)))
    if not found:
        raise LocalError(
            "no non-loopback IPv4 address on this machine: kube-apiserver's aggregation layer needs one to reach "
            "Kueue's visibility server (it refuses loopback endpoints); bring up a network interface"
        )
    return found[0][1]


def _listening_inodes(port: int, proc: Path = Path("/proc")) -> set[str]:
    """The socket inodes listening on `port` (TCP, v4 and v6), from the kernel's tables."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f[9])
    return inodes


def port_holders(port: int, proc: Path = Path("/proc")) -> tuple[bool, list[int]]:
    """Whether something listens on `port`, and the pids holding that socket (those this user can see)."""
    inodes = _listening_inodes(port, proc)
    if not inodes:
        return False, []
    wanted = {f"socket:[{i}]" for i in inodes}
    pids = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in wanted:
                    pids.append(int(entry.name))
                    break
            except OSError:
                continue
    return True, sorted(pids)


def _command(pid: int) -> str:
    try:
        argv = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    return " ".join(a.decode(errors="replace") for a in argv if a)[:120]


def check_ports_free(sup: Supervisor, ports: dict[str, int] | None = None) -> None:
    """Refuse to start when a port the target needs is held by a process that is not one of ours (a stale
    component of an earlier run a killed pytest left, say): LocalError naming the port and the pid, rather
    than a component failing later with `bind: address already in use`."""
    ours = {pid for proc, alive in sup.status().values() if alive for pid in process_group.members(proc.pid)}
    for name, port in (ports or PORTS).items():
        taken, pids = port_holders(port)
        if not taken or set(pids) & ours:
            continue
        who = ", ".join(f"pid {p} ({_command(p)})" for p in pids) or "a process this user cannot see"
        raise LocalError(
            f"port {port} ({name}) is already taken by {who}: a component of an earlier run? stop it "
            f"(`gpu-finops local down`, or kill {' '.join(map(str, pids)) or 'it'}) and run `local up` again"
        )


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


class Processes:
    """The shared half of LocalCluster: its run folder, PKI, supervisor and kubeconfig, and the waits."""

    run_dir: Path
    config: Config | None
    pki: Pki
    sup: Supervisor
    kubeconfig: Path

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
        from gpu_finops.clients.kube import Kube

        return Kube.from_kubeconfig(str(self.kubeconfig))
