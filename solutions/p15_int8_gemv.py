"""Puzzle 15 reference: a strip of columns per program, int8 weights streamed once, scale at the end."""

import triton
import triton.language as tl


@triton.jit
def int8_gemv_kernel(x_ptr, weight_ptr, scale_ptr, z_ptr, N, K, BN: tl.constexpr, BK: tl.constexpr):
    # BEGIN SOLUTION
    n = tl.program_id(0) * BN + tl.arange(0, BN)  # this program's output columns
    n_in = n < N
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        k_in = k < K
        x = tl.load(x_ptr + k, mask=k_in, other=0.0).to(tl.float32)
        # Rows of the strip are contiguous runs of BN bytes: each weight is read exactly once.
        w = tl.load(weight_ptr + k[:, None] * N + n[None, :], mask=k_in[:, None] & n_in[None, :], other=0)
        acc += tl.sum(x[:, None] * w.to(tl.float32), axis=0)
    # The per-channel scale does not depend on k: one multiply per column, after the loop.
    scale = tl.load(scale_ptr + n, mask=n_in, other=0.0).to(tl.float32)
    tl.store(z_ptr + n, (acc * scale).to(tl.float16), mask=n_in)
    # END SOLUTION
