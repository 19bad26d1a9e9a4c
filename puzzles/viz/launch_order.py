"""The launch-order view of a tile-order puzzle (puzzle 16): which program takes each of C's
tiles, drawn as a grid of tiles numbered in launch order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from puzzles.viz.fonts import _Text
from puzzles.viz.layout import TensorBox, _text_w
from puzzles.viz.style import OTHERS, STORE, UNTOUCHED, order_color, program_color

if TYPE_CHECKING:  # types only: model.py imports this module
    from puzzles.viz.model import _Model
    from puzzles.viz.picture import _Paint

TILES = "C's tiles"


def tile_map(sizes: dict[str, int], output: Any, programs: int) -> np.ndarray | None:
    """For a tile-order puzzle (z[pid] = (tile_m, tile_n) over a TM × TN grid of C's tiles, as in
    puzzle 16): the (TM, TN) map of which program (launch index) takes each tile, -1 for none.
    None for any other kind of run."""
    if output is None or not {"M", "N", "BM", "BN"} <= set(sizes):
        return None
    tm, tn = -(-sizes["M"] // sizes["BM"]), -(-sizes["N"] // sizes["BN"])
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
class _TileBox(TensorBox):
    """C's tiles as a grid of K × K cells each (big enough to carry a number), not a tensor."""

    k: int = 3

    @classmethod
    def make(cls, shape: tuple[int, ...]) -> _TileBox:
        tm, tn = shape
        k = 4 if tm * tn <= 24 else 3
        return cls(TILES, (tm, tn), "tile", tm * tn * k * k, tn * k, tm * k, tn * k, k=k)

    def label(self) -> str:
        return f"{TILES}  {self.shape[0]} × {self.shape[1]} (tile_m down, tile_n across)"

    def tile_elements(self, r: int, c: int) -> np.ndarray:
        """The cells of tile (r, c), as the flat indices `cells` maps back."""
        rows, cols = np.meshgrid(np.arange(r * self.k, (r + 1) * self.k), np.arange(c * self.k, (c + 1) * self.k))
        return (rows * self.width + cols).ravel()


def _paint_tiles(model: _Model, paints: dict[str, _Paint], view: str, pi: int) -> list[_Text]:
    """Colour C's tiles (by the program that takes each) and, in the launch-order view, number them."""
    if model.tiles is None or TILES not in paints:
        return []
    box, paint, lay = model.boxes[TILES], paints[TILES], model.layout
    n = len(model.programs)
    texts = []
    for (r, c), who in np.ndenumerate(model.tiles):
        cells = box.tile_elements(r, c)
        if who < 0:
            paint.fill(cells, UNTOUCHED)
            continue
        if view == "order":
            color = order_color(int(who), n)
        elif view == "overview":
            color = program_color(int(who))
        else:
            color = STORE if who == pi else OTHERS
        paint.fill(cells, color)
        side = box.k * lay.cell
        if view == "order" and side >= _text_w(str(who), 7.5) - 2:
            x, y = box.x + (c + 0.5) * side - lay.gap / 2, box.y + (r + 0.5) * side - lay.gap / 2
            texts.append(_Text(float(x), float(y), str(who), size=7.5, halo=True, ha="center", va="center",
                               weight="bold"))
    paint.tile = box.k
    return texts
