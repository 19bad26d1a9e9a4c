"""This GPU's rates for arithmetic off the tensor cores, measured as kernels reach them: FP32 fused
multiply-adds (the FMA pipes) and exponentials (`tl.exp2`, the special-function units).

Each rate is one kernel that keeps every multiprocessor busy with long chains of one operation on
registers (several independent chains per thread, so the pipes' latency hides behind each other)
and touches memory once at the end: its time is the operation's throughput. Datasheet numbers
are not used: what `tl.exp2` compiles to, and the clock the GPU holds under load, are what count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

CHAINS = 4  # independent chains per element (each loop step does one operation on each)
BLOCK = 1024
STEPS = 4096
PROGRAMS_PER_SM = 8


@triton.jit
def _fma_chains(z_ptr, steps, B: tl.constexpr):
    offsets = tl.program_id(0) * B + tl.arange(0, B)
    a = offsets.to(tl.float32) * 1e-7
    b = a + 0.25
    c = a + 0.5
    d = a + 0.75
    for _ in range(steps):  # four multiply-adds a step (contracted into FMAs)
        a = a * 0.999 + 0.001
        b = b * 0.999 + 0.001
        c = c * 0.999 + 0.001
        d = d * 0.999 + 0.001
    tl.store(z_ptr + offsets, a + b + c + d)


@triton.jit
def _exp_chains(z_ptr, steps, B: tl.constexpr):
    offsets = tl.program_id(0) * B + tl.arange(0, B)
    a = offsets.to(tl.float32) * 1e-7
    b = a + 0.25
    c = a + 0.5
    d = a + 0.75
    for _ in range(steps):  # four exponentials a step; each chain settles near 0.64, never overflows
        a = tl.exp2(-a)
        b = tl.exp2(-b)
        c = tl.exp2(-c)
        d = tl.exp2(-d)
    tl.store(z_ptr + offsets, a + b + c + d)


def _rate(kernel: Any, bench: Callable[[Callable[[], Any]], float]) -> float:
    """Operations per second, in units of 1e12 (one per chain per step per element)."""
    programs = torch.cuda.get_device_properties(0).multi_processor_count * PROGRAMS_PER_SM
    z = torch.empty(programs * BLOCK, dtype=torch.float32, device="cuda")
    ms = bench(lambda: kernel[(programs,)](z, STEPS, B=BLOCK, num_warps=8))
    return programs * BLOCK * STEPS * CHAINS / ms / 1e9


def fp32_tflops(bench: Callable[[Callable[[], Any]], float]) -> float:
    """FP32 FMAs off the tensor cores, counted as 2 FLOPs each (as datasheets count them), TFLOP/s."""
    return 2 * _rate(_fma_chains, bench)


def exp_tops(bench: Callable[[Callable[[], Any]], float]) -> float:
    """`tl.exp2` on float32, in tera-exponentials per second."""
    return _rate(_exp_chains, bench)
