"""Puzzle 23 reference: a copy of padded rows whose loads and stores compile to 128-bit instructions."""

import triton
import triton.language as tl


@triton.jit
def copy_rows_kernel(x_ptr, z_ptr, N0, N1, S1, B0: tl.constexpr, B1: tl.constexpr):
    # BEGIN SOLUTION
    i = tl.program_id(0) * B0 + tl.arange(0, B0)  # columns
    j = tl.program_id(1) * B1 + tl.arange(0, B1)  # rows
    # What the statement promises and the compiler cannot see in S1 and N0 (plain integers at the launch):
    # every row starts at a multiple of 4 elements (16 bytes), and N0 ends a row on a group of 4 columns.
    x_rows = tl.multiple_of(j * S1, 4)
    z_rows = tl.multiple_of(j * N0, 4)
    columns = tl.max_constancy(i < N0, 4)  # the same for each aligned group of 4 columns
    mask = (j[:, None] < N1) & columns[None, :]
    x = tl.load(x_ptr + x_rows[:, None] + i[None, :], mask=mask)
    tl.store(z_ptr + z_rows[:, None] + i[None, :], x, mask=mask)
    # END SOLUTION
