"""Puzzle 8 reference: numerically stable row softmax in two passes (online max and sum)."""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    # BEGIN SOLUTION
    LOG2E: tl.constexpr = 1.4426950408889634
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    # Pass 1: running max m and running sum l of exp(x - m); when m grows, rescale l.
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        chunk_in = rows_in[:, None] & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=chunk_in, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp2((m - m_new) * LOG2E) + tl.sum(tl.exp2((x - m_new[:, None]) * LOG2E), axis=1)
        m = m_new
    # Pass 2: normalise.
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        chunk_in = rows_in[:, None] & (cols[None, :] < T)
        offsets = rows[:, None] * T + cols[None, :]
        x = tl.load(x_ptr + offsets, mask=chunk_in, other=-float("inf"))
        z = tl.exp2((x - m[:, None]) * LOG2E) / l[:, None]
        tl.store(z_ptr + offsets, z, mask=chunk_in)
    # END SOLUTION
