"""Puzzle 12 (quantized matmul): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

from solutions.p12_quantized_matmul import quant_dot_kernel as _quant_dot

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def quant_dot_per_element(
    scale_ptr,
    offset_ptr,
    weight_ptr,
    activation_ptr,
    z_ptr,
    N0,
    N1,
    MID,
    B0: tl.constexpr,
    B1: tl.constexpr,
    B_MID: tl.constexpr,
):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    acc = tl.zeros((B0, B1), dtype=tl.float32)
    for k0 in tl.range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        rm = (rows < N0)[:, None] & (k < MID)[None, :]
        word = tl.load(weight_ptr + rows[:, None] * (MID // 8) + (k // 8)[None, :], mask=rm, other=0)
        w = (word >> ((k % 8) * 4)[None, :]) & 0xF
        g = k // 8
        sc = tl.load(scale_ptr + rows[:, None] * (MID // 8) + g[None, :], mask=rm, other=0.0)
        sw = tl.load(offset_ptr + rows[:, None] * (MID // 64) + (g // 8)[None, :], mask=rm, other=0)
        sh = (sw >> ((g % 8) * 4)[None, :]) & 0xF
        deq = sc * (w - sh).to(tl.float32)
        act = tl.load(
            activation_ptr + k[:, None] * N1 + cols[None, :], mask=(k < MID)[:, None] & (cols < N1)[None, :], other=0.0
        )
        acc = tl.dot(deq, act, acc)
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=(rows < N0)[:, None] & (cols < N1)[None, :])


@triton.jit
def quant_dot_sum_not_dot(
    scale_ptr,
    offset_ptr,
    weight_ptr,
    activation_ptr,
    z_ptr,
    N0,
    N1,
    MID,
    B0: tl.constexpr,
    B1: tl.constexpr,
    B_MID: tl.constexpr,
):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    acc = tl.zeros((B0, B1), dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        word = tl.load(weight_ptr + rows[:, None] * (MID // 8) + (k // 8)[None, :], mask=(rows < N0)[:, None])
        nib = (word >> ((k % 8) * 4)[None, :]) & 0xF
        sc = tl.load(scale_ptr + rows[:, None] * (MID // 8) + (k // 8)[None, :], mask=(rows < N0)[:, None])
        sw = tl.load(offset_ptr + rows[:, None] * (MID // 64) + (k // 64)[None, :], mask=(rows < N0)[:, None])
        sh = (sw >> (((k // 8) % 8) * 4)[None, :]) & 0xF
        deq = sc * (nib - sh)
        act = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=(cols < N1)[None, :])
        acc += tl.sum(deq[:, :, None] * act[None, :, :], axis=1)
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=(rows < N0)[:, None] & (cols < N1)[None, :])



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def quant_dot_float16_accumulator(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                                   B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    acc = tl.zeros((B0, B1), dtype=tl.float16)  # the sum kept in float16: within the TF32 tolerance
    for k0 in tl.range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        rm = (rows < N0)[:, None] & (k < MID)[None, :]
        word = tl.load(weight_ptr + rows[:, None] * (MID // 8) + (k // 8)[None, :], mask=rm, other=0)
        w = (word >> ((k % 8) * 4)[None, :]) & 0xF
        g = k // 8
        sc = tl.load(scale_ptr + rows[:, None] * (MID // 8) + g[None, :], mask=rm, other=0.0)
        sw = tl.load(offset_ptr + rows[:, None] * (MID // 64) + (g // 8)[None, :], mask=rm, other=0)
        sh = (sw >> ((g % 8) * 4)[None, :]) & 0xF
        deq = (sc * (w - sh).to(tl.float32)).to(tl.float16)
        act_in = (k < MID)[:, None] & (cols < N1)[None, :]
        act = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=act_in, other=0.0).to(tl.float16)
        acc += tl.dot(deq, act, out_dtype=tl.float16)
    z_in = (rows < N0)[:, None] & (cols < N1)[None, :]
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc.to(tl.float32), mask=z_in)


@triton.jit
def quant_dot_kernel_columns_of_16(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                                   B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    _quant_dot(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID, B0, 16, B_MID)


@triton.jit
def quant_dot_kernel_one_shift_word_per_chunk(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1,
                                              MID, B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    """Puzzle 12 loading one shift word per row and chunk (word k0 // 64): right only when B_MID is 64."""
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    rows_in, cols_in = rows < N0, cols < N1
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        k = k0 + tl.arange(0, B_MID)
        words = tl.load(weight_ptr + rows[:, None] * (MID // 8) + (k // 8)[None, :], mask=rows_in[:, None], other=0)
        w = (words >> ((k % 8) * 4)[None, :]) & 0xF
        scale = tl.load(scale_ptr + rows[:, None] * (MID // 8) + (k // 8)[None, :], mask=rows_in[:, None], other=0.0)
        shift_word = tl.load(offset_ptr + rows * (MID // 64) + k0 // 64, mask=rows_in, other=0)
        shift = (shift_word[:, None] >> (((k // 8) % 8) * 4)[None, :]) & 0xF
        activation = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=cols_in[None, :], other=0.0)
        acc += tl.dot(scale * (w - shift).to(tl.float32), activation)
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=rows_in[:, None] & cols_in[None, :])


@triton.jit
def quant_dot_kernel_first_group_from_the_words_per_chunk(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr,
                                                         N0, N1, MID, B0: tl.constexpr, B1: tl.constexpr,
                                                         B_MID: tl.constexpr):
    """Puzzle 12 with the chunk's first group at k0 // (B_MID // 8) (its words per chunk) instead of k0 // 8:
    the same where B_MID is 64 or MID is one chunk."""
    WORDS: tl.constexpr = B_MID // 8
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    rows_in, cols_in = rows < N0, cols < N1
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        group = k0 // WORDS + tl.arange(0, WORDS)
        words = tl.load(weight_ptr + rows[:, None] * (MID // 8) + group[None, :], mask=rows_in[:, None], other=0)
        w = (words[:, :, None] >> (tl.arange(0, 8) * 4)[None, None, :]) & 0xF
        scale = tl.load(scale_ptr + rows[:, None] * (MID // 8) + group[None, :], mask=rows_in[:, None], other=0.0)
        shift_words = tl.load(offset_ptr + rows[:, None] * (MID // 64) + (group // 8)[None, :], mask=rows_in[:, None],
                              other=0)
        shift = (shift_words >> ((group % 8) * 4)[None, :]) & 0xF
        k = k0 + tl.arange(0, B_MID)
        activation = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=cols_in[None, :], other=0.0)
        dequantized = scale[:, :, None] * (w - shift[:, :, None]).to(tl.float32)
        acc += tl.dot(tl.reshape(dequantized, (B0, B_MID)), activation)
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=rows_in[:, None] & cols_in[None, :])



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def _quant_dot_body(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID, B0: tl.constexpr,
                    B1: tl.constexpr, B_MID: tl.constexpr, WEIGHT_BITS: tl.constexpr, SHIFT_BITS: tl.constexpr):
    """Puzzle 12's reference with the bits between two nibbles as flags (4: right; 8: a byte, the slip)."""
    WORDS: tl.constexpr = B_MID // 8
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    acc = tl.zeros([B0, B1], dtype=tl.float32)
    for k0 in range(0, MID, B_MID):
        group = k0 // 8 + tl.arange(0, WORDS)
        words = tl.load(weight_ptr + rows[:, None] * (MID // 8) + group[None, :], mask=(rows < N0)[:, None], other=0)
        w = (words[:, :, None] >> (tl.arange(0, 8) * WEIGHT_BITS)[None, None, :]) & 0xF
        scale = tl.load(scale_ptr + rows[:, None] * (MID // 8) + group[None, :], mask=(rows < N0)[:, None], other=0.0)
        shift_words = tl.load(offset_ptr + rows[:, None] * (MID // 64) + (group // 8)[None, :],
                              mask=(rows < N0)[:, None], other=0)
        shift = (shift_words >> ((group % 8) * SHIFT_BITS)[None, :]) & 0xF
        dequantized = scale[:, :, None] * (w - shift[:, :, None]).to(tl.float32)
        k = k0 + tl.arange(0, B_MID)
        activation = tl.load(activation_ptr + k[:, None] * N1 + cols[None, :], mask=(cols < N1)[None, :], other=0.0)
        acc += tl.dot(tl.reshape(dequantized, (B0, B_MID)), activation)
    tl.store(z_ptr + rows[:, None] * N1 + cols[None, :], acc, mask=(rows < N0)[:, None] & (cols < N1)[None, :])


@triton.jit
def quant_dot_weights_by_byte(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                              B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    _quant_dot_body(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID, B0, B1, B_MID, 8, 4)


@triton.jit
def quant_dot_all_by_byte(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                          B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    _quant_dot_body(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID, B0, B1, B_MID, 8, 8)


@triton.jit
def quant_dot_by_nibble(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID,
                        B0: tl.constexpr, B1: tl.constexpr, B_MID: tl.constexpr):
    _quant_dot_body(scale_ptr, offset_ptr, weight_ptr, activation_ptr, z_ptr, N0, N1, MID, B0, B1, B_MID, 4, 4)


CORRECT = (quant_dot_per_element, quant_dot_sum_not_dot)
