"""Kubernetes objects the addons stack ships, built from the config: one source of truth, rendered for
AWS (a local Helm chart) and for the local rehearsal target (local/charts/render.py).

By concern: `karpenter` (NodePools, the shared pool's NodeOverlay, the EC2NodeClass, the chart's values),
`kueue` (flavors, queues, tenant namespaces, priorities), `device_plugin` (whole cards and time-slicing)
and `monitoring` (dcgm-exporter, Prometheus with the ledger rules, the collector).
"""
