"""gpu-finops: the single command-line entry point over infra, teardown, finops and the local target."""
