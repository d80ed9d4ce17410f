"""Moved: the node reader is finops/nodes.py (the deployed collector needs it and imports no harness).

Kept only for tests/local/test_acts_on_local.py, which imports these names from here; delete this
module once that test imports them from finops.nodes and facts.kube_keys."""

from facts.kube_keys import ANNOTATION_DO_NOT_DISRUPT
from finops.nodes import KubeNodeSource

__all__ = ["ANNOTATION_DO_NOT_DISRUPT", "KubeNodeSource"]
