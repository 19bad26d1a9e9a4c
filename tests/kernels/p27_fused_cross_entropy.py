"""Puzzle 27 (fused cross entropy): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- likely slips, each the reference with one change ---------------------------------------------------------------

@triton.jit
def _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr,
                  SLIP: tl.constexpr):
    """The notebook's two passes in float32 with one slip, chosen by SLIP: "padding zero", "not rescaled",
    "lse without max", "count other 0", "own rows", "unmasked target", "ignored loss", "one-hot not divided"."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    target = tl.load(targets_ptr + rows, mask=rows_in, other=IGNORE_INDEX)
    kept = target != IGNORE_INDEX
    if SLIP == "own rows":
        n = tl.sum(kept.to(tl.float32), 0)
    else:
        counted = tl.zeros([B1], dtype=tl.float32)
        for r0 in range(0, N0, B1):
            r = r0 + tl.arange(0, B1)
            if SLIP == "count other 0":
                t = tl.load(targets_ptr + r, mask=r < N0, other=0)
            else:
                t = tl.load(targets_ptr + r, mask=r < N0, other=IGNORE_INDEX)
            counted += (t != IGNORE_INDEX).to(tl.float32)
        n = tl.sum(counted, 0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    x_t = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        inside = rows_in[:, None] & (cols[None, :] < V)
        if SLIP == "padding zero":
            x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=inside, other=0.0)
        else:
            x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=inside, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, 1))
        if SLIP == "not rescaled":
            l += tl.sum(tl.exp(x - m_new[:, None]), 1)
        else:
            l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), 1)
        m = m_new
        x_t += tl.sum(tl.where(cols[None, :] == target[:, None], x, 0.0), 1)
    if SLIP == "unmasked target":
        x_t = tl.load(logits_ptr + rows * V + target, mask=rows_in)
    lse = m + tl.log(l)
    if SLIP == "lse without max":
        lse = tl.log(l)
    loss = (lse - x_t) / n
    if SLIP != "ignored loss":
        loss = tl.where(kept, loss, 0.0)
    tl.store(z_ptr + rows * (V + 1) + V, loss, mask=rows_in)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        inside = rows_in[:, None] & (cols[None, :] < V)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=inside, other=-float("inf"))
        if SLIP == "one-hot not divided":
            g = tl.exp(x - lse[:, None]) / n - (cols[None, :] == target[:, None]).to(tl.float32)
        else:
            g = (tl.exp(x - lse[:, None]) - (cols[None, :] == target[:, None]).to(tl.float32)) / n
        tl.store(z_ptr + rows[:, None] * (V + 1) + cols[None, :], tl.where(kept[:, None], g, 0.0), mask=inside)


@triton.jit
def padding_loaded_as_zero(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "padding zero")


@triton.jit
def sum_not_rescaled(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "not rescaled")


@triton.jit
def lse_without_max(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "lse without max")


@triton.jit
def count_padding_as_zero(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "count other 0")


@triton.jit
def count_own_rows(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "own rows")


@triton.jit
def target_loaded_unmasked(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "unmasked target")


@triton.jit
def ignored_rows_lose(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "ignored loss")


@triton.jit
def one_hot_not_divided(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr):
    _learner_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "one-hot not divided")



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def cross_entropy_three_passes(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr,
                               B1: tl.constexpr):
    """The maximum, then the sum, then the gradient with the loss written last; tl.exp; the count in a while loop.
    (Each loop's reduction is used once after its loop, `top` through a tl.where, `total` through its log:
    Triton 3.6's OptimizeThreadLocality pass asserts `loopResult.hasOneUse()` on a 2-D block's tl.max or tl.sum
    carried by a loop and used twice after it; seen on the H100, where a kernel using `top` in both later loops
    did not compile.)"""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    n = 0.0
    r0 = 0
    while r0 < N0:
        r = r0 + tl.arange(0, B1)
        t = tl.load(targets_ptr + r, mask=r < N0, other=IGNORE_INDEX)
        n += tl.sum(tl.where(t != IGNORE_INDEX, 1.0, 0.0))
        r0 += B1
    target = tl.load(targets_ptr + rows, mask=rows_in, other=IGNORE_INDEX)
    top = tl.full([B0], -float("inf"), dtype=tl.float32)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :],
                    mask=rows_in[:, None] & (cols[None, :] < V), other=-float("inf"))
        top = tl.maximum(top, tl.max(x, 1))
    top = tl.where(rows_in, top, 0.0)  # rows past N0: a finite shift
    total = tl.zeros([B0], dtype=tl.float32)
    picked = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :],
                    mask=rows_in[:, None] & (cols[None, :] < V), other=-float("inf"))
        total += tl.sum(tl.exp(x - top[:, None]), 1)
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], x - top[:, None], 0.0), 1)
    log_total = tl.log(total)
    weight = tl.where(target != IGNORE_INDEX, 1.0 / n, 0.0)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        inside = rows_in[:, None] & (cols[None, :] < V)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=inside, other=0.0)
        soft = tl.exp(x - top[:, None] - log_total[:, None])
        hot = tl.where(cols[None, :] == target[:, None], 1.0, 0.0)
        tl.store(z_ptr + rows[:, None] * (V + 1) + cols[None, :], (soft - hot) * weight[:, None], mask=inside)
    tl.store(z_ptr + rows * (V + 1) + V, (log_total - picked) * weight, mask=rows_in)


