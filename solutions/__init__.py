"""Reference kernels for every puzzle, and production kernels (GPTQ split-K) with benchmarks."""
