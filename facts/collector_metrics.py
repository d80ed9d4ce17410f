"""The names of the series the collector exports on /metrics (finops/metrics.py), written once here so
the alert rules and dashboards (ledger/alerts.py, infra/dashboards/) query what the collector serves.

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
