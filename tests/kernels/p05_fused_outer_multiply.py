"""Puzzle 5 (fused outer multiply): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def mul_relu_where(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    x = tl.load(x_ptr + i[None, :] + 0 * j[:, None], mask=mask, other=0.0)
    y = tl.load(y_ptr + j[:, None] + 0 * i[None, :], mask=mask, other=0.0)
    xy = x * y
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], tl.where(xy > 0, xy, 0), mask=mask)


@triton.jit
def mul_relu_bool_product(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0, other=0.0)
    y = tl.load(y_ptr + j, mask=j < N1, other=0.0)
    z = y[:, None] * x[None, :]
    z = tl.maximum(z, tl.zeros_like(z))
    offs = j[:, None] * N0 + i[None, :]
    tl.store(z_ptr + offs, z, mask=(j < N1)[:, None] & (i < N0)[None, :])



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def mul_relu_block_kernel_no_relu(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] * y[:, None], mask=(j[:, None] < N1) & (i[None, :] < N0))


@triton.jit
def mul_relu_block_kernel_float16(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0).to(tl.float16)
    y = tl.load(y_ptr + j, mask=j < N1).to(tl.float16)
    z = tl.maximum(y[:, None] * x[None, :], 0.0).to(tl.float32)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], z, mask=(j < N1)[:, None] & (i < N0)[None, :])



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def relu_with_python_max(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0, other=0.0)
    y = tl.load(y_ptr + j, mask=j < N1, other=0.0)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], max(x[None, :] * y[:, None], 0.0),
             mask=(j[:, None] < N1) & (i[None, :] < N0))


CORRECT = (mul_relu_where, mul_relu_bool_product)

# -- right but slow, each for one reason the efficiency model names (issue 51) ----------------------------------------

@triton.jit
def mul_relu_tile_transposed(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    """Right, uncoalesced store: j moves fastest across the tile."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    tl.store(z_ptr + j[None, :] * N0 + i[:, None], tl.maximum(x[:, None] * y[None, :], 0.0),
             mask=(j[None, :] < N1) & (i[:, None] < N0))


@triton.jit
def mul_relu_row_by_row(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    """Right, a row of the tile at a time, x loaded again for every row."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    for r in range(B1):
        j = tl.program_id(1) * B1 + r
        if j < N1:
            x = tl.load(x_ptr + i, mask=i < N0)
            tl.store(z_ptr + j * N0 + i, tl.maximum(x * tl.load(y_ptr + j), 0.0), mask=i < N0)


SLOW = (mul_relu_row_by_row, mul_relu_tile_transposed)
