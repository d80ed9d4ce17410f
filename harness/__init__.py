"""The harness's plumbing below infra/, local/ and the nightly guard: the acts' observers (Kubernetes, AWS and
Prometheus readings returned as `assertions/`' plain dataclasses, through `gpu_finops/clients/`' readers), the
waits that report their last observation, and process groups as the kernel sees them (`process_group.py`,
shared by the guard's deadline and the local target's supervisor)."""
