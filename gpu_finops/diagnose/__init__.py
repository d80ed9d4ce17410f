"""Why is this GPU job waiting while the dashboard says the GPUs are idle?

A pure diagnosis (`engine`; its checks in `admission`, `devices`, `placement`, over the pod's `view`)
over plain observed state (`model`), walked in the order
admission -> allocation -> memory -> placement -> application; Kubernetes' placement rules evaluated
per node (`scheduling`); DCGM activity classes and thresholds (`activity`); the two GPU views
(`gpus`). The observers (`kube_observer`, `prom_observer`) do the I/O.
"""

from gpu_finops.diagnose.engine import NotDiagnosable, diagnose_all, diagnose_pod, diagnose_workload
from gpu_finops.diagnose.model import ORDER, Cluster, Diagnosis, Finding

__all__ = [
    "ORDER",
    "Cluster",
    "Diagnosis",
    "Finding",
    "NotDiagnosable",
    "diagnose_all",
    "diagnose_pod",
    "diagnose_workload",
]
