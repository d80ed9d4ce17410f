"""`python -m local.sim.serve`: the GPU simulator as a standing process, the local target's stand-in for
dcgm-exporter (what `gpu-finops local up` starts and its Prometheus scrapes): DCGM-shaped series for every
kwok GPU node, exported where the project's metrics CSV exports them. Runs until SIGTERM."""

from __future__ import annotations

import argparse
import signal
import threading

from gpu_finops.clients.kube import Kube
from gpu_finops.dcgm.metrics_csv import exported_fields, render
from local.sim.gpu_sim import ClusterGpuSimulator


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pod-resources-url", default=None)
    parser.add_argument("--period", type=float, default=5.0, help="seconds between reads of the cluster")
    args = parser.parse_args(argv)
    sim = ClusterGpuSimulator(
        Kube.from_kubeconfig(args.kubeconfig),
        exported_fields(render()),
        period=args.period,
        pod_resources_url=args.pod_resources_url,
    )
    sim.start(args.port)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait()
    sim.stop()


if __name__ == "__main__":
    main()
