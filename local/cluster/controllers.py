"""The local target's controllers: kwok (node and pod stages), Kueue (webhooks on 127.0.0.1 with our
certificates; its visibility API through kube-apiserver's aggregation layer), the simulated device plugin, and
Karpenter's kwok provider reading the local AWS endpoint (moved from cluster.py)."""

from __future__ import annotations

import base64
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from gpu_finops.facts.kube_keys import KUEUE_GROUP, KUEUE_VISIBILITY_GROUP, KUEUE_VISIBILITY_VERSIONS
from infra.objects.kueue import KUEUE_DEVICE_CLASS_MAPPINGS, KUEUE_FEATURE_GATES  # both targets match
from local.build import binaries as build
from local.build import versions
from local.cluster.aws_endpoint import AwsEndpoint
from local.cluster.processes import (
    KUEUE_METRICS_CERTS,
    KUEUE_VISIBILITY_CERTS,
    PORTS,
    STARTUP,
    LocalError,
    host_address,
    module_dir,
)
from local.sim import catalog

VISIBILITY_SERVICE = "visibility-server"  # as Kueue's config/components/visibility names it
VISIBILITY_VERSIONS = KUEUE_VISIBILITY_VERSIONS  # what Kueue v0.19.2 serves (pkg/visibility/server.go)
# kwok renews each node's lease every quarter of its duration (pkg/kwok/controllers/controller.go, as the
# kubelet), from one process for every node where each kubelet renews its own. At 40 s, 1,250 nodes renewed
# 113 leases a second on a 2-core target. At 120 s with 4 lease workers, while Karpenter brought up 1,000
# nodes from zero, renewals fell about 200 s behind (each API call about 0.7 s on the loaded target) and the
# controller-manager marked 598 of 1,035 nodes Unknown: kwok's own capacity, not anything a fleet's kubelets
# share (docs/benchmarks.md). At 300 s a fleet of 1,250 needs 17 renewals a second, which 16 workers keep up
# with. The controller-manager's --node-monitor-grace-period (control_plane.NODE_MONITOR_GRACE) is kept above
# it, as the kubelet's 40 s lease sits under the default 50 s grace.
KWOK_NODE_LEASE_S = 300
# kwok's own defaults are 4 workers for pod stages, node stages and leases and 1 for pods-on-node syncs: at
# 10,000 GPUs the pods' status patches were the queue, and with Karpenter's nodes from zero the leases
# (docs/benchmarks.md). Node stages stay at 4: with 16 (the scale-out's run) act 2 once saw a pod fail on a
# new node, as kwok readies a node before Karpenter's registration taint reaches it (the race act 5 met). Each worker mostly waits on the API server, so more of
# them overlap its answers instead of using more CPU. A KwokConfiguration read from a file gets none of
# kwok's defaults (pkg/config/vars.go defaults only when no file names one: an options block without
# nodeLeaseParallelism stopped kwok at start), so every option its defaults set (v1alpha1's
# SetObjectDefaults_KwokConfiguration) is written here, at the default unless a comment says otherwise.
KWOK_OPTIONS = """apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  cidr: 10.0.0.0/24
  manageAllNodes: false
  enableDebuggingHandlers: true
  enableContentionProfiling: false
  enableProfilingHandler: true
  podPlayStageParallelism: 16  # default 4
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 16  # default 4
  podsOnNodeSyncParallelism: 4  # default 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
"""


