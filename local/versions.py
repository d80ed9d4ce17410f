"""Pinned versions of everything the local rehearsal target builds from Go modules."""

from __future__ import annotations

KUBERNETES = "v1.36.3"  # Kueue v0.19 uses client-go v0.36; Karpenter v1.14 v0.35 (one minor of skew is fine)
ETCD = "v3.6.16"
KWOK = "v0.8.0"
KUEUE = "v0.19.2"
KARPENTER = "v1.14.1"  # v1.14.2+ needs a newer Go than this machine's 1.26.8
