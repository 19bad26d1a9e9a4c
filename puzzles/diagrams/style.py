"""Settings, colours, sizes and fonts shared by every diagram (each fixed: the SVG bytes must not
depend on the user's matplotlibrc).
"""

from __future__ import annotations

# Every setting that changes the bytes of the SVG, fixed here rather than read from the user's
# matplotlibrc.
RC = {
    "svg.hashsalt": "triton-puzzles-course",
    "svg.fonttype": "path",
    "svg.image_inline": True,
    "svg.id": None,
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "mathtext.fontset": "dejavusans",
    "hatch.linewidth": 0.6,
    "hatch.color": "#8a8a8a",
    "path.simplify": False,
    "text.usetex": False,
    "axes.unicode_minus": True,
}
METADATA_KEYS = {"Date": None, "Creator": None, "Contributor": None}

# Colours.
INPUT_FILL, INPUT_EDGE = "#dbe7f4", "#3d6a9e"
OUTPUT_FILL, OUTPUT_EDGE = "#dcefd9", "#3f8a3f"
VIRTUAL_FILL, VIRTUAL_EDGE = "#f3f0f7", "#7d6b96"
STRONG, STRONG_EDGE = "#f4a04f", "#b4500a"
LIGHT = "#fad9b5"
MASK_EDGE = "#8a8a8a"
GRID_LINE = "#ffffff"
TEXT, MUTED, FORMULA = "#1f1f1f", "#5f5f5f", "#3a2a6a"
GUIDE = "#c7793a"
# Behind the labels of an axis (its size, its ticks): a guide line from a neighbouring tensor stops at them
# instead of striking them through.
LABEL_GROUND = {"boxstyle": "square,pad=0.3", "facecolor": "white", "edgecolor": "none"}
# ... and behind ticks: little room over a face's top edge (the ticks across sit 0.03 in above it), more on the
# left of the ticks down a face, where a guide line comes in (so that "- 32" does not read as a minus sign).
TICK_GROUND_ACROSS = {**LABEL_GROUND, "boxstyle": "square,pad=0.1"}
TICK_GROUND_DOWN = {**LABEL_GROUND, "boxstyle": "square,pad=0.25"}

FIG_W = 8.0  # inches: 768 px in a notebook at 96 dpi
MAX_H = 4.8  # inches for the tensors (title, formula and legend come on top)
MAX_H_TALL = 6.0  # ... when the cells would otherwise be smaller than C_TALL
C_MAX = 0.36  # largest cell, inches
C_MIN = 0.1
C_TALL = 0.105  # below this, allow a taller picture
GAP = 0.32  # between neighbouring tensors, inches
DECK = 0.07  # offset between the slices of a 3-D tensor, inches
MAX_LAYERS = 5

FS_TITLE, FS_FORMULA, FS_NAME, FS_AXIS, FS_SMALL = 12.5, 9.5, 10.5, 8, 7.5
