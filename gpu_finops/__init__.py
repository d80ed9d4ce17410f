"""gpu-finops: the single command-line entry point over the product (finops, ledger, diagnose, report), infra,
teardown and the local target."""
