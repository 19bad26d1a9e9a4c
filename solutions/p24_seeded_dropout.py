"""Puzzle 24 reference: dropout with one seed per row, the mask drawn by tl.rand and never stored."""

import triton
import triton.language as tl


@triton.jit
def dropout_kernel(x_ptr, seeds_ptr, z_ptr, N0, N1, p, B0: tl.constexpr):
    # BEGIN SOLUTION
    row = tl.program_id(1)
    cols = tl.program_id(0) * B0 + tl.arange(0, B0)
    in_row = cols < N0
    x = tl.load(x_ptr + row * N0 + cols, mask=in_row, other=0.0)
    seed = tl.load(seeds_ptr + row)
    # The column is the counter: (seed, column) draws the same number in any launch, so the backward
    # pass, this kernel run on dz with the same seeds, regenerates the forward's mask.
    r = tl.rand(seed, cols)
    tl.store(z_ptr + row * N0 + cols, tl.where(r > p, x / (1 - p), 0.0), mask=in_row)
    # END SOLUTION
