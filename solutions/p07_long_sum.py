"""Puzzle 7 reference: row sums of a long matrix, walking each row in chunks."""

import triton
import triton.language as tl


@triton.jit
def sum_kernel(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    # BEGIN SOLUTION
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        chunk_in = rows_in[:, None] & (cols[None, :] < T)
        chunk = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=chunk_in, other=0.0)
        acc += tl.sum(chunk, axis=1)
    tl.store(z_ptr + rows, acc, mask=rows_in)
    # END SOLUTION
