"""Puzzle 25 (layernorm forward): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl
from kernel_flags import with_flags

# -- likely slips, each the reference with one change ---------------------------------------------------------------

@triton.jit
def _welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    share = tl.where(n == 0, 0.0, n_b / tl.where(n == 0, 1.0, n))
    delta = mean_b - mean_a
    return mean_a + delta * share, m2_a + m2_b + delta * delta * n_a * share, n


@triton.jit
def layernorm_welford(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr):
    """Welford's running mean and M2 in each lane (the mean rounded at every update), merged across the lanes."""
    row = tl.program_id(0)
    mean = tl.zeros([BN], dtype=tl.float32)
    m2 = tl.zeros([BN], dtype=tl.float32)
    count = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        count += tl.where(cols < N, 1.0, 0.0)
        delta = tl.where(cols < N, x - mean, 0.0)
        mean += delta / tl.maximum(count, 1.0)
        m2 += delta * tl.where(cols < N, x - mean, 0.0)
    mean_row, m2_row, _ = tl.reduce((mean, m2, count), 0, _welford_combine)
    rstd = 1 / tl.sqrt(m2_row / N + eps)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
        tl.store(z_ptr + row * N + cols, (x - mean_row) * rstd * w + b, mask=cols < N)


@triton.jit
def layernorm_variance_a_little_off(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr):
    """All float32, the variance 0.2% too large: a constant slightly off, nothing a 16-bit type did."""
    row = tl.program_id(0)
    cols = tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        acc += tl.load(x_ptr + row * N + n0 + cols, mask=n0 + cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        x = tl.load(x_ptr + row * N + n0 + cols, mask=n0 + cols < N, other=0.0)
        centred = tl.where(n0 + cols < N, x - mean, 0.0)
        acc += centred * centred
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N * 1.002 + eps)
    for n0 in range(0, N, BN):
        mask = n0 + cols < N
        x = tl.load(x_ptr + row * N + n0 + cols, mask=mask, other=0.0)
        w = tl.load(w_ptr + n0 + cols, mask=mask, other=0.0)
        b = tl.load(b_ptr + n0 + cols, mask=mask, other=0.0)
        tl.store(z_ptr + row * N + n0 + cols, (x - mean) * rstd * w + b, mask=mask)


@triton.jit
def layernorm_learner_slips(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr, MEAN_OVER_BN: tl.constexpr,
                   VAR_OVER_BN: tl.constexpr, AFFINE: tl.constexpr, EPS: tl.constexpr, MOMENTS: tl.constexpr):
    """EPS: 0 the argument, 1 written as 1e-5, 2 left out. MOMENTS: the variance as E[x²] - mean². (All in
    float32: its source names no 16-bit type, so no verdict on it may blame one.)"""
    row = tl.program_id(0)
    acc = tl.zeros([BN], dtype=tl.float32)
    squares = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        acc += x
        squares += x * x
    if MEAN_OVER_BN:
        mean = tl.sum(acc, axis=0) / BN
    else:
        mean = tl.sum(acc, axis=0) / N
    if MOMENTS:
        var = tl.sum(squares, axis=0) / N - mean * mean
    else:
        acc = tl.zeros([BN], dtype=tl.float32)
        for n0 in range(0, N, BN):
            cols = n0 + tl.arange(0, BN)
            x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
            centred = tl.where(cols < N, x - mean, 0.0)
            acc += centred * centred
        if VAR_OVER_BN:
            var = tl.sum(acc, axis=0) / BN
        else:
            var = tl.sum(acc, axis=0) / N
    if EPS == 1:
        rstd = 1 / tl.sqrt(var + 1e-5)
    elif EPS == 2:
        rstd = 1 / tl.sqrt(var)
    else:
        rstd = 1 / tl.sqrt(var + eps)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
        if AFFINE:
            z = (x - mean) * rstd * w + b
        else:
            z = (x - mean) * rstd
        tl.store(z_ptr + row * N + cols, z, mask=cols < N)


def layernorm(**slip):
    return with_flags(layernorm_learner_slips, {"MEAN_OVER_BN": False, "VAR_OVER_BN": False, "AFFINE": True, "EPS": 0,
                                       "MOMENTS": False}, **slip)


