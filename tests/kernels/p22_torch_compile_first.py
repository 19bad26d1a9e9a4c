"""Puzzle 22 (torch compile first): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl
from kernel_flags import with_flags

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def linear_relu_bias_first(x_ptr, w_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr):
    """The bias starts the accumulator (tl.dot adds into it), pointers advance by BK each step, and the relu
    is a tl.where."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    bias = tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    acc = tl.zeros([BM, BN], dtype=tl.float32) + bias[None, :]
    ks = tl.arange(0, BK)
    x_tile = x_ptr + rows[:, None] * K + ks[None, :]
    w_tile = w_ptr + ks[:, None] * N + cols[None, :]
    for k0 in range(0, tl.cdiv(K, BK) * BK, BK):
        in_k = (k0 + ks) < K
        x = tl.load(x_tile, mask=(rows[:, None] < M) & in_k[None, :], other=0.0)
        w = tl.load(w_tile, mask=in_k[:, None] & (cols[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
        x_tile += BK
        w_tile += BK * N
    out = tl.where(acc > 0, acc, 0.0)
    tl.store(z_ptr + rows[:, None] * N + cols[None, :], out.to(tl.float16),
             mask=(rows[:, None] < M) & (cols[None, :] < N))



# -- likely slips, each the reference with one change ---------------------------------------------------------------

@triton.jit
def linear_relu_float32_tiles(x_ptr, w_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                              BK: tl.constexpr):
    """Right, slower: the fp16 tiles converted to float32 before tl.dot (the hint says not to, for speed)."""
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & (k < K)[None, :], other=0.0)
        w = tl.load(w_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0.0)
        acc += tl.dot(x.to(tl.float32), w.to(tl.float32), input_precision="ieee")
    b = tl.load(b_ptr + n, mask=n < N, other=0.0).to(tl.float32)
    tl.store(z_ptr + m[:, None] * N + n[None, :], tl.maximum(acc + b[None, :], 0.0).to(tl.float16),
             mask=(m < M)[:, None] & (n < N)[None, :])


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



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def without_bias(x_ptr, w_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & (k < K)[None, :], other=0.0)
        w = tl.load(w_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0.0)
        acc += tl.dot(x, w)
    z = tl.maximum(acc, 0.0)  # b never added
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m < M)[:, None] & (n < N)[None, :])


@triton.jit
def without_relu(x_ptr, w_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & (k < K)[None, :], other=0.0)
        w = tl.load(w_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0.0)
        acc += tl.dot(x, w)
    b = tl.load(b_ptr + n, mask=n < N, other=0.0)
    z = acc + b[None, :].to(tl.float32)  # the relu forgotten
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m < M)[:, None] & (n < N)[None, :])


@triton.jit
def bias_after_relu(x_ptr, w_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & (k < K)[None, :], other=0.0)
        w = tl.load(w_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0.0)
        acc += tl.dot(x, w)
    b = tl.load(b_ptr + n, mask=n < N, other=0.0)
    z = tl.maximum(acc, 0.0) + b[None, :].to(tl.float32)
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m < M)[:, None] & (n < N)[None, :])


@triton.jit
def bias_by_row(x_ptr, w_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & (k < K)[None, :], other=0.0)
        w = tl.load(w_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0.0)
        acc += tl.dot(x, w)
    b = tl.load(b_ptr + m, mask=m < M, other=0.0)  # one bias per row: reads past b where M > N
    z = tl.maximum(acc + b[:, None].to(tl.float32), 0.0)
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m < M)[:, None] & (n < N)[None, :])


@triton.jit
def k_loop_one_chunk_short(x_ptr, w_ptr, b_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                           BK: tl.constexpr):
    m = tl.program_id(0) * BM + tl.arange(0, BM)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K - BK, BK):  # the ragged last chunk never added
        k = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + m[:, None] * K + k[None, :], mask=(m < M)[:, None] & (k < K)[None, :], other=0.0)
        w = tl.load(w_ptr + k[:, None] * N + n[None, :], mask=(k < K)[:, None] & (n < N)[None, :], other=0.0)
        acc += tl.dot(x, w)
    b = tl.load(b_ptr + n, mask=n < N, other=0.0)
    z = tl.maximum(acc + b[None, :].to(tl.float32), 0.0)
    tl.store(z_ptr + m[:, None] * N + n[None, :], z.to(tl.float16), mask=(m < M)[:, None] & (n < N)[None, :])


CORRECT = (linear_relu_bias_first,)

# Never graded themselves: a helper that kernels call, or a kernel whose flags a wrapper sets.
BUILDING_BLOCKS = (linear_relu_with,)
