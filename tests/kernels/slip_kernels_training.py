"""Puzzles 22, 24, 25 and 26 written as new learners write them, each with one slip (issue 48): a flag of
one kernel per puzzle switches the slip on (set by @triton.heuristics, which the grader applies as Triton
does), so that each slip is the reference with one line changed. tests/course/test_slips_training.py grades them."""

from __future__ import annotations

import triton
import triton.language as tl


def with_flags(kernel, defaults: dict, **flags):
    """`kernel` with its constexpr flags set: the defaults (the right kernel) with `flags` changed."""
    values = {**defaults, **flags}
    return triton.heuristics({name: (lambda args, v=value: v) for name, value in values.items()})(kernel)


# -- puzzle 22: z = relu(x @ w + b), fp16 ------------------------------------------------------------------


@triton.jit
def linear_relu_with(x_ptr, w_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                     EPILOGUE: tl.constexpr, W_AS_NK: tl.constexpr, X_AS_KM: tl.constexpr, ACC16: tl.constexpr):
    """ACC16: 0 a float32 accumulator, 1 a float16 one fed chunks rounded to float16, 2 tl.dot summing into a
    float16 accumulator (out_dtype), 3 a float32 one rounded to float16 after each chunk."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    if ACC16 == 1 or ACC16 == 2:
        acc = tl.zeros([BM, BN], dtype=tl.float16)
    else:
        acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        if X_AS_KM:
            x = tl.load(x_ptr + k[None, :] * M + m[:, None], mask=(m < M)[:, None] & (k < K)[None, :], other=0.0)
        else:
            x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & (k < K)[None, :], other=0.0)
        if W_AS_NK:
            w = tl.load(w_ptr + n[None, :] * K + k[:, None], mask=(k < K)[:, None] & (n < N)[None, :], other=0.0)
        else:
            w = tl.load(w_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0.0)
        if ACC16 == 1:
            acc += tl.dot(x, w).to(tl.float16)
        elif ACC16 == 2:
            acc = tl.dot(x, w, acc, out_dtype=tl.float16)
        elif ACC16 == 3:
            acc = (acc + tl.dot(x, w)).to(tl.float16).to(tl.float32)
        else:
            acc += tl.dot(x, w)
    b = tl.load(b_ptr + n, mask=n < N, other=0.0)
    if EPILOGUE:
        z = tl.maximum(acc.to(tl.float32) + b[None, :].to(tl.float32), 0.0)
    else:
        z = acc
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m < M)[:, None] & (n < N)[None, :])


LINEAR = {"EPILOGUE": True, "W_AS_NK": False, "X_AS_KM": False, "ACC16": 0}


def linear_relu(**slip):
    return with_flags(linear_relu_with, LINEAR, **slip)


# -- puzzle 24: seeded dropout ------------------------------------------------------------------------------


@triton.jit
def dropout_with(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr, SCALE: tl.constexpr):
    """SCALE: 0 x / (1 - p), 1 x * (1 - p), 2 x / p."""
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + row * N0 + cols, mask=cols < N0, other=0.0)
    r = tl.rand(tl.load(seeds_ptr + row), cols)
    if SCALE == 1:
        kept = x * (1 - p)
    elif SCALE == 2:
        kept = x / p
    else:
        kept = x / (1 - p)
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, kept, 0.0), mask=cols < N0)


def dropout(**slip):
    return with_flags(dropout_with, {"SCALE": 0}, **slip)


# -- puzzle 25: layer norm forward --------------------------------------------------------------------------


@triton.jit
def layernorm_with(x_ptr, w_ptr, b_ptr, z_ptr, M, N, eps, BN: tl.constexpr, MEAN_OVER_BN: tl.constexpr,
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
    return with_flags(layernorm_with, {"MEAN_OVER_BN": False, "VAR_OVER_BN": False, "AFFINE": True, "EPS": 0,
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


# -- puzzle 26: layer norm backward -------------------------------------------------------------------------


@triton.jit
def layernorm_backward_with(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, z_ptr, M, N, BM: tl.constexpr,
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
    return with_flags(layernorm_backward_with, {"C1": True, "C2": True, "LITERAL_N": False, "ZEROED": False,
                                                "SWAPPED": False, "RSTD": True}, **slip)
