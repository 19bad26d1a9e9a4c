"""The picture of a tile-order puzzle (a `TileOrder` on its `Puzzle`, as puzzle 16): the order in
which programs take the output's tiles, row-major and grouped; and of a persistent one (a `TileOnce`, as puzzle
30): the tiles in grouped order, each coloured by the program whose loop takes it.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from puzzles.diagrams.paint import Painter, draw_header, header_height
from puzzles.diagrams.scene import Scene
from puzzles.diagrams.style import (
    FIG_W,
    FS_AXIS,
    FS_NAME,
    FS_SMALL,
    MUTED,
    OUTPUT_EDGE,
    OUTPUT_FILL,
    STRONG,
    STRONG_EDGE,
    TEXT,
    VIRTUAL_EDGE,
)


def grouped_tile(tile: int, tm: int, tn: int, group: int) -> tuple[int, int]:
    """(tile row, tile column) of the tile-th tile in grouped order (bands of `group` tile rows)."""
    per_group = group * tn
    first = (tile // per_group) * group
    rows = min(tm - first, group)
    return first + (tile % per_group) % rows, (tile % per_group) // rows


PROGRAM_COLOURS = ("#f4a04f", "#8fb8e0", "#a7d49b", "#d7a9e3", "#f2d16b", "#e89a9a", "#9fd8d0", "#c9b89a")


def draw_persistent_tiles(fig: Figure, scene: Scene) -> None:
    """The output's tiles in grouped order, each numbered by its place in that order and coloured by the program
    that takes it: program pid takes tiles pid, pid + P, pid + 2P, ... (P programs)."""
    once = scene.puzzle.tile_once
    assert once is not None, "drawn only for a puzzle whose tiles are computed once by a loop"
    (m, n), (bm, bn) = once.dims, once.block
    sizes = scene.sizes
    tm, tn = -(-sizes[m] // sizes[bm]), -(-sizes[n] // sizes[bn])
    programs, group = sizes[once.programs], sizes[once.group]
    cell = min(0.5, 4.0 / tn, 3.4 / tm)
    head_h = header_height(scene)
    panel_w, panel_h = tn * cell, tm * cell
    height = head_h + 0.75 + panel_h + 1.1
    fig.set_size_inches(FIG_W, height)
    p = Painter(fig, FIG_W, height)
    draw_header(p, scene, height)
    top, x = height - head_h - 0.55, (FIG_W - panel_w) / 2
    p.text(x, top + 0.3, f"z's tiles, {once.programs} = {programs} programs", fontsize=FS_NAME, fontweight="bold",
           ha="left", va="bottom", color=OUTPUT_EDGE)
    p.text(x + panel_w / 2, top + 0.04, f"TN = cdiv({n}, {bn}) = {tn} tile columns", fontsize=FS_AXIS, color=MUTED,
           ha="center", va="bottom")
    p.text(x - 0.06, top - panel_h / 2, f"TM = cdiv({m}, {bm}) = {tm}", fontsize=FS_AXIS, color=MUTED, rotation=90,
           ha="center", va="bottom", rotation_mode="anchor")
    for tile in range(tm * tn):
        r, k = grouped_tile(tile, tm, tn, group)
        pid = tile % programs
        p.rect(x + k * cell, top - r * cell, cell, cell, facecolor=PROGRAM_COLOURS[pid % len(PROGRAM_COLOURS)],
               edgecolor="white", linewidth=0.8, zorder=2)
        p.text(x + (k + 0.5) * cell, top - (r + 0.5) * cell, f"{tile}\np{pid}", fontsize=6, ha="center",
               va="center", zorder=3, color=TEXT, linespacing=0.9)
    p.rect(x, top, panel_w, panel_h, facecolor="none", edgecolor=OUTPUT_EDGE, linewidth=1.1, zorder=4)
    for band in range(group, tm, group):
        p.line([x - 0.05, x + panel_w + 0.05], [top - band * cell] * 2, color=VIRTUAL_EDGE, linewidth=1.6, zorder=5)
    p.text(0.2, 0.6, f"in each tile: its number in grouped order ({once.group} = {group}: purple lines between bands) "
           f"and the program whose loop takes it, p = tile mod {programs}.", fontsize=FS_SMALL, color=MUTED,
           ha="left", va="top")
    p.text(0.2, 0.4, f"{once.loop}: each tile once; a tile computed twice, or never, is named by (tile row, tile "
           "column) in the verdict.", fontsize=FS_SMALL, color=MUTED, ha="left", va="top")


def draw_tile_order(fig: Figure, scene: Scene) -> None:
    """Row-major and grouped program order over the TM x TN tiles, side by side."""
    tiling = scene.puzzle.tile_order
    assert tiling is not None, "drawn only for a puzzle with a tile order"
    (tm, tn), group = tiling.tiles(scene.sizes), scene.sizes[tiling.group]
    m, n, bm, bn, group_name = tiling.rows, tiling.cols, tiling.block_rows, tiling.block_cols, tiling.group

    def grouped(pid: int) -> tuple[int, int]:
        return grouped_tile(pid, tm, tn, group)

    def row_major(pid: int) -> tuple[int, int]:
        return pid // tn, pid % tn

    cell = min(0.36, 3.2 / tn, 3.6 / tm)
    first = min(group * group, tm * tn)
    head_h = header_height(scene)
    panel_w, panel_h = tn * cell, tm * cell
    height = head_h + 0.75 + panel_h + 1.0
    fig.set_size_inches(FIG_W, height)
    p = Painter(fig, FIG_W, height)
    draw_header(p, scene, height)
    top = height - head_h - 0.55
    gap = FIG_W - 2 * panel_w
    panels = [(gap / 3, "row-major order", row_major),
              (2 * gap / 3 + panel_w, f"grouped, {group_name} = {group}", grouped)]
    for x, title, order in panels:
        where = {order(pid): pid for pid in range(tm * tn)}
        p.text(x, top + 0.3, title, fontsize=FS_NAME, fontweight="bold", ha="left", va="bottom", color=OUTPUT_EDGE)
        p.text(x + panel_w / 2, top + 0.04, f"TN = cdiv({n}, {bn}) = {tn} tile columns", fontsize=FS_AXIS,
               color=MUTED, ha="center", va="bottom")
        p.text(x - 0.06, top - panel_h / 2, f"TM = cdiv({m}, {bm}) = {tm} tile rows", fontsize=FS_AXIS, color=MUTED,
               rotation=90, ha="center", va="bottom", rotation_mode="anchor")
        rows_read, cols_read = set(), set()
        for (r, k), pid in where.items():
            early = pid < first
            if early:
                rows_read.add(r)
                cols_read.add(k)
            p.rect(x + k * cell, top - r * cell, cell, cell, facecolor=STRONG if early else OUTPUT_FILL,
                   edgecolor="white", linewidth=0.8, zorder=2)
            p.text(x + (k + 0.5) * cell, top - (r + 0.5) * cell, str(pid), fontsize=6.5, ha="center", va="center",
                   zorder=3, color=TEXT)
        p.rect(x, top, panel_w, panel_h, facecolor="none", edgecolor=OUTPUT_EDGE, linewidth=1.1, zorder=4)
        # the walk of the first programs, tile centre to tile centre
        path = [order(pid) for pid in range(first)]
        xs = [x + (k + 0.5) * cell for _, k in path]
        ys = [top - (r + 0.5) * cell for r, _ in path]
        p.line(xs, ys, color=STRONG_EDGE, linewidth=0.9, alpha=0.6, zorder=3.5)
        if len(path) > 1:
            p.arrow((xs[-2], ys[-2]), (xs[-1], ys[-1]), arrowstyle="-|>", mutation_scale=9, color=STRONG_EDGE,
                    linewidth=1.0, zorder=3.5, shrinkA=0, shrinkB=4)
        if order is grouped:
            for band in range(group, tm, group):
                p.line([x - 0.05, x + panel_w + 0.05], [top - band * cell] * 2, color=VIRTUAL_EDGE, linewidth=1.6,
                       zorder=5)
        p.text(x, top - panel_h - 0.1,
               f"programs 0…{first - 1} read {len(rows_read)} panels of A + {len(cols_read)} of B",
               fontsize=FS_AXIS, color=STRONG_EDGE, ha="left", va="top")
    bands = f"; purple lines: bands of {group_name} tile rows" if tm > group else ""
    p.text(0.2, 0.55, f"one 1-D grid of TM · TN = {tm * tn} programs; the number in a tile is the pid that computes it"
           f"{bands}.", fontsize=FS_SMALL, color=MUTED, ha="left", va="top")
    p.text(0.2, 0.35, "row pid of z holds (tile_m, tile_n), the tile of program pid; the kernel gets only the sizes, "
           "no input tensor", fontsize=FS_SMALL, color=MUTED, ha="left", va="top")
