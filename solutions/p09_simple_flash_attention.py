"""Puzzle 9 reference: one-pass attention with scalar q, k, v (online softmax)."""

import triton
import triton.language as tl


@triton.jit
def flashatt_kernel(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    # BEGIN SOLUTION
    LOG2E: tl.constexpr = 1.4426950408889634
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    q = tl.load(q_ptr + rows, mask=rows_in, other=0.0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)  # running max of the scores
    l = tl.zeros([B0], dtype=tl.float32)  # running softmax denominator
    acc = tl.zeros([B0], dtype=tl.float32)  # running weighted sum of v
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        cols_in = cols < T
        k = tl.load(k_ptr + cols, mask=cols_in, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols_in, other=0.0)
        s = tl.where(cols_in[None, :], q[:, None] * k[None, :], -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        rescale = tl.exp2((m - m_new) * LOG2E)  # earlier chunks were weighted by the old max
        p = tl.exp2((s - m_new[:, None]) * LOG2E)
        l = l * rescale + tl.sum(p, axis=1)
        acc = acc * rescale + tl.sum(p * v[None, :], axis=1)
        m = m_new
    tl.store(z_ptr + rows, acc / l, mask=rows_in)
    # END SOLUTION
