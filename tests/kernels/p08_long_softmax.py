"""Puzzle 8 (long softmax): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)


@triton.jit
def softmax_three_pass(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    off_x = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask_x = off_x < N0
    x_max = tl.full([B0], -float("inf"), dtype=tl.float32)
    for id in tl.range(0, T, B1):
        off_t = id + tl.arange(0, B1)
        mask = mask_x[:, None] & (off_t < T)[None, :]
        x = tl.load(x_ptr + off_x[:, None] * T + off_t[None, :], mask=mask, other=-float("inf"))
        x_max = tl.maximum(x_max, tl.max(x, axis=1))
    exp_sum = tl.zeros([B0], dtype=tl.float32)
    for id in tl.range(0, T, B1):
        off_t = id + tl.arange(0, B1)
        mask = mask_x[:, None] & (off_t < T)[None, :]
        x = tl.load(x_ptr + off_x[:, None] * T + off_t[None, :], mask=mask, other=-float("inf"))
        exp_sum += tl.sum(tl.exp(x - x_max[:, None]), axis=1)
    for id in tl.range(0, T, B1):
        off_t = id + tl.arange(0, B1)
        mask = mask_x[:, None] & (off_t < T)[None, :]
        x = tl.load(x_ptr + off_x[:, None] * T + off_t[None, :], mask=mask)
        z = tl.exp(x - x_max[:, None]) / exp_sum[:, None]
        tl.store(z_ptr + off_x[:, None] * T + off_t[None, :], z, mask=mask)


@triton.jit
def softmax_online_exp(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = tl.zeros([B0], dtype=tl.float32) - float("inf")
    s = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask)
        x = tl.where(mask, x, -float("inf"))
        new_m = tl.maximum(m, tl.max(x, 1))
        s = s * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m[:, None]), 1)
        m = new_m
    inv = 1.0 / s
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) * inv[:, None], mask=mask)


@triton.jit
def softmax_exp2_global(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    mx = tl.full((B0,), float("-inf"), tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(
            x_ptr + rows[:, None] * T + cols[None, :], mask=rows_in[:, None] & (cols[None, :] < T), other=float("-inf")
        )
        mx = tl.maximum(mx, tl.max(x, axis=1))
    den = tl.zeros((B0,), tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(
            x_ptr + rows[:, None] * T + cols[None, :], mask=rows_in[:, None] & (cols[None, :] < T), other=float("-inf")
        )
        den += tl.sum(tl.exp2((x - mx[:, None]) * LOG2E), axis=1)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        m = rows_in[:, None] & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0)
        tl.store(
            z_ptr + rows[:, None] * T + cols[None, :], tl.exp2(x * LOG2E - mx[:, None] * LOG2E) / den[:, None], mask=m
        )


@triton.jit
def softmax_output_as_scratch(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rin = rows[:, None] < N0
    mx = tl.full([B0], -float("inf"), tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rin & (cols[None, :] < T), other=-float("inf"))
        mx = tl.maximum(mx, tl.max(x, 1))
    s = tl.zeros([B0], tl.float32)
    for j0 in range(0, T, B1):  # exp(x - max) into z, summed on the way
        cols = j0 + tl.arange(0, B1)
        m = rin & (cols[None, :] < T)
        e = tl.exp(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=-float("inf")) - mx[:, None])
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], e, mask=m)
        s += tl.sum(e, 1)
    for j0 in range(0, T, B1):  # then z /= sum, read back from z
        cols = j0 + tl.arange(0, B1)
        m = rin & (cols[None, :] < T)
        e = tl.load(z_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], e / s[:, None], mask=m)



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

# -- full chunks in a loop, the ragged tail after it: the last full chunk is lost where T is a multiple of B1 -
@triton.jit
def softmax_main_loop_and_tail(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rin = (rows < N0)[:, None]
    tail = (T // B1) * B1
    mx = tl.full([B0], -float("inf"), dtype=tl.float32)
    for j0 in range(0, T - B1, B1):  # the full chunks (one too few where B1 divides T)
        cols = j0 + tl.arange(0, B1)
        mx = tl.maximum(mx, tl.max(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rin, other=-float("inf")),
                                   axis=1))
    cols = tail + tl.arange(0, B1)
    mt = rin & (cols[None, :] < T)
    mx = tl.maximum(mx, tl.max(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mt, other=-float("inf")),
                               axis=1))
    den = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T - B1, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rin, other=-float("inf"))
        den += tl.sum(tl.exp(x - mx[:, None]), axis=1)
    cols = tail + tl.arange(0, B1)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mt, other=-float("inf"))
    den += tl.sum(tl.exp(x - mx[:, None]), axis=1)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        mm = rin & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mm, other=0.0)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - mx[:, None]) / den[:, None], mask=mm)


# -- a softmax shifted by the maximum of only part of the row: right unless a later element is far larger ----
@triton.jit
def softmax_first_chunk_max(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rin = rows < N0
    first = tl.arange(0, B1)
    x0 = tl.load(x_ptr + rows[:, None] * T + first[None, :], mask=rin[:, None] & (first[None, :] < T),
                 other=-float("inf"))
    mx = tl.max(x0, axis=1)  # the first chunk's maximum stands for the row's
    den = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rin[:, None] & (cols[None, :] < T),
                    other=-float("inf"))
        den += tl.sum(tl.exp(x - mx[:, None]), axis=1)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        mm = rin[:, None] & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mm, other=0.0)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - mx[:, None]) / den[:, None], mask=mm)


@triton.jit
def softmax_max_without_the_tail(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rin = rows < N0
    mx = tl.full([B0], -float("inf"), dtype=tl.float32)
    for j0 in range(0, T - B1 + 1, B1):  # the full chunks only: the ragged tail is left out of the maximum
        cols = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rin[:, None], other=-float("inf"))
        mx = tl.maximum(mx, tl.max(x, axis=1))
    den = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rin[:, None] & (cols[None, :] < T),
                    other=-float("inf"))
        den += tl.sum(tl.exp(x - mx[:, None]), axis=1)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        mm = rin[:, None] & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mm, other=0.0)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - mx[:, None]) / den[:, None], mask=mm)


@triton.jit
def softmax_kernel_unstable(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    l = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        m = (rows[:, None] < N0) & (cols[None, :] < T)
        l += tl.sum(tl.exp(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=-float("inf"))), axis=1)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        m = (rows[:, None] < N0) & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x) / l[:, None], mask=m)


@triton.jit
def _row_chunk(x_ptr, rows, j0, N0, T, B1: tl.constexpr, other):
    # Columns j0 .. j0 + B1 of the rows (masked lanes read as `other`), with their offsets and mask.
    cols = j0 + tl.arange(0, B1)
    mask = (rows[:, None] < N0) & (cols[None, :] < T)
    offsets = rows[:, None] * T + cols[None, :]
    return tl.load(x_ptr + offsets, mask=mask, other=other), offsets, mask


@triton.jit
def _softmax_store(x_ptr, z_ptr, rows, m, l, N0, T, B1: tl.constexpr):
    # The second pass of the two online softmaxes below, right in both: exp(x - max) / sum.
    for j0 in range(0, T, B1):
        x, offsets, mask = _row_chunk(x_ptr, rows, j0, N0, T, B1, -float("inf"))
        tl.store(z_ptr + offsets, tl.exp(x - m[:, None]) / l[:, None], mask=mask)


@triton.jit
def softmax_kernel_masked_zero(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    # Masked lanes loaded as 0, not -inf: each adds exp(0 - max) to its row's sum, so every
    # element of a row with a ragged last chunk is a few percent off (each error is tiny).
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        x, _, _ = _row_chunk(x_ptr, rows, j0, N0, T, B1, 0.0)
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
        m = m_new
    _softmax_store(x_ptr, z_ptr, rows, m, l, N0, T, B1)


@triton.jit
def softmax_kernel_no_rescale(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    # Online softmax that forgets to rescale the running sum when the maximum grows.
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        x, _, _ = _row_chunk(x_ptr, rows, j0, N0, T, B1, -float("inf"))
        m = tl.maximum(m, tl.max(x, axis=1))
        l += tl.sum(tl.exp(x - m[:, None]), axis=1)
    _softmax_store(x_ptr, z_ptr, rows, m, l, N0, T, B1)


@triton.jit
def _softmax_rows(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr, DTYPE: tl.constexpr):
    """Puzzle 8 with tl.exp (not the reference's exp2), its last exp and division in DTYPE."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows < N0)[:, None] & (cols < T)[None, :],
                    other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
        m = m_new
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        inside = (rows < N0)[:, None] & (cols < T)[None, :]
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=inside, other=-float("inf"))
        z = tl.exp(x - m[:, None]).to(DTYPE) / l[:, None].to(DTYPE)
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], z.to(tl.float32), mask=inside)


