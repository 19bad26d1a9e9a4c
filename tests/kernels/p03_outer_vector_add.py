"""Puzzle 3 (outer vector add): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def add_vec_community(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    off_x = tl.arange(0, B0)
    off_y = tl.arange(0, B1)
    off_z = off_y[:, None] * B0 + off_x[None, :]  # B0 == N0 at every size
    x = tl.load(x_ptr + off_x)
    y = tl.load(y_ptr + off_y)
    z = y[:, None] + x[None, :]
    tl.store(z_ptr + off_z, z)


@triton.jit
def add_vec_broadcast_loads(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.expand_dims(tl.arange(0, B0), 0)
    j = tl.expand_dims(tl.arange(0, B1), 1)
    x = tl.load(x_ptr + i + 0 * j)  # every row loads x again
    y = tl.load(y_ptr + j + 0 * i)
    tl.store(z_ptr + j * N0 + i, tl.broadcast_to(x + y, (B1, B0)))



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def outer_add_without_axes(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.arange(0, B0)
    j = tl.arange(0, B1)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + j)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x + y)  # two 1-D blocks: one row, stored into every row


CORRECT = (add_vec_community, add_vec_broadcast_loads)
