"""Puzzle 8, fast reference: a row of up to 8 chunks read once and kept in registers.

Same signature, grid and result as solutions/p08_long_softmax.py. A row of at most 8 chunks (8 × B1
columns: 8192 floats, 32 KB, at the speed size) is loaded in one go and stays in registers: its maximum,
its exponentials, their sum and the stores all work on that one load, so x is read from memory once
instead of twice, which is the least a softmax can read. Longer rows take two passes as the teaching
reference does, with three changes: the running maximum and sum are kept per lane (a tile of 4 chunks,
combined once after the pass, instead of a reduction across threads per chunk), the loads of the first
pass are marked evict_last and the second pass walks the row backwards, so that the chunks it reads
first are those the first pass read last, most likely still in the L2 cache.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    ROW: tl.constexpr = 8 * B1  # the longest row kept in registers
    STEP: tl.constexpr = 4 * B1  # the lanes of a longer row's passes
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    if T <= ROW:
        cols = tl.arange(0, ROW)
        row_in = rows_in[:, None] & (cols[None, :] < T)
        offsets = rows[:, None] * T + cols[None, :]
        x = tl.load(x_ptr + offsets, mask=row_in, other=-float("inf"))
        e = tl.exp2((x - tl.max(x, axis=1)[:, None]) * LOG2E)
        tl.store(z_ptr + offsets, e / tl.sum(e, axis=1)[:, None], mask=row_in)
    else:
        # Pass 1, per lane: a running maximum m and the sum l of exp(x - m), rescaled when m grows.
        m = tl.full([B0, STEP], -float("inf"), dtype=tl.float32)
        l = tl.zeros([B0, STEP], dtype=tl.float32)
        for j0 in range(0, T, STEP):
            cols = j0 + tl.arange(0, STEP)
            x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rows_in[:, None] & (cols[None, :] < T),
                        other=-float("inf"), eviction_policy="evict_last")
            m_new = tl.maximum(m, x)
            # A lane that has seen only -inf keeps l = 0 (its exp2(-inf - -inf) would be nan).
            l = tl.where(m_new == -float("inf"), 0.0,
                         l * tl.exp2((m - m_new) * LOG2E) + tl.exp2((x - m_new) * LOG2E))
            m = m_new
        row_max = tl.max(m, axis=1)
        total = tl.sum(tl.where(m == -float("inf"), 0.0, l * tl.exp2((m - row_max[:, None]) * LOG2E)), axis=1)
        # Pass 2, backwards from the last step.
        last = ((T - 1) // STEP) * STEP
        for i in range(0, T, STEP):
            cols = (last - i) + tl.arange(0, STEP)
            chunk_in = rows_in[:, None] & (cols[None, :] < T)
            offsets = rows[:, None] * T + cols[None, :]
            x = tl.load(x_ptr + offsets, mask=chunk_in, other=-float("inf"), eviction_policy="evict_first")
            tl.store(z_ptr + offsets, tl.exp2((x - row_max[:, None]) * LOG2E) / total[:, None], mask=chunk_in,
                     eviction_policy="evict_first")
