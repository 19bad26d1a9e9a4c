"""Puzzle 7 (long sum): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def sum_community(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    pid_0 = tl.program_id(0)
    off_x = pid_0 * B0 + tl.arange(0, B0)
    mask_x = off_x < N0
    z = tl.zeros([B0], dtype=tl.float32)
    for id in tl.range(0, T, B1):
        off_t = id + tl.arange(0, B1)
        off_xt = off_x[:, None] * T + off_t[None, :]
        mask_t = off_t < T
        mask_xt = mask_x[:, None] & mask_t[None, :]
        x = tl.load(x_ptr + off_xt, mask=mask_xt, other=0.0)
        z += tl.sum(x, axis=1)
    tl.store(z_ptr + off_x, z, mask=mask_x)


@triton.jit
def sum_while_2d_acc(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    j0 = 0
    while j0 < T:
        cols = j0 + tl.arange(0, B1)
        m = (rows[:, None] < N0) & (cols[None, :] < T)
        x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m)
        acc += tl.where(m, x, 0.0)
        j0 += B1
    tl.store(z_ptr + rows[:, None], tl.sum(acc, axis=1, keep_dims=True), mask=rows[:, None] < N0)


@triton.jit
def sum_cdiv_loop(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    pid = tl.program_id(0)
    if pid * B0 >= N0:
        return
    rows = pid * B0 + tl.arange(0, B0)
    total = tl.zeros([B0], dtype=tl.float32)
    for c in range(tl.cdiv(T, B1)):
        cols = c * B1 + tl.arange(0, B1)
        x = tl.load(
            x_ptr + rows[:, None] * T + cols[None, :], mask=(rows < N0)[:, None] & (cols < T)[None, :], other=0.0
        )
        total = total + tl.sum(x, 1)
    tl.store(z_ptr + rows, total, mask=rows < N0)


@triton.jit
def sum_constexpr_T(x_ptr, z_ptr, N0, N1, T: tl.constexpr, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in tl.static_range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        acc += tl.sum(
            tl.load(
                x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0
            ),
            axis=1,
        )
    tl.store(z_ptr + rows, acc, mask=rows < N0)



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

# -- a loop bound of `T - 1` ("the last index"): one chunk short only where the tail is one element ----------
@triton.jit
def sum_to_last_index(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T - 1, B1):
        cols = j0 + tl.arange(0, B1)
        m = (rows[:, None] < N0) & (cols[None, :] < T)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=m, other=0.0), axis=1)
    tl.store(z_ptr + rows, acc, mask=rows < N0)


@triton.jit
def _sum_rows(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr, ACC: tl.constexpr, WIDE: tl.constexpr):
    """Puzzle 7 with an accumulator of dtype ACC; WIDE keeps a B0 x B1 block of partial sums (another order)."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    if WIDE:
        acc = tl.zeros([B0, B1], dtype=ACC)
    else:
        acc = tl.zeros([B0], dtype=ACC)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        chunk = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows < N0)[:, None] & (cols < T)[None, :],
                        other=0.0)
        if WIDE:
            acc += chunk.to(ACC)
        else:
            acc += tl.sum(chunk, axis=1).to(ACC)
    if WIDE:
        total = tl.sum(acc.to(tl.float32), axis=1)
    else:
        total = acc.to(tl.float32)
    tl.store(z_ptr + rows, total, mask=rows < N0)


@triton.jit
def sum_kernel_float16_accumulator(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    _sum_rows(x_ptr, z_ptr, N0, T, B0, B1, tl.float16, False)


@triton.jit
def sum_kernel_column_partial_sums(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    _sum_rows(x_ptr, z_ptr, N0, T, B0, B1, tl.float32, True)



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def sum_stopping_a_chunk_early(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T - B1, B1):  # one chunk short
        j = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T), other=0.0)
        acc += tl.sum(x, axis=1)
    tl.store(z_ptr + i, acc, mask=i < N0)


@triton.jit
def sum_over_the_wrong_axis(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        x = tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T), other=0.0)
        acc += tl.sum(x, axis=0)  # B1 column sums, not B0 row sums
    tl.store(z_ptr + i, acc, mask=i < N0)


@triton.jit
def sum_resetting_the_accumulator(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        acc = tl.sum(tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T),
                             other=0.0), axis=1)  # = where += was meant
    tl.store(z_ptr + i, acc, mask=i < N0)


