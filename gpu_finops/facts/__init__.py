"""The ground floor: facts every package shares, written once.

The typed config and the names derived from it, Kubernetes and AWS keys, DCGM field names, the GPU
instance-type catalog, named timeouts and the one timestamp format. It imports nothing of the project's
other packages, and each of them may import it (`lint-imports` checks both; docs/architecture.md).
"""