def kueue_chart_controller_config() -> dict[str, Any]:
    """The `controller` and `clientConnection` sections of the Configuration Kueue's own chart installs (its
    values.yaml's managerConfig, at the pinned version), which the addons stack leaves at the chart's default.
    Without them the local Kueue ran every reconciler at controller-runtime's default of one at a time (its
    log's "Starting workers"), where the chart runs 5 Job reconcilers and 10 Workload ones: a twin would have
    measured a Kueue no one installs. With them, 1,000 Workloads admitted within 82 s had their Jobs
    unsuspended within 167 s on 2 cores (docs/benchmarks.md)."""
    path = module_dir(f"sigs.k8s.io/kueue@{versions.KUEUE}") / "charts/kueue/values.yaml"
    values = yaml.safe_load(path.read_text()) or {}
    text = (values.get("managerConfig") or {}).get("controllerManagerConfigYaml")
    shipped = yaml.safe_load(text) if isinstance(text, str) else None
    missing = [
        k for k in ("controller", "clientConnection") if not isinstance(shipped, dict) or k not in shipped
    ]
    if missing:
        raise LocalError(
            f"{path}: expected managerConfig.controllerManagerConfigYaml with {', '.join(missing)}, found "
            f"{'none' if shipped is None else sorted(shipped)}; read the chart's values at Kueue {versions.KUEUE}"
        )
    return {k: shipped[k] for k in ("controller", "clientConnection")}


def feature_gates_flag(gates: dict[str, bool]) -> str:
    return "--feature-gates=" + ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items()))


def visibility_objects(address: str, ca_bundle: str) -> list[dict[str, Any]]:
    """Kueue's visibility API made reachable: one APIService per version served, pointing at a selector-less
    Service whose manual EndpointSlice names this host (`address`, never loopback: the API server refuses
    it) on the visibility port; the aggregator checks the server's cert against `ca_bundle` (base64)."""
    port = PORTS["kueue-visibility"]
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": VISIBILITY_SERVICE, "namespace": "kueue-system"},
            "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{VISIBILITY_SERVICE}-host",
                "namespace": "kueue-system",
                # a manual slice: no controller owns it, and the Service has no selector to replace it
                "labels": {
                    "kubernetes.io/service-name": VISIBILITY_SERVICE,
                    "endpointslice.kubernetes.io/managed-by": "gpu-finops.local",
                },
            },
            "addressType": "IPv4",
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        },
    ]
    for version in VISIBILITY_VERSIONS:
        out.append(
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": f"{version}.{KUEUE_VISIBILITY_GROUP}"},
                "spec": {
                    "group": KUEUE_VISIBILITY_GROUP,
                    "version": version,
                    "groupPriorityMinimum": 100,
                    "versionPriority": 100,
                    "caBundle": ca_bundle,
                    "service": {"name": VISIBILITY_SERVICE, "namespace": "kueue-system", "port": 443},
                },
            }
        )
    return out


