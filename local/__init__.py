"""The local rehearsal target: supervised processes, Prometheus, and the GPU simulator exporter."""
