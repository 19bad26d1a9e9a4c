"""Puzzle 15, fast reference: four chunks of weights a trip, the trips pipelined.

Same signature, grid and result as solutions/p15_int8_gemv.py. Two changes, measured on an H200 at the perf size
(benchmarks/results/nvidia-h200/p15_variants.md: 43 us against the teaching kernel's 173 and torch.compile's 162):
- Each trip loads 4·BK rows of the strip at once (32 KB of int8 at the perf size), not BK: with only N / BN = 128
  programs, one per multiprocessor, the bytes a program has in flight are what sets the speed.
- The loop is `tl.range(..., num_stages=3)`: the compiler issues the next trips' loads while this one is summed.
Either alone gives 94 and 110 us; together 43.
"""

import triton
import triton.language as tl


@triton.jit
def int8_gemv_kernel(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    n_in = n < N
    acc = tl.zeros([BN], dtype=tl.float32)
    TRIP: tl.constexpr = 4 * BK
    for k0 in tl.range(0, K, TRIP, num_stages=3):
        k = k0 + tl.arange(0, TRIP)
        k_in = k < K
        x = tl.load(x_ptr + k, mask=k_in, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=k_in[:, None] & n_in[None, :], other=0)
        acc += tl.sum(x[:, None] * w.to(tl.float32), axis=0)
    scale = tl.load(scale_ptr + n, mask=n_in, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (acc * scale).to(tl.float16), mask=n_in)
