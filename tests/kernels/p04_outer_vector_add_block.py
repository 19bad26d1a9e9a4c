"""Puzzle 4 (outer vector add block): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- right answers through block pointers or tensor descriptors -----------------------------------------------------

@triton.jit
def add_vec_block_block_pointers(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    pid_0, pid_1 = tl.program_id(0), tl.program_id(1)
    xb = tl.make_block_ptr(x_ptr, (N0,), (1,), (pid_0 * B0,), (B0,), (0,))
    yb = tl.make_block_ptr(y_ptr, (N1,), (1,), (pid_1 * B1,), (B1,), (0,))
    zb = tl.make_block_ptr(z_ptr, (N1, N0), (N0, 1), (pid_1 * B1, pid_0 * B0), (B1, B0), (1, 0))
    x = tl.load(xb, boundary_check=(0,))
    y = tl.load(yb, boundary_check=(0,))
    tl.store(zb, y[:, None] + x[None, :], boundary_check=(0, 1))


@triton.jit
def add_vec_block_descriptors(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i0, j0 = tl.program_id(0) * B0, tl.program_id(1) * B1
    x = tl.make_tensor_descriptor(x_ptr, shape=[N0], strides=[1], block_shape=[B0]).load([i0])
    y = tl.make_tensor_descriptor(y_ptr, shape=[N1], strides=[1], block_shape=[B1]).load([j0])
    # z's rows may hold an odd number of floats (N0 = 37), which no descriptor can stride over: pointers.
    i, j = i0 + tl.arange(0, B0), j0 + tl.arange(0, B1)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], y[:, None] + x[None, :], mask=(j[:, None] < N1) & (i[None, :] < N0))



# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def add_vec_block_community(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    pid_0 = tl.program_id(0)
    pid_1 = tl.program_id(1)
    off_x = pid_0 * B0 + tl.arange(0, B0)
    off_y = pid_1 * B1 + tl.arange(0, B1)
    off_z = off_y[:, None] * N0 + off_x[None, :]
    mask_x = off_x < N0
    mask_y = off_y < N1
    mask_z = mask_y[:, None] & mask_x[None, :]
    x = tl.load(x_ptr + off_x, mask=mask_x)
    y = tl.load(y_ptr + off_y, mask=mask_y)
    z = y[:, None] + x[None, :]
    tl.store(z_ptr + off_z, z, mask=mask_z)



# -- classic mistakes, each caught for its own reason ---------------------------------------------------------------

@triton.jit
def add_vec_block_kernel_swapped(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    tl.store(z_ptr + i[None, :] * N1 + j[:, None], x[None, :] + y[:, None], mask=mask)  # strides swapped



# -- right-looking kernels that are wrong (red-team round 5) --------------------------------------------------------

@triton.jit
def add_vec_block_descriptor(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    z = tl.make_tensor_descriptor(z_ptr, shape=[N1, N0], strides=[N0, 1], block_shape=[B1, B0])
    z.store([tl.program_id(1) * B1, tl.program_id(0) * B0], y[:, None] + x[None, :])



# -- mistakes a learner meets, for the messages they get ------------------------------------------------------------

@triton.jit
def outer_add_with_grid_axes_swapped(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(1) * B0 + tl.arange(0, B0)  # columns from axis 1, which has fewer programs
    j = tl.program_id(0) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0, other=0.0)
    y = tl.load(y_ptr + j, mask=j < N1, other=0.0)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] + y[:, None], mask=(j[:, None] < N1) & (i[None, :] < N0))


@triton.jit
def outer_add_masked_with_python_and(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0, other=0.0)
    y = tl.load(y_ptr + j, mask=j < N1, other=0.0)
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] + y[:, None],
             mask=(j[:, None] < N1) and (i[None, :] < N0))  # Python's and: one side survives in the interpreter


CORRECT = (add_vec_block_community,)
CORRECT_WITH_BLOCK_POINTERS = (add_vec_block_block_pointers,)
CORRECT_WITH_DESCRIPTORS = (add_vec_block_descriptors,)

# -- right but slow, each for one reason the efficiency model names (issue 51) ----------------------------------------

@triton.jit
def add_vec_block_tile_transposed(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    """Right, uncoalesced store: the tile is laid out with the row index j moving fastest, so a warp's lanes
    write down a column of z."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    tl.store(z_ptr + j[None, :] * N0 + i[:, None], x[:, None] + y[None, :],
             mask=(j[None, :] < N1) & (i[:, None] < N0))


@triton.jit
def add_vec_block_row_by_row(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    """Right, a row of the tile at a time, y's element loaded alone for each row."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + i, mask=i < N0)
    for r in range(B1):
        j = tl.program_id(1) * B1 + r
        if j < N1:
            tl.store(z_ptr + j * N0 + i, x + tl.load(y_ptr + j), mask=i < N0)


SLOW = (add_vec_block_tile_transposed, add_vec_block_row_by_row)
