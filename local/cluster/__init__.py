"""The local target's lifecycle: `LocalCluster` (lifecycle.py) starts and stops the real control plane,
etcd and the controllers (kwok, Kueue, Karpenter, kube-state-metrics, Prometheus) as supervised processes,
with their certificates, ports, kubeconfig and the moto endpoint that stands in for AWS."""
