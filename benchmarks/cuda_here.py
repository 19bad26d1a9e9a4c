"""Whether this machine can run CUDA kernels, for the benchmarks that need a GPU: torch's CPU-only build (what
`make setup` installs where there is no NVIDIA driver) is known from its installed metadata, without importing torch
(~2.5 s of CPU), so the benchmark says at once that there is nothing to measure; any other build is asked."""

from __future__ import annotations

import importlib.metadata


def cuda_available() -> bool:
    try:
        if importlib.metadata.version("torch").endswith("+cpu"):
            return False
    except importlib.metadata.PackageNotFoundError:
        pass  # not installed as a distribution: torch itself answers (or its import says what is missing)
    import torch

    return torch.cuda.is_available()
