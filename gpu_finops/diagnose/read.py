"""The cluster read for a diagnosis, once: what `gpu-finops diagnose` and act 7 both diagnose."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpu_finops.diagnose.model import Cluster, PodFacts
from gpu_finops.facts.dcgm_inputs import PINNED, Spelling


def _direct(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def read_cluster(
    observer: Any,
    prometheus_url: str,
    window_s: int,
    *,
    retry_for: float,
    namespace: str | None = None,
    kube_call: Callable[..., Any] = _direct,
    spelling: Spelling = PINNED,
) -> tuple[list[PodFacts], Cluster]:
    """Pods, nodes, holders and workloads from Kubernetes (through `observer`, a KubeObserver; `kube_call`
    wraps the read, as the CLI's turns an unreachable API server into exit 3), Kueue's queue positions of the
    workloads it holds back (`gpu_finops.diagnose.kueue_visibility`), and DCGM activity over the
    last `window_s` seconds from Prometheus; when Prometheus cannot answer, the Cluster says why instead
    of holding statistics."""
    from dataclasses import replace

    from gpu_finops.diagnose.kueue_visibility import kube_get, read_signals
    from gpu_finops.diagnose.prom_observer import read_or_reason

    pods, nodes, holders, workloads = kube_call(observer.observe, namespace)
    # Kueue's own word on the workloads it holds back: positions from its visibility API (a 403, 404 or 503
    # is a stated fallback, not an error; an unreachable API server is, as for every other read)
    signals = kube_call(read_signals, kube_get(observer.kube), workloads)
    dra = kube_call(observer.dra)  # the DRA driver's devices and the claims; None before resource.k8s.io/v1
    workloads = [replace(w, kueue=signals[w.key]) if w.key in signals else w for w in workloads]
    stats, why = read_or_reason(prometheus_url, window_s, retry_for=retry_for, spelling=spelling)
    cluster = Cluster(
        nodes=tuple(nodes),
        holders=tuple(holders),
        workloads=tuple(workloads),
        stats=None if stats is None else tuple(stats),
        stats_unavailable=why,
        window_s=window_s,
        dra=dra,
    )
    return list(pods), cluster
