"""Moved: the NodeClaim reader is finops/karpenter.py (the reaper needs it and imports no harness).

Kept only for tests/local/test_acts_on_local.py, which imports `KarpenterClient` from here; delete this
module once that test imports it from finops.karpenter."""

from finops.karpenter import KarpenterClient

__all__ = ["KarpenterClient"]
