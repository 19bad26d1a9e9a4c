"""Kernels for tests/test_compiled.py: puzzle 23's copies with and without the hints that let its loads and
stores compile to 128-bit instructions, and a kernel that spills registers under a register limit."""

import triton
import triton.language as tl


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
def add_mask2_kernel_many_live_values(x_ptr, z_ptr, N0, B0: tl.constexpr):
    """Puzzle 2's signature; every loaded value stays alive across a reduction, which spills under a register
    limit (maxnreg=24) at B0 = 2048."""
    offsets = tl.program_id(0) * B0 + tl.arange(0, B0)
    x = tl.load(x_ptr + offsets, mask=offsets < N0, other=0.0)
    tl.store(z_ptr + offsets, x / tl.sum(x) + tl.max(x), mask=offsets < N0)
