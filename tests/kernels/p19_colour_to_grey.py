"""Puzzle 19 (colour to grey): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def grey_channel_loop(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    ok = (j < N1)[:, None] & (i < N0)[None, :]
    acc = tl.zeros((B1, B0), dtype=tl.float32)
    for c in tl.static_range(3):
        wgt = 0.2989 if c == 0 else (0.5870 if c == 1 else 0.1140)
        v = tl.load(x_ptr + j[:, None] * S1 + i[None, :] * S0 + c * SC, mask=ok, other=0)
        acc += wgt * v.to(tl.float32)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], acc, mask=ok)


@triton.jit
def grey_3d_block(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    c = tl.arange(0, 4)  # 3 channels, padded to a power of two
    ok = (j < N1)[:, None, None] & (i < N0)[None, :, None] & (c < 3)[None, None, :]
    px = tl.load(x_ptr + j[:, None, None] * S1 + i[None, :, None] * S0 + c[None, None, :] * SC, mask=ok, other=0)
    w = tl.where(c == 0, 0.2989, tl.where(c == 1, 0.5870, tl.where(c == 2, 0.1140, 0.0)))
    grey = tl.sum(px.to(tl.float32) * w[None, None, :], axis=2)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], grey, mask=(j < N1)[:, None] & (i < N0)[None, :])



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def grey_summing_bytes(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    ok = (j[:, None] < N1) & (i[None, :] < N0)
    px = x_ptr + j[:, None] * S1 + i[None, :] * S0
    r, g, b = tl.load(px, mask=ok), tl.load(px + SC, mask=ok), tl.load(px + 2 * SC, mask=ok)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], 0.2989 * r + 0.5870 * g + 0.1140 * b.to(tl.int8), mask=ok)


@triton.jit
def _grey(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr, DTYPE: tl.constexpr):
    """Puzzle 19 computed in DTYPE, summing blue first (another order than the spec's)."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    pixel = x_ptr + j[:, None] * S1 + i[None, :] * S0
    r = tl.load(pixel, mask=mask).to(DTYPE)
    g = tl.load(pixel + SC, mask=mask).to(DTYPE)
    b = tl.load(pixel + 2 * SC, mask=mask).to(DTYPE)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], (b * 0.1140 + g * 0.5870 + r * 0.2989).to(tl.float32), mask=mask)


@triton.jit
def grey_kernel_float16(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    _grey(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0, B1, tl.float16)


@triton.jit
def grey_kernel_blue_first(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    _grey(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0, B1, tl.float32)



# -- from the track's own tests: right answers, slips and mistakes --------------------------------------------------

@triton.jit
def grey_kernel_contiguous(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    pixel = x_ptr + j[:, None] * (3 * N0) + i[None, :] * 3  # assumes a packed N1 x N0 x 3 image
    r = tl.load(pixel, mask=mask).to(tl.float32)
    g = tl.load(pixel + 1, mask=mask).to(tl.float32)
    b = tl.load(pixel + 2, mask=mask).to(tl.float32)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], 0.2989 * r + 0.5870 * g + 0.1140 * b, mask=mask)


@triton.jit
def grey_kernel_no_row_mask(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (i[None, :] < N0) & (j[:, None] >= 0)  # the columns are masked, the rows are not
    pixel = x_ptr + j[:, None] * S1 + i[None, :] * S0
    r = tl.load(pixel, mask=mask).to(tl.float32)
    g = tl.load(pixel + SC, mask=mask).to(tl.float32)
    b = tl.load(pixel + 2 * SC, mask=mask).to(tl.float32)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], 0.2989 * r + 0.5870 * g + 0.1140 * b, mask=mask)


@triton.jit
def grey_kernel_channels_one_apart(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    pixel = x_ptr + j[:, None] * S1 + i[None, :] * S0
    r = tl.load(pixel, mask=mask).to(tl.float32)
    g = tl.load(pixel + 1, mask=mask).to(tl.float32)  # SC hard-coded as 1
    b = tl.load(pixel + 2, mask=mask).to(tl.float32)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], 0.2989 * r + 0.5870 * g + 0.1140 * b, mask=mask)


CORRECT = (grey_channel_loop, grey_3d_block)

# -- right but slow, each for one reason the efficiency model names (issue 51) ----------------------------------------

@triton.jit
def grey_tile_transposed(x_ptr, z_ptr, N0, N1, S1, S0, SC, B0: tl.constexpr, B1: tl.constexpr):
    """Right, uncoalesced: rows move fastest across the tile, for the loads and the store."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[None, :] < N1) & (i[:, None] < N0)
    pixel = x_ptr + j[None, :] * S1 + i[:, None] * S0
    r = tl.load(pixel, mask=mask).to(tl.float32)
    g = tl.load(pixel + SC, mask=mask).to(tl.float32)
    b = tl.load(pixel + 2 * SC, mask=mask).to(tl.float32)
    tl.store(z_ptr + j[None, :] * N0 + i[:, None], 0.2989 * r + 0.5870 * g + 0.1140 * b, mask=mask)


SLOW = (grey_tile_transposed,)
