"""Puzzle 26 (layernorm backward): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl
from kernel_flags import with_flags

# -- right answers in the other ways the statement allows -----------------------------------------------------------

@triton.jit
def layernorm_backward_kernel_one_program_sums(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, z_ptr, M, N,
                                               BM: tl.constexpr, BN: tl.constexpr):
    """Puzzle 26 without atomics: every program writes its rows' dx; program 0 alone sums dw and db over all M
    rows and stores them plainly (it reads every row again: slower, and the same bits on every run)."""
    cols = tl.arange(0, BN)
    col_in = cols < N
    w = tl.load(w_ptr + cols, mask=col_in, other=0.0)
    for r in range(BM):
        row = tl.program_id(0) * BM + r
        mask = col_in & (row < M)
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
        xhat = tl.where(mask, (x - tl.load(mean_ptr + row, mask=row < M, other=0.0))
                        * tl.load(rstd_ptr + row, mask=row < M, other=0.0), 0.0)
        wdy = w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        rstd = tl.load(rstd_ptr + row, mask=row < M, other=0.0)
        tl.store(z_ptr + row * N + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=mask)
    if tl.program_id(0) == 0:
        dw = tl.zeros([BN], dtype=tl.float32)
        db = tl.zeros([BN], dtype=tl.float32)
        for row in range(0, M):
            x = tl.load(x_ptr + row * N + cols, mask=col_in, other=0.0)
            dy = tl.load(dy_ptr + row * N + cols, mask=col_in, other=0.0)
            xhat = tl.where(col_in, (x - tl.load(mean_ptr + row)) * tl.load(rstd_ptr + row), 0.0)
            dw += dy * xhat
            db += dy
        tl.store(z_ptr + M * N + cols, dw, mask=col_in)
        tl.store(z_ptr + (M + 1) * N + cols, db, mask=col_in)



# -- likely slips, each the reference with one change ---------------------------------------------------------------

@triton.jit
def layernorm_backward_learner_slips(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, z_ptr, M, N, BM: tl.constexpr,
                            BN: tl.constexpr, C1: tl.constexpr, C2: tl.constexpr, LITERAL_N: tl.constexpr,
                            ZEROED: tl.constexpr, SWAPPED: tl.constexpr, RSTD: tl.constexpr):
    """C1, C2: dx's terms x̂ · mean(w·dy·x̂) and mean(w·dy); LITERAL_N: the row means divided by 100 (the first
    size's N); ZEROED: program 0 stores zeros into dw and db before the atomics (z starts at zero already);
    SWAPPED: dw and db in each other's row; RSTD: dx multiplied by rstd."""
    cols = tl.arange(0, BN)
    col_in = cols < N
    if ZEROED:
        if tl.program_id(0) == 0:
            tl.store(z_ptr + M * N + cols, tl.zeros([BN], dtype=tl.float32), mask=col_in)
            tl.store(z_ptr + (M + 1) * N + cols, tl.zeros([BN], dtype=tl.float32), mask=col_in)
    w = tl.load(w_ptr + cols, mask=col_in, other=0.0)
    dw = tl.zeros([BN], dtype=tl.float32)
    db = tl.zeros([BN], dtype=tl.float32)
    for r in range(BM):
        row = tl.program_id(0) * BM + r
        mask = col_in & (row < M)
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
        mean = tl.load(mean_ptr + row, mask=row < M, other=0.0)
        rstd = tl.load(rstd_ptr + row, mask=row < M, other=0.0)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        wdy = w * dy
        if LITERAL_N:
            c1 = tl.sum(xhat * wdy, axis=0) / 100
            c2 = tl.sum(wdy, axis=0) / 100
        else:
            c1 = tl.sum(xhat * wdy, axis=0) / N
            c2 = tl.sum(wdy, axis=0) / N
        dx = wdy
        if C1:
            dx -= xhat * c1
        if C2:
            dx -= c2
        if RSTD:
            dx = dx * rstd
        tl.store(z_ptr + row * N + cols, dx, mask=mask)
        dw += dy * xhat
        db += dy
    if SWAPPED:
        tl.atomic_add(z_ptr + M * N + cols, db, mask=col_in)
        tl.atomic_add(z_ptr + (M + 1) * N + cols, dw, mask=col_in)
    else:
        tl.atomic_add(z_ptr + M * N + cols, dw, mask=col_in)
        tl.atomic_add(z_ptr + (M + 1) * N + cols, db, mask=col_in)


