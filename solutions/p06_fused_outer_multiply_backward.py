"""Puzzle 6 reference: gradient of relu(x * y) with respect to the matrix x."""

import triton
import triton.language as tl


@triton.jit
def mul_relu_block_back_kernel(x_ptr, y_ptr, dz_ptr, dx_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    # BEGIN SOLUTION
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    tile_in = (j[:, None] < N1) & (i[None, :] < N0)
    tile = j[:, None] * N0 + i[None, :]  # x, dz and dx share the N1 x N0 layout
    x = tl.load(x_ptr + tile, mask=tile_in)
    dz = tl.load(dz_ptr + tile, mask=tile_in)
    y = tl.load(y_ptr + j, mask=j < N1)[:, None]
    # relu'(x*y) is 1 where the product is positive: the gradient flows only there.
    dx = tl.where(x * y > 0, y * dz, 0.0)
    tl.store(dx_ptr + tile, dx, mask=tile_in)
    # END SOLUTION
