"""The local rehearsal target, by concern: `cluster/` (the lifecycle and its processes), `sim/` (what stands
in for GPUs, DCGM, the device plugin and workloads), `charts/` (real Helm and a real API server checking
what `make up` would apply) and `build/` (the Go binaries, pinned and cached); `cli_local` is
`gpu-finops local`."""