@triton.jit
def softmax_kernel_float16(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    _softmax_rows(x_ptr, z_ptr, N0, T, B0, B1, tl.float16)


@triton.jit
def softmax_kernel_exp(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    _softmax_rows(x_ptr, z_ptr, N0, T, B0, B1, tl.float32)



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def softmax_with_padding_in_the_sum(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    top = tl.full([B0], -float("inf"), dtype=tl.float32)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T), other=-float("inf"))
        top = tl.maximum(top, tl.max(x, axis=1))
    total = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T), other=0.0)
        total += tl.sum(tl.exp(x - top[:, None]), axis=1)  # the padding's exp(0 - top) counts
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        mask = (i[:, None] < N0) & (j[None, :] < T)
        x = tl.load(x_ptr + i[:, None] * T + j[None, :], mask=mask, other=-float("inf"))
        tl.store(z_ptr + i[:, None] * T + j[None, :], tl.exp(x - top[:, None]) / total[:, None], mask=mask)


CORRECT = (softmax_three_pass, softmax_online_exp, softmax_exp2_global, softmax_output_as_scratch)

# -- right but slow, each for one reason the efficiency model names (issue 51) ----------------------------------------

@triton.jit
def softmax_chunks_of_32(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    """Right (the reference's two passes), in chunks of 32 columns whatever B1 is: many small dependent loads."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    rows_in = rows < N0
    m = tl.full([B0], -float("inf"), dtype=tl.float32)
    l = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, 32):
        cols = j0 + tl.arange(0, 32)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=rows_in[:, None] & (cols[None, :] < T),
                    other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)
        m = m_new
    for j0 in range(0, T, 32):
        cols = j0 + tl.arange(0, 32)
        chunk_in = rows_in[:, None] & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=chunk_in, other=-float("inf"))
        tl.store(z_ptr + rows[:, None] * T + cols[None, :], tl.exp(x - m[:, None]) / l[:, None], mask=chunk_in)


SLOW = (softmax_chunks_of_32,)
