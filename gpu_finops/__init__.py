"""gpu-finops, the product: the cost collector and its rates and store, FOCUS export and the reaper
(`cost`), the fleet ledger (`ledger`), the pending-GPU-pod diagnosis (`diagnose`), the dcgm-exporter CSV
(`dcgm`), the run report (`report`), over the readers (`clients`) and the ground floor (`facts`), and the one
command line (`cli`). The harness that stands the stack up and proves its claims (infra/, acts/,
assertions/, teardown/, local/, twin/) lives beside it in a checkout and is not part of this package."""
