"""Puzzle 7, fast reference: sums kept per lane, in steps of eight chunks.

Same signature, grid and result as solutions/p07_long_sum.py. Two changes:
- Each step loads 8 chunks of B1 columns at once (the whole row of 8192 floats at the speed size), so
  a program has its whole step's loads in flight together instead of one chunk's.
- The running sum is a B0 x (8·B1) tile added element by element; the sum across it is taken once
  after the loop (the teaching reference sums across each chunk, a reduction across threads per chunk).
The loads are marked evict_first: each value is read once, so it need not stay in the cache. And
16 warps per program, set with a one-config @triton.autotune (`test()` launches a kernel with Triton's
default of 4): the more threads share a row, the more of its loads are in flight at once.
"""

import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({}, num_warps=16)], key=[])
@triton.jit
def sum_kernel(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    STEP: tl.constexpr = 8 * B1
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    acc = tl.zeros([B0, STEP], dtype=tl.float32)
    for j0 in range(0, T, STEP):
        cols = j0 + tl.arange(0, STEP)
        chunk_in = rows_in[:, None] & (cols[None, :] < T)
        acc += tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=chunk_in, other=0.0,
                       eviction_policy="evict_first")
    tl.store(z_ptr + rows, tl.sum(acc, axis=1), mask=rows_in)
