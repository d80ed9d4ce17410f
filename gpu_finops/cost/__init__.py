"""The cost side of the product: the collector (prices x instance-seconds, idle share from SM_ACTIVE) and its
rates and pricing, the cost store, GPU holdings per tenant, the FOCUS export, the reaper and the cost reports.
It reads the cluster through `gpu_finops/clients/` and imports nothing else of ours but `gpu_finops/facts/`, so the deployed
collector's image holds the entry point, `finops`, `clients` and `facts` only."""
