"""Puzzle 29 (tensor descriptors): every kernel the tests grade as this puzzle, in one place.

`CORRECT` lists the right answers written in other styles than the reference (graded by
tests/grading/test_handwritten_kernels.py). The others are graded in tests/course/test_descriptor_track.py: the
transpose right but without TMA (pointers for the load, the store or both), and with the slips its verdict names
(coordinates swapped or counted in tiles, z's descriptor copied from x's, a tile stored as loaded). `# LOAD_LINE` /
`# STORE_LINE` mark the lines a verdict names."""

from __future__ import annotations

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


# -- right answers in other styles than the reference ---------------------------------------------------------------

@triton.jit
def transpose_permute_keyword_coordinates(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    """The reference's two copies written another way: tl.permute for the transpose, the descriptors built with
    their strides taken from the shapes, and the tile corners from block indices."""
    col_block = tl.program_id(axis=0)
    row_block = tl.program_id(axis=1)
    source = tl.make_tensor_descriptor(x_ptr, [N1, N0], [N0, 1], [B1, B0])
    target = tl.make_tensor_descriptor(z_ptr, [N0, N1], [N1, 1], [B0, B1])
    block = source.load([row_block * B1, col_block * B0])
    target.store([col_block * B0, row_block * B1], tl.permute(block, (1, 0)))


@triton.jit
def transpose_two_halves(x_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    """Each program moves its tile as two half-height copies (descriptor blocks of B1 / 2 rows): smaller TMA copies,
    the same tile in the end."""
    i0 = tl.program_id(0) * B0
    j0 = tl.program_id(1) * B1
    half: tl.constexpr = B1 // 2
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[N1, N0], strides=[N0, 1], block_shape=[half, B0])
    z_desc = tl.make_tensor_descriptor(z_ptr, shape=[N0, N1], strides=[N1, 1], block_shape=[B0, half])
    for h in tl.static_range(2):
        z_desc.store([i0, j0 + h * half], tl.trans(x_desc.load([j0 + h * half, i0])))


CORRECT = (transpose_permute_keyword_coordinates, transpose_two_halves)