@triton.jit
def sum_without_the_chunk_start(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for _j0 in range(0, T, B1):
        j = tl.arange(0, B1)  # j0 left out
        acc += tl.sum(tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T),
                              other=0.0), axis=1)
    tl.store(z_ptr + i, acc, mask=i < N0)


@triton.jit
def sum_with_rows_n1_apart(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        acc += tl.sum(tl.load(x_ptr + i[:, None] * N1 + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T),
                              other=0.0), axis=1)
    tl.store(z_ptr + i, acc, mask=i < N0)


@triton.jit
def sum_without_an_axis(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        acc += tl.sum(tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i[:, None] < N0) & (j[None, :] < T),
                              other=0.0))  # the whole block, not each row
    tl.store(z_ptr + i, acc, mask=i < N0)


@triton.jit
def sum_without_creating_the_accumulator(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    for j0 in range(0, T, B1):
        j = j0 + tl.arange(0, B1)
        acc += tl.sum(tl.load(x_ptr + i[:, None] * T + j[None, :],  # noqa: F821 - acc never created
                              mask=(i[:, None] < N0) & (j[None, :] < T), other=0.0), axis=1)
    tl.store(z_ptr + i, acc, mask=i < N0)



# -- holes in judging, each closed ----------------------------------------------------------------------------------

@triton.jit
def _sum_body(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr, WHERE: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, B1):
        cols = j0 + tl.arange(0, B1)
        inside = (rows < N0)[:, None] & (cols < T)[None, :]
        chunk = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=inside)  # no other=: undefined lanes
        if WHERE:
            chunk = tl.where(inside, chunk, 0.0)
        acc += tl.sum(chunk, axis=1)
    tl.store(z_ptr + rows, acc, mask=rows < N0)


@triton.jit
def sum_kernel_relying_on_zero_lanes(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    _sum_body(x_ptr, z_ptr, N0, T, B0, B1, False)


@triton.jit
def sum_kernel_masking_with_where(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    _sum_body(x_ptr, z_ptr, N0, T, B0, B1, True)



# -- right under the interpreter, rejected by the GPU compiler (BAD_LINE: the line it names) ------------------------

@triton.jit
def sum_kernel_dynamic_arange(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j in range(0, T, B1):
        cols = tl.arange(j, j + B1)  # BAD_LINE
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0), axis=1)
    tl.store(z_ptr + rows, acc, mask=rows < N0)


@triton.jit
def sum_kernel_scalar_accumulator(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = 0.0
    for j in range(0, T, B1):  # BAD_LINE
        cols = j + tl.arange(0, B1)
        mask = (rows[:, None] < N0) & (cols[None, :] < T)
        acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0), axis=1)
    tl.store(z_ptr + rows, acc, mask=rows < N0)


CORRECT = (sum_community, sum_while_2d_acc, sum_cdiv_loop, sum_constexpr_T)

# -- right but slow, each for one reason the efficiency model names (issue 51) ----------------------------------------

@triton.jit
def sum_reads_twice(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    """Right, re-reading: two passes over the row, each summing half of every element."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for _half in range(2):
        for j0 in range(0, T, B1):
            cols = j0 + tl.arange(0, B1)
            chunk = tl.load(x_ptr + rows[:, None] * T + cols[None, :],
                            mask=(rows[:, None] < N0) & (cols[None, :] < T), other=0.0)
            acc += 0.5 * tl.sum(chunk, axis=1)
    tl.store(z_ptr + rows, acc, mask=rows < N0)


@triton.jit
def sum_chunks_of_32(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    """Right, tiny chunks: 32 columns at a time whatever B1 is."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j0 in range(0, T, 32):
        cols = j0 + tl.arange(0, 32)
        chunk = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=(rows[:, None] < N0) & (cols[None, :] < T),
                        other=0.0)
        acc += tl.sum(chunk, axis=1)
    tl.store(z_ptr + rows, acc, mask=rows < N0)


@triton.jit
def sum_one_column_at_a_time(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    """Right, uncoalesced: column j of the block's rows at a time, so a warp's lanes read 32 rows apart."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for j in range(T):
        acc += tl.load(x_ptr + rows * T + j, mask=rows < N0, other=0.0)
    tl.store(z_ptr + rows, acc, mask=rows < N0)


SLOW = (sum_one_column_at_a_time, sum_reads_twice, sum_chunks_of_32)