def layernorm_backward(**slip):
    return with_flags(layernorm_backward_learner_slips, {"C1": True, "C2": True, "LITERAL_N": False, "ZEROED": False,
                                                "SWAPPED": False, "RSTD": True}, **slip)



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def layernorm_backward_with(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, z_ptr, M, N, BM: tl.constexpr,
                            BN: tl.constexpr, SUM: tl.constexpr, NO_MEANS: tl.constexpr, NO_WEIGHT: tl.constexpr,
                            BLOCK_COUNT: tl.constexpr, DW_FROM_X: tl.constexpr):
    """The reference with one change switched on. SUM says how the programs' partial dw and db reach z:
    0 one atomic per column after the loop (the reference), 1 an atomic per row inside the loop (right, slower),
    2 a load, an add and a plain store (a race), 3 a plain store of the partial sums (a race: the last wins)."""
    cols = tl.arange(0, BN)
    col_in = cols < N
    w = tl.load(w_ptr + cols, mask=col_in, other=0.0)
    dw = tl.zeros([BN], dtype=tl.float32)
    db = tl.zeros([BN], dtype=tl.float32)
    count = BN if BLOCK_COUNT else N
    for r in range(BM):
        row = tl.program_id(0) * BM + r
        mask = col_in & (row < M)
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
        mean = tl.load(mean_ptr + row, mask=row < M, other=0.0)
        rstd = tl.load(rstd_ptr + row, mask=row < M, other=0.0)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        wdy = dy if NO_WEIGHT else w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / count
        c2 = tl.sum(wdy, axis=0) / count
        dx = wdy * rstd if NO_MEANS else (wdy - (xhat * c1 + c2)) * rstd
        tl.store(z_ptr + row * N + cols, dx, mask=mask)
        dw_row = dy * x if DW_FROM_X else dy * xhat
        if SUM == 1:
            tl.atomic_add(z_ptr + M * N + cols, dw_row, mask=mask)
            tl.atomic_add(z_ptr + (M + 1) * N + cols, dy, mask=mask)
        dw += dw_row
        db += dy
    if SUM == 0:
        tl.atomic_add(z_ptr + M * N + cols, dw, mask=col_in)
        tl.atomic_add(z_ptr + (M + 1) * N + cols, db, mask=col_in)
    elif SUM == 2:
        old_dw = tl.load(z_ptr + M * N + cols, mask=col_in, other=0.0)
        old_db = tl.load(z_ptr + (M + 1) * N + cols, mask=col_in, other=0.0)
        tl.store(z_ptr + M * N + cols, old_dw + dw, mask=col_in)
        tl.store(z_ptr + (M + 1) * N + cols, old_db + db, mask=col_in)
    elif SUM == 3:
        tl.store(z_ptr + M * N + cols, dw, mask=col_in)
        tl.store(z_ptr + (M + 1) * N + cols, db, mask=col_in)


def layernorm_backward_variant(**flag):
    flags = {"SUM": 0, "NO_MEANS": False, "NO_WEIGHT": False, "BLOCK_COUNT": False, "DW_FROM_X": False, **flag}
    return triton.heuristics({name: (lambda args, v=value: v) for name, value in flags.items()})(
        layernorm_backward_with)


@triton.jit
def layernorm_backward_tile(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, z_ptr, M, N, BM: tl.constexpr,
                            BN: tl.constexpr):
    """Right in another style: the program's BM rows as one BM × BN tile, its partial dw and db summed down
    the tile (tl.sum over axis 0) and added with one atomic per column."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    tile = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + tile, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + tile, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    mean = tl.load(mean_ptr + rows, mask=rows < M, other=0.0)
    rstd = tl.load(rstd_ptr + rows, mask=rows < M, other=0.0)
    xhat = tl.where(mask, (x - mean[:, None]) * rstd[:, None], 0.0)
    wdy = w[None, :] * dy
    c1 = tl.sum(xhat * wdy, axis=1) / N
    c2 = tl.sum(wdy, axis=1) / N
    tl.store(z_ptr + tile, (wdy - (xhat * c1[:, None] + c2[:, None])) * rstd[:, None], mask=mask)
    tl.atomic_add(z_ptr + M * N + cols, tl.sum(dy * xhat, axis=0), mask=cols < N)
    tl.atomic_add(z_ptr + (M + 1) * N + cols, tl.sum(dy, axis=0), mask=cols < N)


@triton.jit
def layernorm_backward_no_row_mask(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, z_ptr, M, N, BM: tl.constexpr,
                                   BN: tl.constexpr):
    cols = tl.arange(0, BN)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    dw = tl.zeros([BN], dtype=tl.float32)
    db = tl.zeros([BN], dtype=tl.float32)
    for r in range(BM):
        row = tl.program_id(0) * BM + r  # rows past M are read too: M need not be a multiple of BM
        mask = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0)
        xhat = tl.where(mask, (x - tl.load(mean_ptr + row)) * tl.load(rstd_ptr + row), 0.0)
        wdy = w * dy
        dx = (wdy - (xhat * tl.sum(xhat * wdy, axis=0) / N + tl.sum(wdy, axis=0) / N)) * tl.load(rstd_ptr + row)
        tl.store(z_ptr + row * N + cols, dx, mask=mask)
        dw += dy * xhat
        db += dy
    tl.atomic_add(z_ptr + M * N + cols, dw, mask=cols < N)
    tl.atomic_add(z_ptr + (M + 1) * N + cols, db, mask=cols < N)


CORRECT = (layernorm_backward_tile, layernorm_backward_kernel_one_program_sums)

# Never graded themselves: a helper that kernels call, or a kernel whose flags a wrapper sets.
BUILDING_BLOCKS = (layernorm_backward_with, layernorm_backward_learner_slips,)
