"""Puzzle 23 (read the compiled code): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py); every other kernel here is wrong on purpose, or right in a
way one test needs, and its docstring or comment says how. Each takes the puzzle's signature."""

from __future__ import annotations

import triton
import triton.language as tl

# -- what they compile to -------------------------------------------------------------------------------------------

@triton.jit
def copy_rows_kernel_plain(x_ptr, z_ptr, N0, N1, S1, B0: tl.constexpr, B1: tl.constexpr):
    """Right values, 32-bit loads and stores: the compiler cannot see that S1 and N0 are multiples of 4."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    x = tl.load(x_ptr + j[:, None] * S1 + i[None, :], mask=mask)  # LOAD_LINE
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x, mask=mask)  # STORE_LINE


@triton.jit
def copy_rows_kernel_hinted(x_ptr, z_ptr, N0, N1, S1, B0: tl.constexpr, B1: tl.constexpr):
    """The plain kernel with the three hints: 128-bit."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & tl.max_constancy(i[None, :] < N0, [1, 4])
    x = tl.load(x_ptr + tl.multiple_of(j * S1, 4)[:, None] + i[None, :], mask=mask)  # LOAD_LINE
    tl.store(z_ptr + tl.multiple_of(j * N0, 4)[:, None] + i[None, :], x, mask=mask)  # STORE_LINE


@triton.jit
def copy_rows_kernel_rows_only(x_ptr, z_ptr, N0, N1, S1, B0: tl.constexpr, B1: tl.constexpr):
    """The rows' hints without the mask's: each group of four may still be cut by the mask, so 32-bit."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    x = tl.load(x_ptr + tl.multiple_of(j * S1, 4)[:, None] + i[None, :], mask=mask)  # LOAD_LINE
    tl.store(z_ptr + tl.multiple_of(j * N0, 4)[:, None] + i[None, :], x, mask=mask)  # STORE_LINE


@triton.jit
def copy_rows_kernel_no_x_hint(x_ptr, z_ptr, N0, N1, S1, B0: tl.constexpr, B1: tl.constexpr):
    """Every hint but x's rows: the store is 128-bit, the load 32-bit."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & tl.max_constancy(i[None, :] < N0, [1, 4])
    x = tl.load(x_ptr + j[:, None] * S1 + i[None, :], mask=mask)  # LOAD_LINE
    tl.store(z_ptr + tl.multiple_of(j * N0, 4)[:, None] + i[None, :], x, mask=mask)  # STORE_LINE


@triton.jit
def copy_rows_kernel_contiguous(x_ptr, z_ptr, N0, N1, S1, B0: tl.constexpr, B1: tl.constexpr):
    """128-bit and wrong: reads x as if its rows were not padded (S1 = N0)."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & tl.max_constancy(i[None, :] < N0, [1, 4])
    x = tl.load(x_ptr + tl.multiple_of(j * N0, 4)[:, None] + i[None, :], mask=mask)
    tl.store(z_ptr + tl.multiple_of(j * N0, 4)[:, None] + i[None, :], x, mask=mask)


@triton.jit
def copy_rows_kernel_row_loop(x_ptr, z_ptr, N0, N1, S1, B0: tl.constexpr, B1: tl.constexpr):
    """Hinted and right, one row at a time: a 1-D block of B0 = 128 columns is one float per thread of 4 warps."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    columns = tl.max_constancy(i < N0, 4)
    for r in range(B1):
        j = tl.program_id(1) * B1 + r
        x = tl.load(x_ptr + tl.multiple_of(j * S1, 4) + i, mask=columns & (j < N1))  # LOAD_LINE
        tl.store(z_ptr + tl.multiple_of(j * N0, 4) + i, x, mask=columns & (j < N1))  # STORE_LINE


@triton.autotune(configs=[triton.Config({}, num_warps=1)], key=[])
@triton.jit
def copy_rows_kernel_row_loop_one_warp(x_ptr, z_ptr, N0, N1, S1, B0: tl.constexpr, B1: tl.constexpr):
    """The row loop launched with one warp (the kernel carries its launch): four floats per thread."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    columns = tl.max_constancy(i < N0, 4)
    for r in range(B1):
        j = tl.program_id(1) * B1 + r
        x = tl.load(x_ptr + tl.multiple_of(j * S1, 4) + i, mask=columns & (j < N1))  # LOAD_LINE
        tl.store(z_ptr + tl.multiple_of(j * N0, 4) + i, x, mask=columns & (j < N1))  # STORE_LINE


@triton.jit
def copy_rows_kernel_argument_hint(x_ptr, z_ptr, N0, N1, S1, B0: tl.constexpr, B1: tl.constexpr):
    """tl.multiple_of on the arguments themselves: Triton drops a hint on a kernel argument, so 32-bit."""
    S1 = tl.multiple_of(S1, 4)
    N0 = tl.multiple_of(N0, 4)
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & tl.max_constancy(i[None, :] < N0, [1, 4])
    x = tl.load(x_ptr + j[:, None] * S1 + i[None, :], mask=mask)  # LOAD_LINE
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x, mask=mask)  # STORE_LINE


@triton.jit
def copy_rows_kernel_pointer_hint(x_ptr, z_ptr, N0, N1, S1, B0: tl.constexpr, B1: tl.constexpr):
    """tl.multiple_of(pointer, 4): a pointer's multiple counts bytes, 4 bytes is one float32: 32-bit."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & tl.max_constancy(i[None, :] < N0, [1, 4])
    x_rows = tl.multiple_of(x_ptr + j * S1, 4)
    z_rows = tl.multiple_of(z_ptr + j * N0, 4)
    x = tl.load(x_rows[:, None] + i[None, :], mask=mask)  # LOAD_LINE
    tl.store(z_rows[:, None] + i[None, :], x, mask=mask)  # STORE_LINE


@triton.jit
def copy_rows_kernel_pointer_hint_bytes(x_ptr, z_ptr, N0, N1, S1, B0: tl.constexpr, B1: tl.constexpr):
    """tl.multiple_of(pointer, 16): 16 bytes, four float32: 128-bit."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & tl.max_constancy(i[None, :] < N0, [1, 4])
    x_rows = tl.multiple_of(x_ptr + j * S1, 16)
    z_rows = tl.multiple_of(z_ptr + j * N0, 16)
    x = tl.load(x_rows[:, None] + i[None, :], mask=mask)  # LOAD_LINE
    tl.store(z_rows[:, None] + i[None, :], x, mask=mask)  # STORE_LINE


@triton.jit
def _copy_one_row(x_ptr, z_ptr, j, i, N0, N1, S1):
    x = tl.load(x_ptr + j * S1 + i, mask=(i < N0) & (j < N1))  # HELPER_LOAD
    tl.store(z_ptr + j * N0 + i, x, mask=(i < N0) & (j < N1))  # HELPER_STORE


@triton.jit
def copy_rows_kernel_helper(x_ptr, z_ptr, N0, N1, S1, B0: tl.constexpr, B1: tl.constexpr):
    """The row loop through a helper, no promises: each access is the helper's line, and so are its reasons."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    for r in range(B1):
        _copy_one_row(x_ptr, z_ptr, tl.program_id(1) * B1 + r, i, N0, N1, S1)


CORRECT = (copy_rows_kernel_hinted, copy_rows_kernel_row_loop_one_warp)
