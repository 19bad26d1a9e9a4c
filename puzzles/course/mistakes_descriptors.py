"""Common slips of puzzle 29 (a tiled transpose through tensor descriptors), computed: the output a kernel with one
slip in it stores, from the same inputs (see mistakes.py for how a verdict uses them).

A descriptor's load and store take the coordinates of a tile's first element, and a transpose swaps the axes
between the two: the slips are coordinates in the wrong order, z's descriptor copied from x's, a tile stored as
loaded. (Coordinates counted in tiles, not elements, stop the interpreter first: running/errors.py says why.)
Each is played out tile by tile as TMA plays it: a load reads zeros outside x, a store drops what falls outside
z's shape. Elements no tile reaches stay NaN, as the grader's poison reads (the verdict compares NaN with NaN as
equal)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from puzzles.course.puzzle import Sizes

Inputs = dict[str, Tensor]
# (program_id(0), program_id(1), B0, B1) -> the [row, column] a descriptor's load or store is given
Corner = Callable[[int, int, int, int], tuple[int, int]]


def x_tile_corner(p0: int, p1: int, b0: int, b1: int) -> tuple[int, int]:
    """The right corner of the program's tile of x: row j0 = p1·B1, column i0 = p0·B0."""
    return p1 * b1, p0 * b0


def z_tile_corner(p0: int, p1: int, b0: int, b1: int) -> tuple[int, int]:
    """The right corner of its tile of z = xᵀ: row i0, column j0."""
    return p0 * b0, p1 * b1


def _load(x: Tensor, row: int, col: int, rows: int, cols: int) -> Tensor:
    """A descriptor's load of a rows × cols tile at [row, col]: zeros where it hangs over x."""
    tile = torch.zeros(rows, cols, dtype=x.dtype)
    r0, c0 = max(row, 0), max(col, 0)
    r1, c1 = min(row + rows, x.shape[0]), min(col + cols, x.shape[1])
    if r0 < r1 and c0 < c1:
        tile[r0 - row : r1 - row, c0 - col : c1 - col] = x[r0:r1, c0:c1]
    return tile


def _store(z: Tensor, tile: Tensor, row: int, col: int) -> None:
    """A descriptor's store of `tile` at [row, col]: what falls outside z's shape is dropped."""
    r0, c0 = max(row, 0), max(col, 0)
    r1, c1 = min(row + tile.shape[0], z.shape[0]), min(col + tile.shape[1], z.shape[1])
    if r0 < r1 and c0 < c1:
        z[r0:r1, c0:c1] = tile[r0 - row : r1 - row, c0 - col : c1 - col]


def played(x: Tensor, sizes: Sizes, load_at: Corner = x_tile_corner, store_at: Corner = z_tile_corner, *,
           transpose: bool = True, z_shape: tuple[int, int] | None = None) -> Tensor:
    """The output of a tiled transpose whose load and store are given these corners, every program in turn
    (program_id(1) fastest, as Triton's interpreter runs them); `transpose`: the tile is transposed before it is
    stored; `z_shape`: the shape z's descriptor was given (its row stride the shape's last extent)."""
    n0, n1, b0, b1 = sizes["N0"], sizes["N1"], sizes["B0"], sizes["B1"]
    z = torch.full((n0 * n1,), float("nan"), dtype=x.dtype)
    seen = z.view(z_shape or (n0, n1))
    for p0 in range(-(-n0 // b0)):
        for p1 in range(-(-n1 // b1)):
            tile = _load(x, *load_at(p0, p1, b0, b1), b1, b0)
            _store(seen, tile.T if transpose else tile, *store_at(p0, p1, b0, b1))
    return z.view(n0, n1)


def store_at_load_corner(i: Inputs, sizes: Sizes) -> Tensor:
    """z's store given x's corner [j0, i0]."""
    return played(i["x"], sizes, store_at=x_tile_corner)


def load_at_store_corner(i: Inputs, sizes: Sizes) -> Tensor:
    """x's load given z's corner [i0, j0]."""
    return played(i["x"], sizes, load_at=z_tile_corner)


def z_described_as_x(i: Inputs, sizes: Sizes) -> Tensor:
    """z's descriptor given x's shape and strides ([N1, N0], [N0, 1]): each tile lands in rows N0 long."""
    return played(i["x"], sizes, z_shape=(sizes["N1"], sizes["N0"]))


def tile_not_transposed(i: Inputs, sizes: Sizes) -> Tensor:
    """The tile stored as loaded (a square tile only: with B0 != B1 the shapes differ and the store fails)."""
    if sizes["B0"] != sizes["B1"]:
        raise ValueError("the tile's shape is not the store's: the kernel stops instead")
    return played(i["x"], sizes, transpose=False)
