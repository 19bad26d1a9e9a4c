"""Puzzle 14 (unpack int4): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def unpack_implicit_store_cast(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (k < K)[:, None] & (n < N)[None, :]
    w = tl.load(qweight_ptr + (k >> 3)[:, None] * N + n[None, :], mask=m, other=0)
    tl.store(z_ptr + k[:, None] * N + n[None, :], ((w >> ((k & 7) * 4)[:, None]) & 15) - 8, mask=m)


@triton.jit
def unpack_logical_shift(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (k[:, None] < K) & (n[None, :] < N)
    w = tl.load(qweight_ptr + (k[:, None] // 8) * N + n[None, :], mask=mask, other=0).to(tl.uint32, bitcast=True)
    q = ((w >> (4 * (k[:, None] % 8)).to(tl.uint32)) & 0xF).to(tl.int32) - 8
    tl.store(z_ptr + k[:, None] * N + n[None, :], q.to(z_ptr.dtype.element_ty), mask=mask)


@triton.jit
def unpack_words_once(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    wr = tl.program_id(0) * (BK // 8) + tl.arange(0, BK // 8)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (wr[:, None] < K // 8) & (n[None, :] < N)
    words = tl.load(qweight_ptr + wr[:, None] * N + n[None, :], mask=m, other=0)
    shifts = tl.arange(0, 8) * 4
    q = (words[:, None, :] >> shifts[None, :, None]) & 0xF  # BK/8 x 8 x BN
    k = wr[:, None, None] * 8 + tl.arange(0, 8)[None, :, None]
    tl.store(z_ptr + k * N + n[None, None, :], (q - 8).to(tl.int8), mask=m[:, None, :])



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def unpack_int4_kernel_zeroes_next_rows(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    """Clears the next program's rows first (they are rewritten when that program runs, later here)."""
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    following = k + BK
    tl.store(z_ptr + following[:, None] * N + n[None, :], tl.zeros([BK, BN], tl.int8),
             mask=(following < K)[:, None] & (n < N)[None, :])
    in_bounds = (k < K)[:, None] & (n < N)[None, :]
    words = tl.load(qweight_ptr + (k // 8)[:, None] * N + n[None, :], mask=in_bounds, other=0)
    tl.store(z_ptr + k[:, None] * N + n[None, :], (((words >> ((k % 8) * 4)[:, None]) & 0xF) - 8).to(tl.int8),
             mask=in_bounds)



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def unpack_shifting_by_a_byte(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (k < K)[:, None] & (n < N)[None, :]
    words = tl.load(qweight_ptr + (k // 8)[:, None] * N + n[None, :], mask=mask)  # no other=: fine, never stored
    q = (words >> ((k % 8) * 8)[:, None]) & 0xF  # 8 bits a nibble: wrong at every size
    tl.store(z_ptr + k[:, None] * N + n[None, :], (q - 8).to(tl.int8), mask=mask)


@triton.jit
def unpack_without_any_mask(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    words = tl.load(qweight_ptr + (k // 8)[:, None] * N + n[None, :])
    q = (words >> ((k % 8) * 4)[:, None]) & 0xF
    tl.store(z_ptr + k[:, None] * N + n[None, :], (q - 8).to(tl.int8))


@triton.jit
def unpack_with_the_row_as_word_index(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (k < K)[:, None] & (n < N)[None, :]
    words = tl.load(qweight_ptr + k[:, None] * N + n[None, :], mask=mask, other=0)  # k, not k // 8: 8x too far
    q = (words >> ((k % 8) * 4)[:, None]) & 0xF
    tl.store(z_ptr + k[:, None] * N + n[None, :], (q - 8).to(tl.int8), mask=mask)



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def unpack_masking_before_shifting(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    ok = (k < K)[:, None] & (n < N)[None, :]
    words = tl.load(qweight_ptr + (k // 8)[:, None] * N + n[None, :], mask=ok, other=0)
    shift = ((k % 8) * 4)[:, None]
    q = (words & (0xF << shift)) >> shift  # the top nibble is the sign: the arithmetic shift extends it
    tl.store(z_ptr + k[:, None] * N + n[None, :], (q - 8).to(tl.int8), mask=ok)


@triton.jit
def unpack_along_n(qweight_ptr, z_ptr, K, N, BK: tl.constexpr, BN: tl.constexpr):
    k = tl.program_id(0) * BK + tl.arange(0, BK)
    n = tl.program_id(1) * BN + tl.arange(0, BN)
    ok = (k < K)[:, None] & (n < N)[None, :]
    # Puzzle 12's layout (packed along the row) read into puzzle 14's buffer.
    words = tl.load(qweight_ptr + k[:, None] * (N // 8) + (n // 8)[None, :], mask=ok, other=0)
    q = (words >> ((n % 8) * 4)[None, :]) & 0xF
    tl.store(z_ptr + k[:, None] * N + n[None, :], (q - 8).to(tl.int8), mask=ok)


CORRECT = (unpack_implicit_store_cast, unpack_logical_shift, unpack_words_once)
