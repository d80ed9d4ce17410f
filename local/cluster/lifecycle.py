"""`gpu-finops local up|down|status`: the rehearsal cluster on this machine, no Docker.

Real kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok (node and pod stages, so Job
pods run and complete), Kueue (webhooks served on 127.0.0.1 with our certificates) and Karpenter's kwok
provider (GPU instance types with spot and on-demand prices), each a supervised process with its own
log in `.local/logs/`. Then the same NodePool, Kueue queues and priority classes the addons stack ships.

The parts: `processes` (ports, waits, kubeconfig), `control_plane`, `controllers` (kwok, Kueue, the device
plugin, Karpenter) and `aws_endpoint` (moto); this module puts them together and runs the lifecycle.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_finops.facts.config import Config, load_config
from harness.waits import eventually
from local.build import binaries as build
from local.charts import render
from local.cluster import kube_state_metrics, product
from local.cluster.certs import Pki
from local.cluster.control_plane import ControlPlane
from local.cluster.controllers import Controllers
from local.cluster.processes import (
    KUEUE_METRICS_CERTS,
    KUEUE_VISIBILITY_CERTS,
    PORTS,
    RUN_DIR,
    STARTUP,
    LocalError,
    check_ports_free,
)
from local.cluster.supervisor import Supervisor

__all__ = ["PORTS", "LocalCluster", "LocalError"]


@dataclass
class LocalCluster(ControlPlane, Controllers):
    run_dir: Path = RUN_DIR
    config: Config | None = None

    def __post_init__(self) -> None:
        self.config = self.config or load_config()
        self.pki = Pki(self.run_dir / "pki")
        self.sup = Supervisor(self.run_dir)
        self.kubeconfig = self.run_dir / "kubeconfig"

    # --- lifecycle -----------------------------------------------------------------------------------
    def up(self, echo=print) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        check_ports_free(self.sup)  # a stale component of an earlier run: refused, naming port and pid
        echo("building (cached after the first run)...")
        bins = build.build_all(echo)
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
        echo("the gpu-finops chart (helm install), the simulated exporter, Prometheus, the collector...")
        product.start(self, self.pod_resources_url)
        self.describe()
        echo(f"up: KUBECONFIG={self.kubeconfig}")
        echo(
            f"Prometheus: {product.prometheus_url()} (the chart's rules; the simulated exporter, kube-state-metrics)"
        )
        echo("for the product's commands (gpus, ledger ladder, diagnose --all, cost report), in your shell:")
        echo('  eval "$(gpu-finops local env)"   # or:')
        echo("  " + product.exports(self).replace("\n", "\n  "))

    @property
    def pod_resources_url(self) -> str:
        return f"http://127.0.0.1:{PORTS['device-plugin']}"

    def describe(self) -> Path:
        """What the acts need besides the kubeconfig: the AWS endpoint and queue, the pod-resources API."""
        path = self.run_dir / "target.json"
        path.write_text(
            json.dumps(
                {
                    "aws_endpoint": self.aws_endpoint,
                    "region": self.config.region,  # type: ignore[union-attr]
                    "interruption_queue": self.interruption_queue,
                    "pod_resources_url": self.pod_resources_url,
                    "prometheus_url": product.prometheus_url(),
                    "cost_store": str(product.store_path(self)),
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
            (KUEUE_VISIBILITY_CERTS / f).unlink(missing_ok=True)
        shutil.rmtree(self.run_dir / "etcd", ignore_errors=True)
        return stopped

    def status(self) -> dict[str, bool]:
        return {name: alive for name, (_, alive) in self.sup.status().items()}
