"""Common slips of puzzle 30 (a persistent matmul), computed: the output a kernel with one slip in it stores, from
the same inputs (see mistakes.py for how a verdict uses them).

A persistent kernel has two parts a slip can break: which tiles a program takes (its loop over tile indices) and
where a tile index lands in z (the grouped remap of puzzle 16). Each slip is played tile by tile: every program in
turn, each of its tiles in loop order, a tile's stores masked to z's shape. Tiles no program reaches stay NaN, as
the grader's poison reads (the verdict compares NaN with NaN as equal).

Not here: a loop that steps by 1 instead of NUM_PROGRAMS. Every tile is then computed by several programs, all with
the right values, so z is right; the grader's tile-once check (puzzles/grading/tile_once.py) names it from the
stores. Row-major order instead of grouped is no slip at all: the values are the same, only the L2's reuse differs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor

from puzzles.course.puzzle import Sizes, cdiv

Inputs = dict[str, Tensor]
# (tile index, sizes) -> (tile row, tile column), either possibly past the last tile (a store masked off entirely)
Remap = Callable[[int, Sizes], tuple[int, int]]
# (program id, number of tiles, sizes) -> the tile indices the program's loop visits, in order
Loop = Callable[[int, int, Sizes], Iterable[int]]


def tile_counts(sizes: Sizes) -> tuple[int, int]:
    """(tiles_m, tiles_n): z's tiles down and across."""
    return cdiv(sizes["M"], sizes["BM"]), cdiv(sizes["N"], sizes["BN"])


def grouped(tile: int, sizes: Sizes) -> tuple[int, int]:
    """Puzzle 16's grouped order: bands of GROUP_M tile rows, each walked column by column."""
    tiles_m, tiles_n = tile_counts(sizes)
    per_band = sizes["GROUP_M"] * tiles_n
    first_m = (tile // per_band) * sizes["GROUP_M"]
    rows = min(tiles_m - first_m, sizes["GROUP_M"])
    return first_m + (tile % per_band) % rows, (tile % per_band) // rows


def strided_loop(pid: int, num_tiles: int, sizes: Sizes) -> Iterable[int]:
    """The right loop: range(pid, num_tiles, NUM_PROGRAMS)."""
    return range(pid, num_tiles, sizes["NUM_PROGRAMS"])


def played(i: Inputs, sizes: Sizes, remap: Remap = grouped, loop: Loop = strided_loop, *,
           reset_each_tile: bool = True) -> Tensor:
    """z as a persistent matmul with this remap and loop stores it; `reset_each_tile`: the accumulator starts at
    zero for every tile (else once per program, carrying the earlier tiles' sums)."""
    x, y = i["x"].float(), i["y"].float()
    m_size, n_size, bm, bn = sizes["M"], sizes["N"], sizes["BM"], sizes["BN"]
    tiles_m, tiles_n = tile_counts(sizes)
    z = torch.full((m_size, n_size), float("nan"), dtype=torch.float32)
    for pid in range(sizes["NUM_PROGRAMS"]):
        acc = torch.zeros(bm, bn, dtype=torch.float32)
        for tile in loop(pid, tiles_m * tiles_n, sizes):
            tile_m, tile_n = remap(tile, sizes)
            if reset_each_tile:
                acc = torch.zeros(bm, bn, dtype=torch.float32)
            block = torch.zeros(bm, bn, dtype=torch.float32)  # masked loads read zeros past M and N
            rows = x[tile_m * bm:(tile_m + 1) * bm]
            cols = y[:, tile_n * bn:(tile_n + 1) * bn]
            block[:rows.shape[0], :cols.shape[1]] = rows @ cols
            acc = acc + block
            if tile_m < tiles_m and tile_n < tiles_n:  # a tile past z's edge is masked off entirely
                z[tile_m * bm:(tile_m + 1) * bm, tile_n * bn:(tile_n + 1) * bn] = acc[:rows.shape[0], :cols.shape[1]]
    return z


def loop_from_zero(i: Inputs, sizes: Sizes) -> Tensor:
    """range(0, num_tiles, NUM_PROGRAMS): every program computes tiles 0, NUM_PROGRAMS, 2·NUM_PROGRAMS, …"""
    return played(i, sizes, loop=lambda pid, tiles, s: range(0, tiles, s["NUM_PROGRAMS"]))


def loop_from_zero_where(sizes: Sizes) -> str:
    step = sizes["NUM_PROGRAMS"]
    return f"with NUM_PROGRAMS = {step} only tiles 0, {step}, {2 * step}, … are computed, each by every program"


def row_major_split_by_tiles_m(i: Inputs, sizes: Sizes) -> Tensor:
    """Row-major order with the tile index split by the wrong count: tile_m = tile // tiles_m,
    tile_n = tile % tiles_m."""
    def remap(tile: int, s: Sizes) -> tuple[int, int]:
        tiles_m, _ = tile_counts(s)
        return tile // tiles_m, tile % tiles_m

    return played(i, sizes, remap=remap)


def accumulator_once_per_program(i: Inputs, sizes: Sizes) -> Tensor:
    """acc = tl.zeros(...) before the tile loop: each tile gets the sums of the program's earlier tiles too."""
    return played(i, sizes, reset_each_tile=False)


def full_last_band(i: Inputs, sizes: Sizes) -> Tensor:
    """The grouped remap with every band GROUP_M tile rows high, the last one too (puzzle 16's slip)."""
    def remap(tile: int, s: Sizes) -> tuple[int, int]:
        _, tiles_n = tile_counts(s)
        per_band = s["GROUP_M"] * tiles_n
        inside = tile % per_band
        return (tile // per_band) * s["GROUP_M"] + inside % s["GROUP_M"], inside // s["GROUP_M"]

    return played(i, sizes, remap=remap)
