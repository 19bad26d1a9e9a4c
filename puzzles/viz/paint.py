"""Cell-level painting: the colours of one tensor's grid, cell by cell, expanded to exact pixels.
"""

from __future__ import annotations

import numpy as np

from puzzles.viz.layout import TensorBox
from puzzles.viz.style import RGB


class Paint:
    """Cell-level colours of one tensor's grid (top and bottom half, and a centre dot)."""

    def __init__(self, box: TensorBox) -> None:
        self.box = box
        shape = (box.grid_rows, box.grid_cols, 3)
        self.top = np.full(shape, 255, np.uint8)
        self.bottom = np.full(shape, 255, np.uint8)
        self.dot = np.zeros(shape, np.uint8)
        self.has_dot = np.zeros(shape[:2], bool)
        self.tile = 1  # cells per tile side: the white gaps separate tiles, not cells

    def _rc(self, elements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r, c = self.box.cells(elements)
        r, c = r + self.box.top, c + self.box.left
        keep = (r >= 0) & (r < self.box.grid_rows) & (c >= 0) & (c < self.box.grid_cols)
        return r[keep], c[keep]

    def fill(self, elements: np.ndarray, color: RGB | np.ndarray, half: str = "both") -> None:
        r, c = self._rc(elements)
        if half in ("both", "top"):
            self.top[r, c] = color
        if half in ("both", "bottom"):
            self.bottom[r, c] = color

    def mark(self, elements: np.ndarray, color: RGB) -> None:
        r, c = self._rc(elements)
        self.dot[r, c] = color
        self.has_dot[r, c] = True

    def pixels(self, cell: int, gap: int) -> np.ndarray:
        """Expand cells to pixels: split halves, centre dots, white gaps between cells."""
        inner = cell - gap
        img = np.repeat(np.repeat(self.top, cell, 0), cell, 1)
        bottom = np.repeat(np.repeat(self.bottom, cell, 0), cell, 1)
        py = np.arange(img.shape[0]) % cell
        img = np.where((py >= (inner + 1) // 2)[:, None, None], bottom, img)
        if self.has_dot.any() and inner >= 4:
            lo, hi = inner // 2 - max(1, inner // 6), inner // 2 + max(1, inner // 6)
            in_dot = (py >= lo) & (py < hi)
            px = np.arange(img.shape[1]) % cell
            in_dot_x = (px >= lo) & (px < hi)
            dots = np.repeat(np.repeat(self.has_dot, cell, 0), cell, 1) & in_dot[:, None] & in_dot_x[None, :]
            dot_colors = np.repeat(np.repeat(self.dot, cell, 0), cell, 1)
            img[dots] = dot_colors[dots]
        if gap:
            pitch = cell * self.tile
            img[np.arange(img.shape[0]) % pitch >= pitch - gap] = 255
            img[:, np.arange(img.shape[1]) % pitch >= pitch - gap] = 255
        return img
