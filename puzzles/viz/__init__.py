"""See the memory: what each program of a kernel loaded, stored and masked off.

Everything is drawn from the `Trace` that `test()` records in Triton's interpreter, into a
plain PNG (no display, no GUI backend; matplotlib only for its fonts), so the same picture
works in JupyterLab, Colab, VS Code, nbviewer, GitHub and a grading directory:

    render_png(result, "p02.png", program=6)        # one program's loads and stores
    render_png(result, view="overview")              # each element coloured by its program
    show(result, puzzle)                             # the interactive view (test(..., viz=True))
    save_pngs(result, "viz/", puzzle=puzzle)         # the grading command's --viz DIR

Every tensor argument is a grid of its elements (1-D: a row, wrapped when long; 2-D: a grid;
3-D: small multiples along the first axis). Out-of-bounds lanes are drawn in red outside the
tensor (past its last element, or before its first), where the memory would have been.

The picture is assembled pixel by pixel (cells are exact squares at known positions, see
`layout()`) and the text is rasterised with matplotlib's FreeType fonts and cached; nothing is
resampled, so tests read exact colours, and a redraw takes tens of milliseconds.

Every entry point takes the run's `puzzle` (a `Puzzle`, optional): what is particular to a puzzle
comes from its records, never from its number. Its `strided_inputs` count only their view in the
fewest bytes (not the gaps of their storage); its `tile_order` draws C's tiles in launch order;
its `launch_order_note` goes under the widget's launch-order view. Without it, the run is drawn as
it is. `digest(result, puzzle=...)` digests a run once, for several pictures.

The package, bottom up: style.py (colours, geometry), fonts.py (text), accesses.py (each
program's ops and the run's numbers, from the trace), layout.py (where every cell goes),
paint.py (one grid's cells, to pixels), launch_order.py (C's tiles in launch order), model.py
(one run digested once), picture.py (the static PNG, the stats table, --viz DIR), jupyter.py
(the ipywidgets view, with its static fallback); launcher.py (triton-viz's own 3-D viewer) stands
apart. This file names the public API.
"""

from __future__ import annotations

from puzzles.viz.accesses import Counts, Op, Stats, program_ops
from puzzles.viz.jupyter import show, widget
from puzzles.viz.launch_order import TILES
from puzzles.viz.launcher import launch_triton_viz, stop_triton_viz
from puzzles.viz.layout import Layout, TensorBox
from puzzles.viz.model import Model, digest, layout, stats
from puzzles.viz.picture import render_figure, render_png, save_pngs, stats_table
from puzzles.viz.style import (
    DPI,
    LOAD,
    OTHERS,
    OUT_OF_BOUNDS,
    SHARED_DOT,
    STATS_PT,
    STORE,
    VIEWS,
    WHITE,
    WRONG_DOT,
    fade,
    order_color,
    program_color,
)

__all__ = [
    "Counts", "Layout", "Model", "Op", "Stats", "TensorBox", "VIEWS", "digest", "launch_triton_viz", "layout",
    "program_ops", "render_figure", "render_png", "save_pngs", "show", "stats", "stats_table", "stop_triton_viz",
    "widget",
    # the colours and sizes the tests read back from the pictures
    "DPI", "LOAD", "OTHERS", "OUT_OF_BOUNDS", "SHARED_DOT", "STATS_PT", "STORE", "TILES", "WHITE", "WRONG_DOT",
    "fade", "order_color", "program_color",
]
