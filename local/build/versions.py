"""Pinned versions of everything the local rehearsal target builds from Go modules.

Each pin sits under a `# renovate:` comment naming its datasource: renovate.json's regex manager for this
file reads them (tests/ci/test_renovate.py fails on a pin without one)."""

from __future__ import annotations

# renovate: datasource=go depName=k8s.io/kubernetes
KUBERNETES = "v1.36.3"  # Kueue v0.19 uses client-go v0.36; Karpenter v1.15 v0.37 (one minor of skew is fine)
# renovate: datasource=go depName=go.etcd.io/etcd/server/v3
ETCD = "v3.6.16"
# renovate: datasource=go depName=sigs.k8s.io/kwok
KWOK = "v0.8.0"
# renovate: datasource=go depName=sigs.k8s.io/kueue
KUEUE = "v0.19.2"
# kube-state-metrics, the ledger's node and pod input (gpu_finops/ledger/rules.yaml): the proxy lists no versions
# for k8s.io/kube-state-metrics/v2, but exact versions are served; the AWS Prometheus chart's subchart runs
# the same release line. v2.20.0 is built on client-go v0.36, the version the one module links (2.18.0 does not
# compile against it: cache.Store gained Bookmark); the ledger's inputs are unchanged from 2.18.0 (docs/ledger.md).
# renovate: datasource=go depName=k8s.io/kube-state-metrics/v2
KUBE_STATE_METRICS = "v2.20.0"
# renovate: datasource=go depName=sigs.k8s.io/karpenter
KARPENTER = "v1.15.0"  # the version the addons stack installs on AWS; declares go 1.26.9 (docs/infra.md: why not 1.15.1)
# The Go toolchain every local build uses, fetched through the Go module proxy (golang.org/toolchain) when
# the installed Go is older: Karpenter v1.15.0 and karpenter-provider-aws v1.15.0 need go >= 1.26.9 (v1.15.2 1.26.11).
# renovate: datasource=golang-version depName=go
GO_TOOLCHAIN = "go1.26.11"
# The AWS provider whose interruption controller the local Karpenter runs (local/build/unified/karpenter-kwok/main.go): the
# same version as core, since the provider pins core exactly.
# renovate: datasource=go depName=github.com/aws/karpenter-provider-aws
KARPENTER_AWS = "v1.15.0"
# prometheus-operator, whose monitoring.coreos.com CRDs (PrometheusRule, ServiceMonitor) the gpu-finops chart's
# objects are dry-run against (local/charts/chart_render.py): the module's example/prometheus-operator-crd/.
# renovate: datasource=go depName=github.com/prometheus-operator/prometheus-operator
PROMETHEUS_OPERATOR = "v0.85.0"
# Helm, for `helm template` of the Karpenter and Kueue charts before any apply (local/charts/validate_charts.py).
# renovate: datasource=go depName=helm.sh/helm/v3
HELM = "v3.22.0"
# OpenTofu, the Terraform every stack is validated, planned and applied with on this machine
# (local/build/terraform.py) and the release the nightly installs (.github/workflows/nightly.yml).
# renovate: datasource=go depName=github.com/opentofu/opentofu
OPENTOFU = "v1.12.6"
# The providers the stacks require, as the Go module proxy serves them: their release tags are refused here
# (403 for hashicorp/terraform-provider-aws v6.69.1, the stacks' pin), so these are the newest commits it lists
# (pseudo-versions of the main branches: aws CHANGELOG 6.48.0 unreleased, June 2026; kubernetes after 3.2.1;
# helm after 3.2.0). docs/local.md, Terraform on this machine, lists what that changes for our resource types.
# renovate: datasource=go depName=github.com/hashicorp/terraform-provider-aws
AWS_PROVIDER = "v1.60.1-0.20260602190131-5f2286d6d836"
# renovate: datasource=go depName=github.com/hashicorp/terraform-provider-kubernetes
KUBERNETES_PROVIDER = "v1.13.4-0.20260821094251-3a33fb6cc605"
# renovate: datasource=go depName=github.com/hashicorp/terraform-provider-helm
HELM_PROVIDER = "v1.3.3-0.20260629194918-a4f1c1d8b008"
