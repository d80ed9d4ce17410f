"""The local target's control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and
the CRDs of Kueue, Karpenter and its kwok provider (moved from cluster.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.waits import eventually
from local.build import versions
from local.cluster.certs import FRONT_PROXY_CLIENT
from local.cluster.processes import PORTS, STARTUP, Processes, module_dir

# above kwok's node lease (controllers.KWOK_NODE_LEASE_S, renewed every 75 s): a node is NotReady only after
# missing about five renewals, as a kubelet's 40 s lease (renewed every 10 s) sits under the default 50 s grace
NODE_MONITOR_GRACE = "360s"
# the controller-manager's client, each controller's own: 20 requests a second (burst 30) by default. At 1,000
# Jobs ending together the Job controller's queue held 882 Jobs and its requests had waited 2,470 s in the
# client's rate limiter (rest_client_rate_limiter_duration_seconds); a
# fleet's control plane is run with more: Kubernetes' 5,000-node scalability jobs (test-infra, cluster-env
# CONTROLLER_MANAGER_TEST_ARGS) use 100 and 100
CONTROLLER_MANAGER_API_QPS = (100, 100)  # --kube-api-qps, --kube-api-burst
# Every controller but the taint-eviction one. Karpenter's kwok provider creates a Node carrying
# karpenter.sh/unregistered:NoExecute and Karpenter removes it on registration; the scheduler binds a pod as soon
# as its cache sees the taint gone, while the taint-eviction controller's node cache may not yet, so it deletes a
# pod that never ran (TaintManagerEviction; in three of five CI runs on a 2-core machine, a bare pod or a Job with
# backoffLimit 0 was lost). On EKS the kubelet registers with that taint and the node becomes Ready later, so the
# two caches agree long before a pod can bind. What that controller does besides, evicting pods from a NotReady
# or unreachable node after 300 s, never happens here: kwok keeps its nodes Ready (NODE_MONITOR_GRACE).
CONTROLLERS = "*,-taint-eviction-controller"


class ControlPlane(Processes):
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
        proxy_crt, proxy_key = pki.pair(FRONT_PROXY_CLIENT)
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
                # the aggregation layer, for Kueue's visibility API (an APIService served by Kueue's process):
                # the aggregator proxies with the front proxy's client cert and names the user in headers,
                # which Kueue trusts through kube-system/extension-apiserver-authentication (written from
                # these flags); with no kube-proxy here it dials the Service's endpoint, not its cluster IP
                f"--requestheader-client-ca-file={pki.front_proxy_ca}",
                f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-uid-headers=X-Remote-Uid",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={proxy_crt}",
                f"--proxy-client-key-file={proxy_key}",
                "--enable-aggregator-routing=true",
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
                f"--node-monitor-grace-period={NODE_MONITOR_GRACE}",
                f"--controllers={CONTROLLERS}",
                f"--kube-api-qps={CONTROLLER_MANAGER_API_QPS[0]}",
                f"--kube-api-burst={CONTROLLER_MANAGER_API_QPS[1]}",
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
