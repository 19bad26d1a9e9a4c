"""Puzzle 29 reference: a tiled transpose whose tiles move through tensor descriptors (TMA on sm_90)."""

import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    # BEGIN SOLUTION
    i0 = tl.program_id(0) * B0  # first column of x's tile, first row of z's
    j0 = tl.program_id(1) * B1  # first row of x's tile, first column of z's
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N1, N0], strides=[N0, 1], block_shape=[B1, B0])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[N0, N1], strides=[N1, 1], block_shape=[B0, B1])
    tile = x_desc.load([j0, i0])  # zeros where the tile hangs over x's edge: no mask
    z_desc.store([i0, j0], tl.trans(tile))  # what falls outside z is dropped
    # END SOLUTION
