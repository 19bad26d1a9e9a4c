"""Whether this machine can run CUDA kernels, for the benchmarks that need a GPU: torch's CPU-only build (what
`make setup` installs where there is no NVIDIA driver) is known from its installed metadata, without importing torch
(~2.5 s of CPU), so the benchmark says at once that there is nothing to measure; any other build is asked."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path


def cuda_available() -> bool:
    try:
        if importlib.metadata.version("torch").endswith("+cpu"):
            return False
    except importlib.metadata.PackageNotFoundError:
        pass  # not installed as a distribution: torch itself answers (or its import says what is missing)
    import torch

    return torch.cuda.is_available()


def write_device_table(out: Path, filename: str, lines: list[str]) -> Path:
    """A benchmark's Markdown table written under `out`/<this GPU's name, lower-case, dashed> and printed: where
    the recorded results of each device live (benchmarks/results/nvidia-h200/...)."""
    import torch

    device_dir = out / re.sub(r"[^A-Za-z0-9]+", "-", torch.cuda.get_device_name()).strip("-").lower()
    device_dir.mkdir(parents=True, exist_ok=True)
    path = device_dir / filename
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return path
