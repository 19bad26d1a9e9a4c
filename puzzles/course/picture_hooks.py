"""What a puzzle tells its pictures beyond its spec: small typed records that a catalog module sets
on its `Puzzle`, and that the diagrams (`puzzles/diagrams`) and the memory picture (`puzzles/viz`)
read.

Each record names a kind of picture, not a puzzle: a new puzzle whose output is a tile order, that
computes a tensor it never stores, or that slides a window over its input gets the same picture by
setting the same record. (Other facts the pictures use are the grader's too and have fields of
their own on `Puzzle`: `strided_inputs`, `tensor_lists`, `split_k`.)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TileOrder:
    """The output is the order in which programs take the tiles of a tiled matmul's C: program `pid`
    writes `z[pid] = (tile_m, tile_n)`. C has cdiv(rows, block_rows) × cdiv(cols, block_cols) tiles;
    `group` is the size of the grouped order's bands. Each field names a size key.

    The diagram draws row-major and grouped order side by side; the memory picture draws C's tiles,
    numbered by the program that takes each (from the kernel's own output)."""

    rows: str = "M"
    cols: str = "N"
    block_rows: str = "BM"
    block_cols: str = "BN"
    group: str = "GROUP_M"

    def tiles(self, sizes: dict[str, int]) -> tuple[int, int]:
        """(TM, TN): how many tiles C has down and across at these sizes."""
        return -(-sizes[self.rows] // sizes[self.block_rows]), -(-sizes[self.cols] // sizes[self.block_cols])


@dataclass(frozen=True)
class RegisterTensor:
    """A tensor the kernel computes but never stores (flash attention's scores): the diagram draws it
    dashed, just before the output, and lines the other tensors up with it. `dims` are dimension names
    of the spec."""

    name: str
    dims: tuple[str, ...]
    caption: str = "in registers only"


@dataclass(frozen=True)
class SlidingWindow:
    """Each step of a program's loop makes one output pixel from a `height` × `width` window of `input`
    (a convolution); the diagram shows one step: the window, the pixel and the filter used whole.
    `rows` and `cols` name the dimensions the window slides along, `height` and `width` the window's
    size keys."""

    input: str
    rows: str
    cols: str
    height: str
    width: str


@dataclass(frozen=True)
class SharedRows:
    """The output is per-row results followed by rows that every program adds into (puzzle 26: `dx`, then
    `dw` and `db`, summed over all rows with atomics). `rows` names the size of the per-row part, `names` the
    shared rows after it, in order; `block` the size key of the rows one program owns. The diagram draws
    the program's own rows and the shared rows as its block, and says that every program adds into them."""

    rows: str
    names: tuple[str, ...]
    block: str


@dataclass(frozen=True)
class LoopedAlong:
    """Tensors each program walks whole, in loop steps of `block` along `dim`, while the grid tiles the same
    dimension of the other tensors (attention backward: a program owns `B1` keys and loops over every query,
    `B0` at a time). The diagram draws those tensors' first step strong and the later steps light; `block`
    is the loop's step there, never the block of another dimension."""

    tensors: tuple[str, ...]
    dim: str
    block: str