@triton.jit
def _row_lse(logits_ptr, row, V, B1: tl.constexpr):
    """One row's online logsumexp, as a helper: (maximum, sum of exp(x - maximum))."""
    m = -float("inf")
    s = 0.0
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(logits_ptr + row * V + cols, mask=cols < V, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    return m, s


@triton.jit
def cross_entropy_row_loop(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr,
                           B1: tl.constexpr):
    """1-D blocks: the program's B0 rows one after another in a loop, the row's target logit loaded by address,
    an early skip of the rows past N0."""
    counted = tl.zeros([B1], dtype=tl.int32)
    for r0 in range(0, N0, B1):
        r = r0 + tl.arange(0, B1)
        counted += tl.where(r < N0, tl.load(targets_ptr + r, mask=r < N0) != IGNORE_INDEX, 0).to(tl.int32)
    n = tl.sum(counted, 0).to(tl.float32)
    for k in range(B0):
        row = tl.program_id(0) * B0 + k
        if row < N0:
            t = tl.load(targets_ptr + row)
            m, s = _row_lse(logits_ptr, row, V, B1)
            lse = m + tl.log(s)
            keep = t != IGNORE_INDEX
            x_t = tl.load(logits_ptr + row * V + t, mask=keep, other=0.0)
            tl.store(z_ptr + row * (V + 1) + V, tl.where(keep, (lse - x_t) / n, 0.0))
            for j0 in range(0, V, B1):
                cols = j0 + tl.arange(0, B1)
                x = tl.load(logits_ptr + row * V + cols, mask=cols < V, other=0.0)
                g = tl.where(keep, (tl.exp(x - lse) - (cols == t).to(tl.float32)) / n, 0.0)
                tl.store(z_ptr + row * (V + 1) + cols, g, mask=cols < V)


@triton.jit
def _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0: tl.constexpr, B1: tl.constexpr,
                        SLIP: tl.constexpr):
    """The reference's two passes with one slip, chosen by SLIP: "no max", "count all rows", "grad not divided",
    "no one-hot", "ignore -100", "stride V", "no column mask", "no loss"."""
    kept_lanes = tl.zeros([B1], dtype=tl.int32)
    for r0 in range(0, N0, B1):
        r = r0 + tl.arange(0, B1)
        t = tl.load(targets_ptr + r, mask=r < N0, other=IGNORE_INDEX)
        if SLIP == "ignore -100":
            kept_lanes += ((t != -100) & (r < N0)).to(tl.int32)
        else:
            kept_lanes += (t != IGNORE_INDEX).to(tl.int32)
    n = tl.sum(kept_lanes, 0).to(tl.float32)
    if SLIP == "count all rows":
        n = N0 * 1.0
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    target = tl.load(targets_ptr + rows, mask=rows_in, other=IGNORE_INDEX)
    kept = target != IGNORE_INDEX
    if SLIP == "ignore -100":
        kept = target != -100
    out_stride = V + 1
    if SLIP == "stride V":
        out_stride = V
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    if SLIP == "no max":
        m = tl.zeros([B0], dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    x_t = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        inside = rows_in[:, None] & (cols[None, :] < V)
        if SLIP == "no column mask":
            inside = rows_in[:, None] & (cols[None, :] >= 0)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=inside, other=-float("inf"))
        if SLIP == "no max":
            l += tl.sum(tl.exp(x), 1)
        else:
            m_new = tl.maximum(m, tl.max(x, 1))
            l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), 1)
            m = m_new
        x_t += tl.sum(tl.where(cols[None, :] == target[:, None], x, 0.0), 1)
    lse = m + tl.log(l)
    if SLIP != "no loss":
        tl.store(z_ptr + rows * out_stride + V, tl.where(kept, (lse - x_t) / n, 0.0), mask=rows_in)
    for j0 in range(0, V, B1):
        cols = j0 + tl.arange(0, B1)
        inside = rows_in[:, None] & (cols[None, :] < V)
        x = tl.load(logits_ptr + rows[:, None] * V + cols[None, :], mask=inside, other=-float("inf"))
        g = tl.exp(x - lse[:, None])
        if SLIP != "no one-hot":
            g -= (cols[None, :] == target[:, None]).to(tl.float32)
        if SLIP != "grad not divided":
            g = g / n
        tl.store(z_ptr + rows[:, None] * out_stride + cols[None, :], tl.where(kept[:, None], g, 0.0), mask=inside)


@triton.jit
def cross_entropy_no_max(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "no max")


@triton.jit
def cross_entropy_counting_ignored_rows(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "count all rows")


@triton.jit
def cross_entropy_grad_not_divided(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "grad not divided")


@triton.jit
def cross_entropy_without_one_hot(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "no one-hot")


@triton.jit
def cross_entropy_ignoring_minus_100(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "ignore -100")


@triton.jit
def cross_entropy_output_stride_v(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "stride V")


@triton.jit
def cross_entropy_without_column_mask(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "no column mask")


@triton.jit
def cross_entropy_without_loss(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX,
        B0: tl.constexpr, B1: tl.constexpr):
    _cross_entropy_body(logits_ptr, targets_ptr, z_ptr, N0, V, IGNORE_INDEX, B0, B1, "no loss")


CORRECT = (cross_entropy_three_passes, cross_entropy_row_loop)
