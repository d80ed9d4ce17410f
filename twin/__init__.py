"""The fleet twin: a workload trace replayed on the local target under Kueue policies (docs/twin.md)."""
