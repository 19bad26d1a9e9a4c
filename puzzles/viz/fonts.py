"""Text in the picture: rasterised once per string through matplotlib's FreeType and blitted
into the canvas (nothing is resampled, so tests read exact colours).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from puzzles.viz.style import DPI


@dataclass
class Text:
    """One string at a pixel position of the picture."""

    x: float
    y: float
    s: str
    color: str = "#222222"
    size: float = 8.5
    mono: bool = False
    weight: str = "normal"
    halo: bool = False
    ha: str = "left"
    va: str = "top"


class _Fonts:
    """Text through matplotlib's FreeType, rasterised once per string and cached.

    Drawing through Figure.text costs ~5 ms a string; the widget redraws the same labels on
    every step, so cached bitmaps keep a render well under the 0.5 s budget.
    """

    def __init__(self) -> None:
        self._fonts: dict[tuple[bool, bool], Any] = {}
        self._cache: dict[tuple[str, float, bool, bool], tuple[np.ndarray, int]] = {}

    def _font(self, bold: bool, mono: bool) -> Any:
        key = (bold, mono)
        if key not in self._fonts:
            from matplotlib import font_manager
            from matplotlib.ft2font import FT2Font

            props = font_manager.FontProperties(family="DejaVu Sans Mono" if mono else "DejaVu Sans",
                                                weight="bold" if bold else "normal")
            self._fonts[key] = FT2Font(font_manager.findfont(props))
        return self._fonts[key]

    def bitmap(self, s: str, size: float, bold: bool = False, mono: bool = False) -> tuple[np.ndarray, int]:
        """(coverage 0..255, row of the bitmap's top below the line's top)."""
        key = (s, size, bold, mono)
        if key not in self._cache:
            try:
                from matplotlib.ft2font import LoadFlags

                flags = LoadFlags.FORCE_AUTOHINT
            except ImportError:  # matplotlib < 3.10 (an older Colab image)
                from matplotlib.ft2font import LOAD_FORCE_AUTOHINT as flags

            font = self._font(bold, mono)
            font.set_size(size, DPI)
            font.set_text(s, 0.0, flags=flags)
            font.draw_glyphs_to_bitmap(antialiased=True)
            img = np.asarray(font.get_image()).copy()
            ascent = round(font.ascender / font.units_per_EM * size * DPI / 72)
            descent = round(font.get_descent() / 64)
            if len(self._cache) > 4000:  # a long session: start over rather than grow
                self._cache.clear()
            self._cache[key] = (img, ascent - (img.shape[0] - descent))
        return self._cache[key]

    def width(self, s: str, size: float = 8.5, bold: bool = False, mono: bool = False) -> int:
        return self.bitmap(s, size, bold, mono)[0].shape[1]


_FONTS = _Fonts()


def _hex_rgb(color: str) -> np.ndarray:
    return np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)], np.float32)


def text_width(text: str, size: float = 8.5, bold: bool = True) -> int:
    """Pixels a string takes, with a little room on each side (for laying text out)."""
    return _FONTS.width(text, size, bold) + 4


def blit(canvas: np.ndarray, t: Text) -> None:
    """Blend one text into the canvas (with a white halo when asked, for labels over cells)."""
    img, top = _FONTS.bitmap(t.s, t.size, t.weight == "bold", t.mono)
    h, w = img.shape
    x = int(round(t.x - (w / 2 if t.ha == "center" else w if t.ha == "right" else 0)))
    y = int(round(t.y - h / 2 if t.va == "center" else t.y + top))
    x0, y0, x1, y1 = max(0, x), max(0, y), min(canvas.shape[1], x + w), min(canvas.shape[0], y + h)
    if x0 >= x1 or y0 >= y1:
        return
    alpha = img[y0 - y : y1 - y, x0 - x : x1 - x].astype(np.float32)[..., None] / 255
    region = canvas[y0:y1, x0:x1].astype(np.float32)
    if t.halo:  # a 1-pixel white outline: the alpha dilated by one pixel in every direction
        a = alpha[..., 0]
        grown = a.copy()
        grown[1:] = np.maximum(grown[1:], a[:-1])
        grown[:-1] = np.maximum(grown[:-1], a[1:])
        grown[:, 1:] = np.maximum(grown[:, 1:], grown[:, :-1])
        grown[:, :-1] = np.maximum(grown[:, :-1], grown[:, 1:])
        region = region * (1 - grown[..., None]) + 255 * grown[..., None]
    region = region * (1 - alpha) + _hex_rgb(t.color) * alpha
    canvas[y0:y1, x0:x1] = np.clip(region + 0.5, 0, 255).astype(np.uint8)
