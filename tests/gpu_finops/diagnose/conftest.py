"""The diagnosis tests share the finops tests' simulated DCGM exporter and the real Prometheus over it."""

from tests.gpu_finops.cost.conftest import prometheus, sim  # noqa: F401  (fixtures, used by name)