@triton.jit
def layernorm_half_output(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr):
    """The statistics in float32, the output pass in float16: a 16-bit type is in play, and is what is wrong."""
    row = tl.program_id(0)
    cols = tl.arange(0, BN)
    acc = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        acc += tl.load(x_ptr + row * N + n0 + cols, mask=n0 + cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        x = tl.load(x_ptr + row * N + n0 + cols, mask=n0 + cols < N, other=0.0)
        centred = tl.where(n0 + cols < N, x - mean, 0.0)
        acc += centred * centred
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for n0 in range(0, N, BN):
        mask = n0 + cols < N
        x = tl.load(x_ptr + row * N + n0 + cols, mask=mask, other=0.0).to(tl.float16)
        w = tl.load(w_ptr + n0 + cols, mask=mask, other=0.0).to(tl.float16)
        b = tl.load(b_ptr + n0 + cols, mask=mask, other=0.0).to(tl.float16)
        z = (x - mean.to(tl.float16)) * rstd.to(tl.float16) * w + b
        tl.store(z_ptr + row * N + n0 + cols, z.to(tl.float32), mask=mask)



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def layernorm_with(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr, UNBIASED: tl.constexpr,
                   EPS_OUTSIDE: tl.constexpr, PADDING_COUNTED: tl.constexpr, PADDED_COUNT: tl.constexpr,
                   SWAPPED: tl.constexpr, ONE_PASS: tl.constexpr):
    """The reference with one slip switched on (each test below binds one flag through a wrapper kernel)."""
    row = tl.program_id(0)
    count = tl.cdiv(N, BN) * BN if PADDED_COUNT else N
    acc = tl.zeros([BN], dtype=tl.float32)
    squares = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        acc += x
        squares += x * x
    mean = tl.sum(acc, axis=0) / count
    if ONE_PASS:
        var = tl.sum(squares, axis=0) / count - mean * mean
    else:
        acc = tl.zeros([BN], dtype=tl.float32)
        for n0 in range(0, N, BN):
            cols = n0 + tl.arange(0, BN)
            x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
            centred = x - mean if PADDING_COUNTED else tl.where(cols < N, x - mean, 0.0)
            acc += centred * centred
        var = tl.sum(acc, axis=0) / (N - 1 if UNBIASED else count)
    rstd = 1 / (tl.sqrt(var) + eps) if EPS_OUTSIDE else 1 / tl.sqrt(var + eps)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
        z = (x - mean) * rstd * b + w if SWAPPED else (x - mean) * rstd * w + b
        tl.store(z_ptr + row * N + cols, z, mask=cols < N)


def layernorm_slip(**flag):
    """A kernel with the puzzle's signature whose flags are set by @triton.heuristics (which the grader
    applies as Triton does)."""
    flags = {name: flag.get(name, False) for name in
             ("UNBIASED", "EPS_OUTSIDE", "PADDING_COUNTED", "PADDED_COUNT", "SWAPPED", "ONE_PASS")}
    return triton.heuristics({name: (lambda args, v=value: v) for name, value in flags.items()})(layernorm_with)


@triton.jit
def layernorm_shifted_one_pass(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr):
    """Right in another style: one pass over the row for both statistics, on values shifted by the row's first
    element (close to the mean, so nothing cancels), then the output pass."""
    row = tl.program_id(0)
    shift = tl.load(x_ptr + row * N)
    total = tl.zeros([BN], dtype=tl.float32)
    squares = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        d = tl.where(cols < N, tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0) - shift, 0.0)
        total += d
        squares += d * d
    mean_d = tl.sum(total, axis=0) / N
    rstd = tl.rsqrt(tl.sum(squares, axis=0) / N - mean_d * mean_d + eps)
    mean = shift + mean_d
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
        tl.store(z_ptr + row * N + cols, (x - mean) * rstd * w + b, mask=cols < N)


@triton.jit
def layernorm_one_block(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BN)  # the row taken as one block: past BN it is never read
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(cols < N, x - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(centred * centred, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    tl.store(z_ptr + row * N + cols, centred * rstd * w + b, mask=cols < N)


CORRECT = (layernorm_shifted_one_pass,)

# Never graded themselves: a helper that kernels call, or a kernel whose flags a wrapper sets.
BUILDING_BLOCKS = (layernorm_with, layernorm_learner_slips,)

# -- right but slow, each for one reason the efficiency model names (issue 51) ----------------------------------------

@triton.jit
def layernorm_four_passes(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr):
    """Right, re-reading: the mean, the variance and the output each read the row again, and the mean twice."""
    row = tl.program_id(0)
    acc = tl.zeros([BN], dtype=tl.float32)
    for _rep in range(2):
        for n0 in range(0, N, BN):
            cols = n0 + tl.arange(0, BN)
            acc += 0.5 * tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BN], dtype=tl.float32)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        centred = tl.where(cols < N, x - mean, 0.0)
        acc += centred * centred
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for n0 in range(0, N, BN):
        cols = n0 + tl.arange(0, BN)
        in_row = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=in_row, other=0.0)
        w = tl.load(w_ptr + cols, mask=in_row, other=0.0)
        b = tl.load(b_ptr + cols, mask=in_row, other=0.0)
        tl.store(z_ptr + row * N + cols, (x - mean) * rstd * w + b, mask=in_row)


@triton.jit
def layernorm_one_pass_chunks_of_32(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr):
    """Right, tiny chunks: the reference's passes 32 columns at a time whatever BN is."""
    row = tl.program_id(0)
    acc = tl.zeros([32], dtype=tl.float32)
    for n0 in range(0, N, 32):
        cols = n0 + tl.arange(0, 32)
        acc += tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([32], dtype=tl.float32)
    for n0 in range(0, N, 32):
        cols = n0 + tl.arange(0, 32)
        centred = tl.where(cols < N, tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0) - mean, 0.0)
        acc += centred * centred
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for n0 in range(0, N, 32):
        cols = n0 + tl.arange(0, 32)
        in_row = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=in_row, other=0.0)
        w = tl.load(w_ptr + cols, mask=in_row, other=0.0)
        b = tl.load(b_ptr + cols, mask=in_row, other=0.0)
        tl.store(z_ptr + row * N + cols, (x - mean) * rstd * w + b, mask=in_row)


SLOW = (layernorm_one_pass_chunks_of_32, layernorm_four_passes)
