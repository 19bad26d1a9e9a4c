"""Puzzle 25 reference: one program per row, the row walked in chunks of BN three times (mean, variance,
normalised output), the statistics in float32."""

import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr):
    # BEGIN SOLUTION
    row = tl.program_id(0)
    x_row, z_row = x_ptr + row * N, z_ptr + row * N
    # Pass 1: the mean.
    acc = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        acc += tl.load(x_row + cols, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    # Pass 2: the variance, from the centred values; the padding lanes must add nothing.
    acc = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0)
        centred = tl.where(cols < N, x - mean, 0.0)
        acc += centred * centred
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    # Pass 3: normalise, scale and shift.
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        in_row = cols < N
        x = tl.load(x_row + cols, mask=in_row, other=0.0)
        w = tl.load(w_ptr + cols, mask=in_row, other=0.0)
        b = tl.load(b_ptr + cols, mask=in_row, other=0.0)
        tl.store(z_row + cols, (x - mean) * rstd * w + b, mask=in_row)
    # END SOLUTION
