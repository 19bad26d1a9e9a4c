"""Puzzle 6 (fused outer multiply backward): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def mul_relu_back_community(x_ptr, y_ptr, dz_ptr, dx_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    pid_0 = tl.program_id(0)
    pid_1 = tl.program_id(1)
    off_i = pid_0 * B0 + tl.arange(0, B0)
    off_j = pid_1 * B1 + tl.arange(0, B1)
    off_ji = off_j[:, None] * N0 + off_i[None, :]
    mask_i = off_i < N0
    mask_j = off_j < N1
    mask_ji = mask_j[:, None] & mask_i[None, :]
    x = tl.load(x_ptr + off_ji, mask=mask_ji)
    y = tl.load(y_ptr + off_j, mask=mask_j)
    dz = tl.load(dz_ptr + off_ji, mask=mask_ji)
    df = tl.where(x * y[:, None] > 0, 1.0, 0.0)
    dxy_x = y[:, None]
    dx = df * dxy_x * dz
    tl.store(dx_ptr + off_ji, dx, mask=mask_ji)


@triton.jit
def mul_relu_back_bool_factor(x_ptr, y_ptr, dz_ptr, dx_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    m = (j[:, None] < N1) & (i[None, :] < N0)
    offs = j[:, None] * N0 + i[None, :]
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + j[:, None], mask=j[:, None] < N1, other=0.0)
    dz = tl.load(dz_ptr + offs, mask=m, other=0.0)
    tl.store(dx_ptr + offs, dz * y * ((x * y) > 0).to(tl.float32), mask=m)



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def backward_gated_by_x_alone(x_ptr, y_ptr, dz_ptr, dx_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    at = j[:, None] * N0 + i[None, :]
    x = tl.load(x_ptr + at, mask=mask, other=0.0)
    y = tl.load(y_ptr + j, mask=j < N1, other=0.0)
    dz = tl.load(dz_ptr + at, mask=mask, other=0.0)
    tl.store(dx_ptr + at, tl.where(x > 0, y[:, None] * dz, 0.0), mask=mask)  # relu'(x), not relu'(x * y)


CORRECT = (mul_relu_back_community, mul_relu_back_bool_factor)

# -- right but slow, each for one reason the efficiency model names (issue 51) ----------------------------------------

@triton.jit
def mul_relu_back_tile_transposed(x_ptr, y_ptr, dz_ptr, dx_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    """Right, uncoalesced: the tile's rows move fastest across lanes, for x, dz and dx."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    tile_in = (j[None, :] < N1) & (i[:, None] < N0)
    tile = j[None, :] * N0 + i[:, None]
    x = tl.load(x_ptr + tile, mask=tile_in)
    dz = tl.load(dz_ptr + tile, mask=tile_in)
    y = tl.load(y_ptr + j, mask=j < N1)[None, :]
    tl.store(dx_ptr + tile, tl.where(x * y > 0, y * dz, 0.0), mask=tile_in)


@triton.jit
def mul_relu_back_reads_x_twice(x_ptr, y_ptr, dz_ptr, dx_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    """Right, re-reading: x is loaded again for the gate after the product."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    tile_in = (j[:, None] < N1) & (i[None, :] < N0)
    tile = j[:, None] * N0 + i[None, :]
    dz = tl.load(dz_ptr + tile, mask=tile_in)
    y = tl.load(y_ptr + j, mask=j < N1)[:, None]
    product = tl.load(x_ptr + tile, mask=tile_in) * y
    gate = tl.load(x_ptr + tile, mask=tile_in) * y > 0
    tl.store(dx_ptr + tile, tl.where(gate & (product == product), y * dz, 0.0), mask=tile_in)


SLOW = (mul_relu_back_tile_transposed, mul_relu_back_reads_x_twice)
