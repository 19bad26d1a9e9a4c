"""Puzzle 27 reference: cross-entropy loss and its gradient in one kernel (online logsumexp, then the gradient)."""

import triton
import triton.language as tl


@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    # BEGIN SOLUTION
    LOG2E: tl.constexpr = 1.4426950408889634
    LN2: tl.constexpr = 0.6931471805599453
    # The mean's denominator n: every program counts the kept rows of the whole batch, B1 targets at a time.
    kept_lanes = tl.zeros([B1], dtype=tl.int32)
    for r0 in range(0, N0, B1):
        r = r0 + tl.arange(0, B1)
        t = tl.load(targets_ptr + r, mask=r < N0, other=IGNORE_INDEX)
        kept_lanes += (t != IGNORE_INDEX).to(tl.int32)
    n = tl.sum(kept_lanes, axis=0).to(tl.float32)

    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    target = tl.load(targets_ptr + rows, mask=rows_in, other=IGNORE_INDEX)
    kept = target != IGNORE_INDEX
    # Pass 1: running maximum m, running sum l of exp(x - m), and the target's logit.
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    x_target = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        chunk_in = rows_in[:, None] & (cols[None, :] < V)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=chunk_in, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp2((m - m_new) * LOG2E) + tl.sum(tl.exp2((x - m_new[:, None]) * LOG2E), axis=1)
        m = m_new
        x_target += tl.sum(tl.where(cols[None, :] == target[:, None], x, 0.0), axis=1)
    log_l = tl.log2(l) * LN2
    lse = m + log_l
    loss = tl.where(kept, ((m - x_target) + log_l) / n, 0.0)
    tl.store(z_ptr + rows * (V + 1) + V, loss, mask=rows_in)
    # Pass 2: the gradient (softmax - onehot) / n, zero on ignored rows.
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        chunk_in = rows_in[:, None] & (cols[None, :] < V)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=chunk_in, other=-float("inf"))
        probs = tl.exp2((x - lse[:, None]) * LOG2E)
        grad = (probs - (cols[None, :] == target[:, None]).to(tl.float32)) / n
        grad = tl.where(kept[:, None], grad, 0.0)
        tl.store(z_ptr + rows[:, None] * (V + 1) + cols[None, :], grad, mask=chunk_in)
    # END SOLUTION
