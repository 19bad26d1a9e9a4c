"""Puzzle 1 reference: constant add, one program."""

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    # BEGIN SOLUTION
    # One program covers the whole vector (B0 == N0), so no mask is needed.
    offsets = tl.arange(0, B0)
    x = tl.load(x_ptr + offsets)
    tl.store(z_ptr + offsets, x + 10.0)
    # END SOLUTION
