"""The acts' I/O that observes: Kubernetes, AWS and Prometheus readings returned as `assertions/`'
plain dataclasses (through `gpu_finops/clients/`' readers), and the waits that report their last observation."""
