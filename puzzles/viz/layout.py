"""Where things go: the cell of every element (in bounds or not) in PNG pixels, and the place of
each tensor's grid and of the numbers beside them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from puzzles.viz.fonts import text_width
from puzzles.viz.style import (
    BOX_GAP_X,
    BOX_GAP_Y,
    CELL_SIZES,
    HEADER_H,
    LABEL_H,
    LINE_H,
    MAX_AREA_H,
    MAX_AREA_W,
    MAX_OPS_LISTED,
    MAX_PROGRAMS_LISTED,
    MIN_AREA_W,
    PAD,
    STATS_W,
    WIDE_AREA_H,
    WIDE_AREA_W,
)


@dataclass
class TensorBox:
    """A tensor's grid: element -> cell (row, col), the margins for out-of-bounds lanes, its place."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    numel: int
    width: int  # elements per grid row (1-D: the wrap width; 2-D, 3-D: the last dimension)
    rows: int  # grid rows of the in-bounds elements
    cols: int  # grid columns of the in-bounds elements
    panel_rows: int = 0  # 3-D: rows of one panel (0 for 1-D and 2-D)
    panels_per_row: int = 1
    top: int = 0  # margin rows/columns kept for out-of-bounds lanes
    bottom: int = 0
    left: int = 0
    right: int = 0
    x: int = 0  # pixel position of cell (0, 0), set by the layout
    y: int = 0
    room: int = 0  # pixels for the name and the note above the grid

    def cells(self, elements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Grid (row, col) of flat element indices; indices outside the tensor land outside its grid."""
        e = np.asarray(elements, dtype=np.int64)
        if self.panel_rows:  # 3-D: panel p, then row and column inside it; panels left to right
            per_panel = self.panel_rows * self.width
            panel, rest = np.divmod(e, per_panel)
            prow, pcol = np.divmod(panel, self.panels_per_row)
            r, c = np.divmod(rest, self.width)
            return prow * (self.panel_rows + 1) + r, pcol * (self.width + 1) + c
        if self.rows == 1 and self.width == self.numel and len(self.shape) <= 1:
            return np.zeros_like(e), e  # a single row: out-of-bounds lanes continue it left/right
        return np.divmod(e, self.width)

    def drawn(self, elements: np.ndarray) -> np.ndarray:
        """Which elements have a cell in the picture (far out-of-bounds lanes do not)."""
        r, c = self.cells(elements)
        return (r >= -self.top) & (r < self.rows + self.bottom) & (c >= -self.left) & (c < self.cols + self.right)

    @property
    def grid_rows(self) -> int:
        return self.top + self.rows + self.bottom

    @property
    def grid_cols(self) -> int:
        return self.left + self.cols + self.right

    def label(self) -> str:
        dims = ", ".join(str(s) for s in self.shape)
        wrapped = f" (rows of {self.width})" if len(self.shape) == 1 and self.rows > 1 else ""
        return f"{self.name}  {self.dtype}[{dims}]{wrapped}"

    def keep_room_for(self, oob: np.ndarray) -> None:
        """Margins around the grid for the out-of-bounds lanes of the whole run (the layout never jumps)."""
        if oob.size == 0:
            return
        r, c = self.cells(oob)
        cap_rows = max(2, min(8, self.rows // 2)) if not self.panel_rows else self.panel_rows + 1
        self.top = int(min(cap_rows, max(0, -r.min())))
        self.bottom = int(min(cap_rows, max(0, r.max() - self.rows + 1)))
        if self.rows == 1 and len(self.shape) <= 1:
            cap_cols = max(8, min(64, self.numel // 2))
            self.left = int(min(cap_cols, max(0, -c.min())))
            self.right = int(min(cap_cols, max(0, c.max() - self.cols + 1)))


def box_for(name: str, shape: tuple[int, ...], dtype: str) -> TensorBox:
    """A tensor's grid: 1-D a row (wrapped at 64 when long), 2-D a grid, 3-D and more small multiples."""
    shape = tuple(int(s) for s in shape)
    numel = max(1, math.prod(shape))
    if len(shape) <= 1:
        width = numel if numel <= 128 else 64  # long rows wrap at 64: power-of-two blocks stay aligned
        return TensorBox(name, shape, dtype, numel, width, -(-numel // width), width)
    if len(shape) == 2:
        return TensorBox(name, shape, dtype, numel, shape[1], shape[0], shape[1])
    # 3-D and more: small multiples of the last two dimensions, in a roughly square arrangement.
    panels = numel // (shape[-2] * shape[-1]) if shape[-2] * shape[-1] else 1
    r, c = shape[-2], shape[-1]
    per_row = max(1, min(panels, round(math.sqrt(panels * (r + 1) / (c + 1)))))
    prows = -(-panels // per_row)
    return TensorBox(name, shape, dtype, numel, c, prows * (r + 1) - 1, per_row * (c + 1) - 1, r, per_row)


@dataclass
class Layout:
    """Where each tensor's cells are in the PNG. `cell_box` gives exact pixel rectangles."""

    cell: int  # cell pitch in pixels
    gap: int  # white pixels between cells
    boxes: dict[str, TensorBox]
    width: int  # the PNG's size
    height: int
    area_w: int  # the tensors' area
    area_h: int
    stats_x: int
    stats_y: int

    def cell_origin(self, box: TensorBox, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return box.x + cols * self.cell, box.y + rows * self.cell

    def cell_box(self, tensor: str, element: int) -> tuple[int, int, int, int]:
        """(x0, y0, x1, y1) of the element's cell, ends exclusive; works for out-of-bounds elements too."""
        box = self.boxes[tensor]
        r, c = box.cells(np.array([element]))
        x0, y0 = self.cell_origin(box, r, c)
        inner = self.cell - self.gap
        return int(x0[0]), int(y0[0]), int(x0[0]) + inner, int(y0[0]) + inner

    def cell_pixel(self, tensor: str, element: int) -> tuple[int, int]:
        """A pixel inside the element's cell, clear of the centre dot and of half-cell splits."""
        x0, y0, x1, y1 = self.cell_box(tensor, element)
        return x0 + max(0, (x1 - x0) // 4), y0 + max(0, (y1 - y0) // 4)


def _pack(boxes: list[TensorBox], cell: int, max_w: int) -> tuple[int, int, list[tuple[int, int]]]:
    """Shelf packing: boxes left to right, a new shelf when the row is full. Returns (w, h, positions)."""
    x = y = shelf_h = area_w = 0
    places = []
    for box in boxes:
        w = max(box.grid_cols * cell, text_width(box.label()))
        h = LABEL_H + box.grid_rows * cell
        if x > 0 and x + w > max_w:
            y += shelf_h + BOX_GAP_Y
            x = shelf_h = 0
        places.append((x, y))
        area_w = max(area_w, x + w)
        shelf_h = max(shelf_h, h)
        x += w + BOX_GAP_X
    return area_w, y + shelf_h, places


def _fit(boxes: list[TensorBox], max_w: int, max_h: int) -> tuple[int, int, int, list[tuple[int, int]]]:
    """The largest cell size whose packing fits (max_w, max_h): (cell, area w, area h, positions)."""
    best = None
    for cell in CELL_SIZES:
        if any(b.grid_cols * cell > max_w for b in boxes):
            continue
        area_w, area_h, places = _pack(boxes, cell, max_w)
        best = (cell, area_w, area_h, places)
        if area_h <= max_h:
            break
    return best or (CELL_SIZES[-1], *_pack(boxes, CELL_SIZES[-1], max_w))


def _label_room(places: list[tuple[int, int]], area_w: int) -> list[int]:
    """Pixels from each box's left edge to the next box on its shelf (or the area's edge)."""
    rooms = []
    for i, (x, y) in enumerate(places):
        right = next((nx for nx, ny in places[i + 1 :] if ny == y), area_w + BOX_GAP_X)
        rooms.append(right - BOX_GAP_X // 2 - x)
    return rooms


def stats_lines(most_ops: int, programs: int, tensors: int) -> int:
    """Lines the numbers beside the tensors take at most, for a run whose busiest program has
    `most_ops` ops. The panel's height is fixed per run, so the picture keeps its size while one
    steps through it."""
    counts, by_tensor, totals = 9, 2 + tensors, 5
    program_view = counts + by_tensor + totals + 2 + min(most_ops, MAX_OPS_LISTED) + (most_ops > MAX_OPS_LISTED)
    overview = counts + by_tensor + totals + 2 + min(programs, MAX_PROGRAMS_LISTED) + (programs > MAX_PROGRAMS_LISTED)
    return max(program_view, overview) + 1


def make_layout(tensors: dict[str, TensorBox], lines: int, title: str, status: str) -> Layout:
    """Place the tensors' grids (`box.x`, `box.y` are set) and the numbers beside them, `lines` of
    them, under a header whose first line is `title` with `status` at its right."""
    boxes = list(tensors.values())
    # Numbers beside the tensors; but long, flat tensors (a 4 × 200 input) get the full width
    # with the numbers underneath, when that makes their cells much bigger.
    cell, area_w, area_h, places = _fit(boxes, MAX_AREA_W, MAX_AREA_H)
    side = True
    if cell < 5:
        wide = _fit(boxes, WIDE_AREA_W, WIDE_AREA_H)
        if wide[0] >= cell + 2:
            (cell, area_w, area_h, places), side = wide, False
    gap = 1 if cell >= 5 else 0
    top = PAD + HEADER_H
    area_w = max(area_w, MIN_AREA_W)
    for box, (x, y), room in zip(boxes, places, _label_room(places, area_w), strict=True):
        box.x = PAD + x + box.left * cell
        box.y = top + y + LABEL_H + box.top * cell
        box.room = room
    stats_h = lines * LINE_H
    if side:
        stats_x, stats_y = PAD + area_w + BOX_GAP_X, top
        width = stats_x + STATS_W + PAD
        height = top + max(area_h, stats_h) + PAD
    else:
        stats_x, stats_y = PAD, top + area_h + BOX_GAP_Y
        width = PAD + max(area_w, STATS_W) + PAD
        height = stats_y + stats_h + PAD
    width = max(width, PAD + text_width(title, 11) + 30 + text_width(status.upper(), 11) + PAD)
    return Layout(cell, gap, tensors, width, height, area_w, area_h, stats_x, stats_y)
