"""Whether this machine can run CUDA kernels, for the benchmarks that need a GPU: torch's CPU-only build (what
`make setup` installs where there is no NVIDIA driver) is known from its installed metadata, without importing torch
(~2.5 s of CPU), so the benchmark says at once that there is nothing to measure; any other build is asked."""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
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


def variants_out(doc: str, capability: tuple[int, int] = (0, 0), needs: str = "a CUDA GPU") -> Path | None:
    """A variants benchmark's command line (`--out`, the results folder) and its check for a GPU: the folder to write
    the device's table under, or None (said in one line) where there is no CUDA GPU of `capability` or newer."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available() or torch.cuda.get_device_capability() < capability:
        print(f"{sys.argv[0]} needs {needs}: none here, nothing measured.")
        return None
    return args.out
