"""The pictures' colours (tests read them back from the PNG), the per-program palettes, and the
geometry in pixels.
"""

from __future__ import annotations

Program = tuple[int, int, int]
RGB = tuple[int, int, int]

# -- colours (RGB); tests read these back from the PNG ---------------------------------------------
WHITE: RGB = (255, 255, 255)
UNTOUCHED: RGB = (236, 236, 236)  # an element no program touched
OTHERS: RGB = (206, 206, 206)  # touched by some other program (context for the selected one)
LOAD: RGB = (31, 119, 180)
STORE: RGB = (255, 127, 14)
ATOMIC: RGB = (148, 103, 189)
OUT_OF_BOUNDS: RGB = (214, 39, 40)  # also a store into an input tensor
SHARED_DOT: RGB = (25, 25, 25)  # overview: more than one program touched this element
WRONG_DOT: RGB = (110, 0, 0)  # the output element holds a wrong value
FADE = 0.42  # earlier steps keep this much of their colour (the rest is white)

VIEWS = ("program", "overview", "order")

# -- geometry (pixels) --------------------------------------------------------------------------------
DPI = 100
PAD = 14
HEADER_H = 70  # three text lines: title, what is shown, legend
LABEL_H = 17  # a tensor's name above its grid
BOX_GAP_X, BOX_GAP_Y = 26, 12
MAX_AREA_W, MAX_AREA_H = 780, 880  # the tensors' area beside the numbers; the cell size shrinks to fit
WIDE_AREA_W, WIDE_AREA_H = 1200, 640  # ... or above them
STATS_W = 390
MIN_AREA_W = 520  # leaves room beside the tensors' names for what the shown program did
LINE_H = 15  # one line of the monospace stats text
STATS_PT = 8.5  # the stats text beside the tensors: 8.5 pt at DPI 100 is about 12 px, shown unscaled
MAX_OPS_LISTED = 12
MAX_PROGRAMS_LISTED = 16
CELL_SIZES = (24, 20, 18, 16, 14, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2)


def fade(color: RGB) -> RGB:
    """The colour of an earlier step: FADE of it, the rest white."""
    return tuple(int(round(c * FADE + 255 * (1 - FADE))) for c in color)


_PROGRAM_PALETTE: list[RGB] = []


def program_color(i: int) -> RGB:
    """Distinct colours for neighbouring programs: tab20's strong shades, then its light ones."""
    if not _PROGRAM_PALETTE:
        from matplotlib import colormaps

        cmap = colormaps["tab20"]
        # Skip tab20's reds (out of bounds is red) and greys (untouched is grey).
        order = [k for k in list(range(0, 20, 2)) + list(range(1, 20, 2)) if k not in (6, 7, 14, 15)]
        _PROGRAM_PALETTE.extend(tuple(int(255 * v) for v in cmap(k)[:3]) for k in order)
    return _PROGRAM_PALETTE[i % len(_PROGRAM_PALETTE)]


def order_color(i: int, n: int) -> RGB:
    from matplotlib import colormaps

    return tuple(int(255 * v) for v in colormaps["viridis"](i / max(1, n - 1))[:3])
