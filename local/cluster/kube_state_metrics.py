"""kube-state-metrics on the local target: the ledger's node and pod input, built from its Go module
(local/build/binaries.py) and run as a supervised process against the local API server with the admin kubeconfig,
as the other controllers are.

It runs with the label allowlist the ledger's conventions need (docs/ledger.md): the unschedulable-reason
and GFD's replicas label on nodes, the workload-class label on pods; and only the resources the rules
read (nodes, pods), so a scrape stays small.
"""

from __future__ import annotations

from pathlib import Path

from gpu_finops.ledger.conventions import Conventions
from local.cluster.processes import PORTS

PORT = PORTS["kube-state-metrics"]  # /metrics, /healthz, /livez, /readyz
TELEMETRY_PORT = PORTS["kube-state-metrics-telemetry"]  # kube-state-metrics' own metrics
RESOURCES = ("nodes", "pods")
NAME = "kube-state-metrics"


def allowlist(c: Conventions | None = None) -> str:
    """The `--metric-labels-allowlist` value the ledger's rules need (the AWS chart gets the same)."""
    return ",".join((c or Conventions()).ksm_labels_allowlist)


def argv(binary: Path, kubeconfig: Path, c: Conventions | None = None) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        "--host=127.0.0.1",
        f"--port={PORT}",
        "--telemetry-host=127.0.0.1",
        f"--telemetry-port={TELEMETRY_PORT}",
        f"--resources={','.join(RESOURCES)}",
        f"--metric-labels-allowlist={allowlist(c)}",
    ]


def url() -> str:
    return f"http://127.0.0.1:{PORT}"


def start(cluster, bins: Path) -> None:
    """Start it under the cluster's supervisor and wait until it answers (a LocalCluster's helper)."""
    cluster.sup.start(NAME, argv(bins / NAME, cluster.kubeconfig))
    cluster._wait(NAME, f"{url()}/livez", ok="OK", tls=False)
