"""The launch-order view of a tile-order puzzle (a `TileOrder` on its `Puzzle`, as puzzle 16): which
program takes each of C's tiles, drawn as a grid of tiles numbered in launch order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from puzzles.course.picture_hooks import TileOrder
from puzzles.viz.fonts import Text, text_width
from puzzles.viz.layout import Layout, TensorBox
from puzzles.viz.paint import Paint
from puzzles.viz.style import OTHERS, STORE, UNTOUCHED, order_color, program_color

TILES = "C's tiles"


def tile_map(order: TileOrder | None, sizes: dict[str, int], output: Any, programs: int) -> np.ndarray | None:
    """The (TM, TN) map of which program (launch index) takes each of C's tiles, -1 for none, read
    from the kernel's output `z[pid] = (tile_m, tile_n)`. None without a tile order, and for an
    output that is not one (another shape or dtype, or not one row per program)."""
    if order is None or output is None:
        return None
    try:
        tm, tn = order.tiles(sizes)
    except (KeyError, ZeroDivisionError):  # a run without the order's sizes (a bare trace)
        return None
    z = np.asarray(output.detach().cpu()) if hasattr(output, "detach") else np.asarray(output)
    if z.shape != (tm * tn, 2) or programs != tm * tn or z.dtype.kind not in "iu":
        return None
    tiles = np.full((tm, tn), -1, np.int64)
    for pid in range(tm * tn - 1, -1, -1):  # the first program that claims a tile names it
        r, c = int(z[pid, 0]), int(z[pid, 1])
        if 0 <= r < tm and 0 <= c < tn:
            tiles[r, c] = pid
    return tiles


@dataclass
class TileBox(TensorBox):
    """C's tiles as a grid of K × K cells each (big enough to carry a number), not a tensor."""

    k: int = 3

    @classmethod
    def make(cls, shape: tuple[int, ...]) -> TileBox:
        tm, tn = shape
        k = 4 if tm * tn <= 24 else 3
        return cls(TILES, (tm, tn), "tile", tm * tn * k * k, tn * k, tm * k, tn * k, k=k)

    def label(self) -> str:
        return f"{TILES}  {self.shape[0]} × {self.shape[1]} (tile_m down, tile_n across)"

    def tile_elements(self, r: int, c: int) -> np.ndarray:
        """The cells of tile (r, c), as the flat indices `cells` maps back."""
        rows, cols = np.meshgrid(np.arange(r * self.k, (r + 1) * self.k), np.arange(c * self.k, (c + 1) * self.k))
        return (rows * self.width + cols).ravel()


def paint_tiles(tiles: np.ndarray, box: TileBox, paint: Paint, lay: Layout, view: str, shown: int,
                programs: int) -> list[Text]:
    """Colour C's tiles by the program that takes each (in the program view: the `shown` program's
    tile against the others) and, in the launch-order view, number them; returns the numbers."""
    texts = []
    for (r, c), who in np.ndenumerate(tiles):
        cells = box.tile_elements(r, c)
        if who < 0:
            paint.fill(cells, UNTOUCHED)
            continue
        if view == "order":
            color = order_color(int(who), programs)
        elif view == "overview":
            color = program_color(int(who))
        else:
            color = STORE if who == shown else OTHERS
        paint.fill(cells, color)
        side = box.k * lay.cell
        if view == "order" and side >= text_width(str(who), 7.5) - 2:
            x, y = box.x + (c + 0.5) * side - lay.gap / 2, box.y + (r + 0.5) * side - lay.gap / 2
            texts.append(Text(float(x), float(y), str(who), size=7.5, halo=True, ha="center", va="center",
                              weight="bold"))
    paint.tile = box.k
    return texts
