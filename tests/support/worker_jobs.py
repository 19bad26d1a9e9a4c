"""Jobs the GPU worker's tests send to the worker (it imports them from here, by name)."""

from __future__ import annotations

import ctypes

import torch
import triton


def launch_elementwise(kernel, n: int, device: str = "cpu") -> torch.Tensor:
    """Launch an elementwise kernel (x, z, N0) with a grid that asks the kernel's meta for B0."""
    x = torch.arange(n, dtype=torch.float32, device=device)
    z = torch.empty_like(x)
    kernel[lambda meta: (triton.cdiv(n, meta["B0"]),)](x, z, n)
    return z.cpu()


def segfault() -> None:
    ctypes.string_at(0)  # reads address 0: the process dies of SIGSEGV


def print_then_segfault(lines: int) -> None:
    """Prints from C (as a GPU's printf does) and dies: on an H200 a kernel printing long strings in a loop did."""
    libc = ctypes.CDLL(None)
    libc.printf(b"about to crash\n")
    for _ in range(lines):
        libc.printf(b"%s\n", b"x" * 1000)
    libc.fflush(None)
    segfault()


def launch_each_config(kernel, n: int) -> list[tuple[dict, int, list[float]]]:
    """An autotuned kernel under each of its configs (the interpreter cannot time them to pick one)."""
    out = []
    for config in kernel.configs:
        x = torch.arange(n, dtype=torch.float32)
        z = torch.empty_like(x)
        kernel.fn[(triton.cdiv(n, config.kwargs["B0"]),)](x, z, n, **config.kwargs)
        out.append((dict(config.kwargs), config.num_warps, z.tolist()))
    return out
