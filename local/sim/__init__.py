"""What the local target simulates where AWS would have hardware: GPUs and their DCGM series (`gpu_sim`,
`dcgm_sim`), the NVIDIA device plugin and GFD (`device_plugin`), workloads that play a GPU profile
(`workload_sim`, `profiles`), the kwok provider's instance types (`catalog`) and kwok's stages (`stages/`)."""
