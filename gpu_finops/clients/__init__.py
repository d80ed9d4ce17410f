"""The readers every product room and the harness share: Kubernetes (`kube`), Prometheus (`promql`),
GPU nodes (`nodes`) and Karpenter's NodeClaims (`karpenter`). They import only `gpu_finops/facts/`; the collector,
the ledger, the diagnosis and the acts' observers all read the cluster through them."""
