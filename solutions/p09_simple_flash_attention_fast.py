"""Puzzle 9, fast reference: the row maximum known before the pass, the sums kept per lane.

Same signature, grid and result as solutions/p09_simple_flash_attention.py. Two changes:
- A score is q_i * k_j with a scalar q_i, so its row maximum is q_i * max(k) when q_i >= 0 and
  q_i * min(k) otherwise (rounding is monotonic, so this is exactly the largest computed score). A first,
  cheap loop finds max(k) and min(k); the main loop then needs no running maximum and no rescaling:
  one exp per score instead of one per score plus one per row and chunk.
- The denominator and the weighted sum are kept per lane, as B0 x B1 tiles added element by element,
  and summed across the lanes once at the end: the teaching reference sums (and takes the max) across
  each chunk inside the loop, three reductions across threads per chunk.
The loop over full chunks needs no mask; only the ragged last chunk does.
"""

import triton
import triton.language as tl


@triton.jit
def flashatt_kernel(q_ptr, k_ptr, v_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    q = tl.load(q_ptr + rows, mask=rows_in, other=0.0)
    # max(k) and min(k), lane by lane, then across the lanes.
    k_hi = tl.full([B1], -float("inf"), dtype=tl.float32)
    k_lo = tl.full([B1], float("inf"), dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        cols_in = cols < T
        k = tl.load(k_ptr + cols, mask=cols_in, other=0.0)
        k_hi = tl.maximum(k_hi, tl.where(cols_in, k, -float("inf")))
        k_lo = tl.minimum(k_lo, tl.where(cols_in, k, float("inf")))
    m = tl.maximum(q * tl.max(k_hi, axis=0), q * tl.min(k_lo, axis=0))  # each row's largest score
    l = tl.zeros([B0, B1], dtype=tl.float32)  # the denominator, per lane
    acc = tl.zeros([B0, B1], dtype=tl.float32)  # the weighted sum of v, per lane
    full = (T // B1) * B1
    for j0 in range(0, full, B1):
        cols = j0 + tl.arange(0, B1)
        k = tl.load(k_ptr + cols)
        v = tl.load(v_ptr + cols)
        p = tl.exp2((q[:, None] * k[None, :] - m[:, None]) * LOG2E)
        l += p
        acc += p * v[None, :]
    if full < T:  # the ragged last chunk: lanes past T weigh nothing
        cols = full + tl.arange(0, B1)
        cols_in = cols < T
        k = tl.load(k_ptr + cols, mask=cols_in, other=0.0)
        v = tl.load(v_ptr + cols, mask=cols_in, other=0.0)
        p = tl.where(cols_in[None, :], tl.exp2((q[:, None] * k[None, :] - m[:, None]) * LOG2E), 0.0)
        l += p
        acc += p * v[None, :]
    tl.store(z_ptr + rows, tl.sum(acc, axis=1) / tl.sum(l, axis=1), mask=rows_in)
