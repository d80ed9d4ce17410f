"""I/O that observes: Kubernetes, AWS and Prometheus readers returning plain dataclasses; waits."""
