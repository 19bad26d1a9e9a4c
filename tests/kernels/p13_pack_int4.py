"""Puzzle 13 (pack int4): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def bit_or(a, b):
    return a | b


@triton.jit
def pack_reduce_or(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    words = tl.program_id(1) * (B1 // 8) + tl.arange(0, B1 // 8)
    nib = tl.arange(0, 8)
    m = (rows < N0)[:, None] & (words < N1 // 8)[None, :]
    x = tl.load(
        x_ptr + rows[:, None, None] * N1 + (words[:, None] * 8 + nib[None, :])[None, :, :], mask=m[:, :, None], other=0
    )
    q = ((x.to(tl.int32) + 8) & 0xF) << (nib * 4)[None, None, :]
    tl.store(z_ptr + rows[:, None] * (N1 // 8) + words[None, :], tl.reduce(q, 2, bit_or), mask=m)


@triton.jit
def pack_loop_over_nibbles(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    words = tl.program_id(1) * (B1 // 8) + tl.arange(0, B1 // 8)
    mask = (rows[:, None] < N0) & (words[None, :] * 8 < N1)
    packed = tl.zeros((B0, B1 // 8), dtype=tl.int32)
    for n in tl.static_range(8):
        v = tl.load(x_ptr + rows[:, None] * N1 + words[None, :] * 8 + n, mask=mask, other=0)
        packed |= ((v.to(tl.int32) + 8) & 0xF) << (4 * n)
    tl.store(z_ptr + rows[:, None] * (N1 // 8) + words[None, :], packed, mask=mask)


@triton.jit
def pack_reshape_uint32(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    cols = tl.program_id(1) * B1 + tl.arange(0, B1)
    m = (rows[:, None] < N0) & (cols[None, :] < N1)
    x = tl.load(x_ptr + rows[:, None] * N1 + cols[None, :], mask=m, other=0)
    nib = (x.to(tl.uint32) + 8) & 0xF
    shifted = nib << ((cols % 8) * 4).to(tl.uint32)[None, :]
    words = tl.sum(tl.reshape(shifted, (B0, B1 // 8, 8)), axis=2)
    wcol = tl.program_id(1) * (B1 // 8) + tl.arange(0, B1 // 8)
    tl.store(
        z_ptr + rows[:, None] * (N1 // 8) + wcol[None, :],
        words.to(tl.int32, bitcast=True),
        mask=(rows[:, None] < N0) & (wcol[None, :] < N1 // 8),
    )



# -- holes in judging, each closed ----------------------------------------------------------------------------------

@triton.jit
def pack_two_nibbles_swapped(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    BW: tl.constexpr = B1 // 8
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    words = tl.program_id(1) * BW + tl.arange(0, BW)
    nibble = tl.arange(0, 8)
    ok = (rows < N0)[:, None] & (words < N1 // 8)[None, :]
    x = tl.load(x_ptr + rows[:, None, None] * N1 + (words[:, None] * 8 + nibble[None, :])[None, :, :],
                mask=ok[:, :, None], other=0)
    place = tl.where(nibble < 2, 1 - nibble, nibble)  # nibbles 0 and 1 trade places
    packed = tl.sum(((x.to(tl.int32) + 8) & 0xF) << (place * 4)[None, None, :], axis=2)
    tl.store(z_ptr + rows[:, None] * (N1 // 8) + words[None, :], packed, mask=ok)



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def pack_nibbles_reversed(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    BW: tl.constexpr = B1 // 8
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    words = tl.program_id(1) * BW + tl.arange(0, BW)
    nibble = tl.arange(0, 8)
    ok = (rows < N0)[:, None] & (words < N1 // 8)[None, :]
    x = tl.load(x_ptr + rows[:, None, None] * N1 + (words[:, None] * 8 + nibble[None, :])[None, :, :],
                mask=ok[:, :, None], other=0)
    q = (x.to(tl.int32) + 8) & 0xF
    packed = tl.sum(q << ((7 - nibble) * 4)[None, None, :], axis=2)  # high nibble first
    tl.store(z_ptr + rows[:, None] * (N1 // 8) + words[None, :], packed, mask=ok)


@triton.jit
def pack_without_nibble_mask(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    BW: tl.constexpr = B1 // 8
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    words = tl.program_id(1) * BW + tl.arange(0, BW)
    nibble = tl.arange(0, 8)
    ok = (rows < N0)[:, None] & (words < N1 // 8)[None, :]
    x = tl.load(x_ptr + rows[:, None, None] * N1 + (words[:, None] * 8 + nibble[None, :])[None, :, :],
                mask=ok[:, :, None], other=0)
    q = x.to(tl.int32) + 8  # the junk high nibble spills into the next value
    packed = tl.sum(q << (nibble * 4)[None, None, :], axis=2)
    tl.store(z_ptr + rows[:, None] * (N1 // 8) + words[None, :], packed, mask=ok)


@triton.jit
def pack_without_word_mask(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    BW: tl.constexpr = B1 // 8
    rows = tl.program_id(0) * B0 + tl.arange(0, B0)
    words = tl.program_id(1) * BW + tl.arange(0, BW)
    nibble = tl.arange(0, 8)
    ok = (rows < N0)[:, None] & (words >= 0)[None, :]  # rows only: a ragged last block runs past N1
    x = tl.load(x_ptr + rows[:, None, None] * N1 + (words[:, None] * 8 + nibble[None, :])[None, :, :],
                mask=ok[:, :, None], other=0)
    packed = tl.sum(((x.to(tl.int32) + 8) & 0xF) << (nibble * 4)[None, None, :], axis=2)
    tl.store(z_ptr + rows[:, None] * (N1 // 8) + words[None, :], packed, mask=ok)


CORRECT = (pack_reduce_or, pack_loop_over_nibbles, pack_reshape_uint32)

# Never graded themselves: a helper that kernels call, or a kernel whose flags a wrapper sets.
BUILDING_BLOCKS = (bit_or,)
