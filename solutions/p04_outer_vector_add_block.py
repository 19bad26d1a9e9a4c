"""Puzzle 4 reference: outer vector add, tiled over a 2-D grid."""

import triton
import triton.language as tl


@triton.jit
def add_vec_block_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    # BEGIN SOLUTION
    i = tl.program_id(0) * B0 + tl.arange(0, B0)  # columns of this tile
    j = tl.program_id(1) * B1 + tl.arange(0, B1)  # rows of this tile
    i_in, j_in = i < N0, j < N1
    x = tl.load(x_ptr + i, mask=i_in)
    y = tl.load(y_ptr + j, mask=j_in)
    tile_in = j_in[:, None] & i_in[None, :]
    tl.store(z_ptr + j[:, None] * N0 + i[None, :], x[None, :] + y[:, None], mask=tile_in)
    # END SOLUTION
