"""The names of the series the collector (gpu_finops/cost/metrics.py) and the diagnosis exporter
(gpu_finops/diagnose/exporter.py) export on /metrics, written once here so the alert rules and dashboards
(gpu_finops/ledger/alerts.py, tools/dashboards.py) query what they serve.

prometheus_client appends `_total` to a counter's name on the wire; the `*_TOTAL` names are what
Prometheus stores and what a query must say.
"""

from __future__ import annotations

CYCLE_SECONDS = "gpu_finops_collector_cycle_seconds"
RECORDS_WRITTEN = "gpu_finops_collector_records_written"
MISSING_METRIC = "gpu_finops_collector_missing_metric"
CYCLE_FAILURES = "gpu_finops_collector_cycle_failures"
CYCLE_FAILURES_TOTAL = f"{CYCLE_FAILURES}_total"
HEALTHY = "gpu_finops_collector_healthy"
# the end of the last interval whose records were written (unix seconds): records go stale when it stops
LAST_RECORD_END = "gpu_finops_collector_last_record_end_timestamp_seconds"
NODE_IDLE_DOLLARS = "gpu_finops_node_idle_dollars"  # idle dollars of the node in the last interval
# what one GPU of the node cost per hour in the last interval (EffectiveCost / hours / GPUs)
GPU_DOLLARS_PER_HOUR = "gpu_finops_gpu_dollars_per_hour"
NODE_IDLE_DOLLARS_PER_HOUR = "gpu_finops_node_idle_dollars_per_hour"  # idle cost / hours, last interval
# a node's idle dollars per hour split by who held its GPUs in the last interval (holdings recorded);
# tenant "" is the part nobody held
TENANT_IDLE_DOLLARS_PER_HOUR = "gpu_finops_tenant_idle_dollars_per_hour"
# cards' worth of one device of a GPU resource on a node, as the held-GPU model reads the node (a MIG slice's
# share, 1/replicas for a replica, 1 for a whole card); labels node and resource, the resource spelled as
# kube-state-metrics spells it (nvidia_com_mig_1g_10gb), so the ledger's rules join the two
DEVICE_SHARE = "gpu_finops_device_share"
# a node's GPUs as its DRA driver publishes them in ResourceSlices, in cards, where the node advertises no GPU
# resource (kube-state-metrics has no ResourceSlice series): labels node and state, installed (every device) or
# schedulable (devices no NoSchedule/NoExecute taint keeps off); the ledger's installed and schedulable rungs
DRA_GPUS = "gpu_finops_dra_gpus"
# the cards a pod holds through its ResourceClaims' allocated devices (a claim template or nvidia.com/gpu served
# from DRA), as the collector last read them: labels namespace, pod, node; the ledger's requests of such pods
POD_DRA_GPUS = "gpu_finops_pod_dra_gpus"
# 1 for a GPU node the held-GPU model refuses (the collector's /healthz says why): no share of its devices may be
# guessed, so the ledger counts none of them and names the node
NODE_UNREADABLE = "gpu_finops_node_unreadable"

# The diagnosis exporter (`gpu-finops diagnose --all --port`): pending GPU pods by the diagnosis' first
# cause (admission, allocation, memory, placement, application; `unexplained` when every check was made
# and none explains, `not-checked` when none explains and some could not be made) and namespace. Whenever
# the pending pods were listed, every cause has a series with namespace "" and value 0 (a fleet-wide zero
# that is a reading); when the diagnosis could not run there is no such series at all, and
# DIAGNOSIS_HEALTHY is 0 (/healthz says why).
PENDING_GPU_PODS = "gpu_finops_pending_gpu_pods"
DIAGNOSIS_HEALTHY = "gpu_finops_diagnosis_healthy"
# when the pending pods were last listed and diagnosed (unix seconds): stale when it stops moving
DIAGNOSIS_LAST_RUN = "gpu_finops_diagnosis_last_run_timestamp_seconds"
