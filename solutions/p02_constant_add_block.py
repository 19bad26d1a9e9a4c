"""Puzzle 2 reference: constant add over blocks, with a mask for the ragged tail."""

import triton
import triton.language as tl


@triton.jit
def add_mask2_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    # BEGIN SOLUTION
    pid = tl.program_id(0)
    offsets = pid * B0 + tl.arange(0, B0)
    in_range = offsets < N0  # the last block runs past N0
    x = tl.load(x_ptr + offsets, mask=in_range)
    tl.store(z_ptr + offsets, x + 10.0, mask=in_range)
    # END SOLUTION
