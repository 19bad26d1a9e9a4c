"""The generic diagram: every tensor at the largest cell size that fits the page, under the header
and beside the grid of programs.
"""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from puzzles.diagrams.layout import Layout, arrange, place, wrap
from puzzles.diagrams.paint import (
    Painter,
    draw_guides,
    draw_header,
    draw_item,
    draw_legend,
    draw_packing_inset,
    draw_program_grid,
    header_height,
    packing_inset_height,
    point_at,
)
from puzzles.diagrams.scene import Scene
from puzzles.diagrams.strided import strided_inset, strided_inset_height
from puzzles.diagrams.style import C_MAX, C_MIN, C_TALL, FIG_W, FS_AXIS, FS_SMALL, MAX_H, MAX_H_TALL, MUTED, STRONG_EDGE


def _fit(scene: Scene, lay: Layout, max_h: float = MAX_H) -> tuple[float, float]:
    """The largest cell size (inches) at which the tensors fit the page, or the one that overflows it least,
    and by how much (1: not at all). Labels change with the cell size, so every size is tried."""
    best = (C_MIN, math.inf)
    c = C_MAX
    while c >= C_MIN:
        x0, x1, y0, y1 = place(scene, lay, c)
        over = max((x1 - x0) / (FIG_W - 0.4), (y1 - y0) / max_h, 1.0)
        if over == 1.0:
            return c, over
        if over < best[1]:
            best = (c, over)
        c *= 0.97
    return best


def draw_generic(fig: Figure, scene: Scene) -> None:
    # The plain arrangement, unless folding a long row or a tall stack gives clearly larger cells.
    options = []
    for fold_left, fold_above in ((False, False), (True, False), (False, True), (True, True)):
        lay = arrange(scene, fold_left, fold_above)
        if (fold_left and not lay.left_col) or (fold_above and not lay.above_row):
            continue
        c, over = _fit(scene, lay)
        if c < C_TALL:  # rather taller than cramped
            c, over = _fit(scene, lay, MAX_H_TALL)
        options.append((over, c, fold_left, fold_above))
    # What fits best; among those that fit, the largest cells, the plain arrangement unless 5% smaller.
    least = min(o[0] for o in options)
    fitting = [o for o in options if o[0] == least]
    largest = max(o[1] for o in fitting)
    _, c, fold_left, fold_above = next(o for o in fitting if o[1] >= largest / 1.05)
    lay = arrange(scene, fold_left, fold_above)
    x0, x1, y0, y1 = place(scene, lay, c)

    # The grid of programs goes beside the tensors when there is room, else under them with the legend.
    probe = Painter(Figure(), 1, 1)
    grid_w, grid_h = draw_program_grid(probe, scene, 0, 0)
    body_w, body_h = x1 - x0, y1 - y0
    side = body_w + grid_w + 0.7 <= FIG_W - 0.3
    notes_x = 0.2 if side else 0.2 + grid_w + 0.45
    notes_w = FIG_W - 0.2 - notes_x
    note_lines = [line for note in scene.notes for line in wrap(note, FS_SMALL, notes_w)]
    inset_h = packing_inset_height(scene, notes_w) + strided_inset_height(scene, notes_w)
    text_h = draw_legend(probe, scene, 0, 0, notes_w) + 0.18 * len(note_lines) + inset_h + 0.1
    if side:
        middle_h, foot_h = max(body_h, grid_h), text_h + 0.05
    else:
        middle_h, foot_h = body_h, max(grid_h, text_h) + 0.1

    head_h = header_height(scene)
    height = round(head_h + 0.1 + middle_h + 0.3 + foot_h, 2)
    fig.set_size_inches(FIG_W, height)
    p = Painter(fig, FIG_W, height)
    draw_header(p, scene, height)

    body_top = height - head_h - 0.1
    room = FIG_W - (grid_w + 0.5 if side else 0)
    p.dx = (room - body_w) / 2 - x0
    p.dy = body_top - y1
    draw_guides(p, scene, lay, c)
    for item in scene.items:
        draw_item(p, item, c)
    for src, (sr, sc), dst, (dr, dc), label in scene.arrows:
        start, end = point_at(src, c, sr, sc), point_at(dst, c, dr, dc)
        p.arrow(start, end, arrowstyle="-|>", mutation_scale=11, color=STRONG_EDGE, linewidth=1.3,
                connectionstyle="arc3,rad=0.3", zorder=8, shrinkA=0, shrinkB=2)
        p.text((start[0] + end[0]) / 2, min(start[1], end[1]) - 0.3, label, fontsize=FS_AXIS, color=STRONG_EDGE,
               ha="center", va="top", zorder=8)

    p.dx = p.dy = 0.0
    top = foot_h + 0.05
    if side:
        draw_program_grid(p, scene, FIG_W - 0.2 - grid_w, body_top - 0.05)
    else:
        draw_program_grid(p, scene, 0.2, top)
    ty = top - draw_legend(p, scene, notes_x, top - 0.02, notes_w) - 0.05
    for line in note_lines:
        p.text(notes_x, ty, line, fontsize=FS_SMALL, color=MUTED, va="top", ha="left")
        ty -= 0.18
    ty -= draw_packing_inset(p, scene, notes_x, ty - 0.04, notes_w)
    strided_inset(p, scene, notes_x, ty - 0.04, notes_w)
