"""Puzzle 3 reference: outer vector add, one program."""

import triton
import triton.language as tl


@triton.jit
def add_vec_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    # BEGIN SOLUTION
    i = tl.arange(0, B0)  # columns of z (axis 0 walks N0)
    j = tl.arange(0, B1)  # rows of z
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + j)
    # Broadcasting makes the B1 x B0 block; z is row-major with rows of length N0.
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] + y[:, None])
    # END SOLUTION
