"""Kernels for tests/course/test_descriptor_track.py: puzzle 29's transpose, right but without TMA (pointers for the
load, the store or both), and with the slips its verdict names (coordinates swapped or counted in tiles, z's
descriptor copied from x's, a tile stored as loaded). `# LOAD_LINE` / `# STORE_LINE` mark the lines a verdict names."""

import triton
import triton.language as tl


@triton.jit
def transpose_pointers(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    """Right values through masked pointer loads and stores: per-thread instructions, no TMA."""
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    mask = (j[:, None] < N1) & (i[None, :] < N0)
    tile = tl.load(x_ptr + j[:, None] * N0 + i[None, :], mask=mask)  # LOAD_LINE
    tl.store(z_ptr + i[:, None] * N1 + j[None, :], tl.trans(tile), mask=tl.trans(mask))  # STORE_LINE


@triton.jit
def transpose_descriptor_load_pointer_store(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    """x through a descriptor, z through pointers: the store is no TMA copy."""
    i0, j0 = tl.program_id(0) * B0, tl.program_id(1) * B1
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N1, N0], strides=[N0, 1], block_shape=[B1, B0])
    tile = x_desc.load([j0, i0])  # LOAD_LINE
    i, j = i0 + tl.arange(0, B0), j0 + tl.arange(0, B1)
    mask = (i[:, None] < N0) & (j[None, :] < N1)
    tl.store(z_ptr + i[:, None] * N1 + j[None, :], tl.trans(tile), mask=mask)  # STORE_LINE


@triton.jit
def transpose_store_at_x_corner(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i0, j0 = tl.program_id(0) * B0, tl.program_id(1) * B1
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N1, N0], strides=[N0, 1], block_shape=[B1, B0])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[N0, N1], strides=[N1, 1], block_shape=[B0, B1])
    z_desc.store([j0, i0], tl.trans(x_desc.load([j0, i0])))  # the store's coordinates are x's


@triton.jit
def transpose_load_at_z_corner(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i0, j0 = tl.program_id(0) * B0, tl.program_id(1) * B1
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N1, N0], strides=[N0, 1], block_shape=[B1, B0])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[N0, N1], strides=[N1, 1], block_shape=[B0, B1])
    z_desc.store([i0, j0], tl.trans(x_desc.load([i0, j0])))  # the load's coordinates are z's


@triton.jit
def transpose_load_coordinates_in_tiles(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N1, N0], strides=[N0, 1], block_shape=[B1, B0])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[N0, N1], strides=[N1, 1], block_shape=[B0, B1])
    tile = x_desc.load([tl.program_id(1), tl.program_id(0)])  # LOAD_LINE: tiles, not elements
    z_desc.store([tl.program_id(0) * B0, tl.program_id(1) * B1], tl.trans(tile))


@triton.jit
def transpose_z_described_as_x(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i0, j0 = tl.program_id(0) * B0, tl.program_id(1) * B1
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N1, N0], strides=[N0, 1], block_shape=[B1, B0])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[N1, N0], strides=[N0, 1], block_shape=[B0, B1])  # x's
    z_desc.store([i0, j0], tl.trans(x_desc.load([j0, i0])))


@triton.jit
def transpose_tile_not_transposed(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i0, j0 = tl.program_id(0) * B0, tl.program_id(1) * B1
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N1, N0], strides=[N0, 1], block_shape=[B1, B0])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[N0, N1], strides=[N1, 1], block_shape=[B0, B1])
    z_desc.store([i0, j0], x_desc.load([j0, i0]))  # STORE_LINE: no tl.trans