class Controllers(AwsEndpoint):
    def stages_config(self) -> Path:
        kwok = module_dir(f"sigs.k8s.io/kwok@{versions.KWOK}") / "kustomize" / "stage"
        files = [
            kwok / "node/fast/node-initialize.yaml",
            kwok / "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
            kwok / "pod/general/pod-create.yaml",
            kwok / "pod/general/pod-ready.yaml",
            kwok / "pod/general/pod-complete.yaml",
            kwok / "pod/general/pod-delete.yaml",
            Path(__file__).parents[1]
            / "sim"
            / "stages"
            / "pod-terminate.yaml",  # the kubelet's graceful stop
        ]
        out = self.run_dir / "kwok-stages.yaml"
        out.write_text("\n---\n".join([KWOK_OPTIONS, *(f.read_text() for f in files)]))
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
                f"--node-lease-duration-seconds={KWOK_NODE_LEASE_S}",
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
                if not (groups & {KUEUE_GROUP} or (groups == {"batch"} and resources == {"jobs"})):
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

    def start_kueue(self, bins: Path, gates: dict[str, bool] | None = None) -> None:
        """Kueue with `gates` (default KUEUE_FEATURE_GATES); with VisibilityOnDemand on, its visibility API
        registered with the aggregator and waited for until Available."""
        gates = KUEUE_FEATURE_GATES if gates is None else gates
        visibility = gates.get("VisibilityOnDemand", True)  # on by default since Kueue v0.9
        address = host_address() if visibility else None
        certs = self.run_dir / "kueue-certs"
        certs.mkdir(exist_ok=True)
        crt, key = self.pki.pair("webhook")
        shutil.copy(crt, certs / "tls.crt")
        shutil.copy(key, certs / "tls.key")
        KUEUE_METRICS_CERTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(crt, KUEUE_METRICS_CERTS / "tls.crt")
        shutil.copy(key, KUEUE_METRICS_CERTS / "tls.key")
        vis_crt, vis_key = self.pki.visibility_serving(VISIBILITY_SERVICE, "kueue-system")
        KUEUE_VISIBILITY_CERTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(vis_crt, KUEUE_VISIBILITY_CERTS / "tls.crt")
        shutil.copy(vis_key, KUEUE_VISIBILITY_CERTS / "tls.key")
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
                    "resources": {"deviceClassMappings": KUEUE_DEVICE_CLASS_MAPPINGS},
                    **kueue_chart_controller_config(),
                    **(
                        {"visibilityServer": {"bindAddress": address, "bindPort": PORTS["kueue-visibility"]}}
                        if address
                        else {}
                    ),
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
                feature_gates_flag(gates),
                # the visibility server's delegated authentication and authorization read this flag (not
                # $KUBECONFIG) to reach kube-apiserver (pkg/visibility/server.go)
                f"--kubeconfig={self.kubeconfig}",
                "--zap-log-level=info",
            ],
            env={"KUBECONFIG": str(self.kubeconfig)},
        )
        self._wait("kueue", f"http://127.0.0.1:{PORTS['kueue-health']}/readyz", tls=False)
        k.apply(self.kueue_webhooks())
        if address:
            ca = base64.b64encode(self.pki.ca_crt.read_bytes()).decode()
            k.apply(visibility_objects(address, ca))
            self.wait_visibility_available()

    def wait_visibility_available(self) -> None:
        """Until every visibility APIService is Available (the aggregator reached Kueue's server); LocalError
        with the condition's message and Kueue's log tail when it is not within STARTUP."""
        from harness.waits import eventually

        reg = self.kube().dynamic().resources.get(api_version="apiregistration.k8s.io/v1", kind="APIService")

        def observe() -> dict[str, str]:
            crashed = self.sup.exited("kueue")
            if crashed is not None:
                raise LocalError(f"kueue exited; end of its log:\n{crashed}")
            out = {}
            for version in VISIBILITY_VERSIONS:
                conds = (
                    reg.get(name=f"{version}.{KUEUE_VISIBILITY_GROUP}").to_dict().get("status") or {}
                ).get("conditions") or []
                available = next((c for c in conds if c.get("type") == "Available"), {})
                out[version] = (
                    "True"
                    if available.get("status") == "True"
                    else f"{available.get('reason')}: {available.get('message')}"
                )
            return out

        try:
            eventually(
                observe,
                lambda got: all(v == "True" for v in got.values()),
                timeout=STARTUP,
                interval=1.0,
                what="Kueue's visibility APIServices Available",
            )
        except AssertionError as exc:
            log = (self.run_dir / "logs" / "kueue.log").read_text()[-2000:]
            raise LocalError(f"{exc}\nkueue log tail:\n{log}") from None

    def restart_kueue(self, gates: dict[str, bool]) -> None:
        """Restart Kueue with these feature gates (the recorder's gates-off answers, and back); its
        visibility APIServices stay registered, so with VisibilityOnDemand off they answer 503."""
        self.sup.stop("kueue")
        self.start_kueue(build.bin_dir(), gates)

    def start_device_plugin(self) -> None:
        """The simulated device plugin, GFD and kubelet device allocation for kwok GPU nodes."""
        self.sup.start(
            "device-plugin",
            [
                sys.executable,
                "-m",
                "local.sim.device_plugin",
                f"--kubeconfig={self.kubeconfig}",
                f"--port={PORTS['device-plugin']}",
                f"--state={self.run_dir / 'device-allocations.json'}",
            ],
            cwd=Path(__file__).resolve().parents[2],
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
