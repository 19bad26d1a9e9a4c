"""The storage strip of a strided input (`Puzzle.strided_inputs`, as in puzzle 19): where a strided
view's elements sit in the storage behind it, the gaps between them, and the strides that step from
one element to the next."""

from __future__ import annotations

from puzzles.course.spec import spec_signature
from puzzles.diagrams.paint import Painter
from puzzles.diagrams.scene import Scene
from puzzles.diagrams.style import FS_SMALL, INPUT_EDGE, INPUT_FILL, MASK_EDGE, MUTED, STRONG, STRONG_EDGE, TEXT

CELL = 0.15  # inches per storage element
GAP_W = 0.9  # the compressed run of storage between two rows of the view
STRIP_H = 0.95


def _strided(scene: Scene) -> list[tuple[str, tuple[str, ...], int]]:
    """(name, its three strides' size keys, pixels per row) of each 3-axis strided input."""
    if not scene.puzzle.strided_inputs:
        return []
    inputs, _ = spec_signature(scene.puzzle.spec)
    columns = {t.name: t.dims[1] for t in inputs if len(t.dims) == 3}
    return [(name, strides, scene.dims[columns[name]].size)
            for name, strides in scene.puzzle.strided_inputs.items() if len(strides) == 3 and name in columns]


def strided_inset(p: Painter, scene: Scene, x: float, y: float, width: float) -> float:
    """The storage of each 3-axis strided input (rows, columns, channels) from its first element: pixel
    (0, 0) and (0, 1), the end of row 0, the gap, then row 1; returns the height used."""
    used = 0.0
    for name, (s1_name, s0_name, sc_name), n0 in _strided(scene):
        s1, s0, sc = (scene.sizes[k] for k in (s1_name, s0_name, sc_name))
        if sc != 1 or s0 != 3:  # drawn for channels-last pixels (the canonical size); others in words
            continue
        top = y - used - 0.5
        p.text(x, y - used, f"{name} in memory (channels-last crop): x[j, i, c] at x_ptr + j·{s1_name} + i·{s0_name} "
               f"+ c·{sc_name}; grey: bytes of the storage that are not in {name}", fontsize=FS_SMALL, color=TEXT,
               ha="left", va="top")
        cx = x
        starts = {}

        def pixel(j: int, i: int, strong: bool) -> None:
            nonlocal cx
            starts[(j, i)] = cx
            for c in range(3):
                p.rect(cx, top, CELL, 0.2, facecolor=STRONG if strong else INPUT_FILL,
                       edgecolor=STRONG_EDGE if strong else INPUT_EDGE, linewidth=0.6, zorder=3)
                p.text(cx + CELL / 2, top - 0.1, "rgb"[c], fontsize=6, ha="center", va="center", zorder=4)
                cx += CELL
            p.text(starts[(j, i)] + 1.5 * CELL, top - 0.24, f"({j},{i})", fontsize=6, color=MUTED, ha="center",
                   va="top")

        def dots() -> None:
            nonlocal cx
            p.text(cx + 0.12, top - 0.1, "…", fontsize=FS_SMALL, color=MUTED, ha="center", va="center")
            cx += 0.24

        pixel(0, 0, True)
        pixel(0, 1, True)
        dots()
        pixel(0, n0 - 1, False)
        gap = s1 - n0 * s0
        if gap > 0:
            p.rect(cx, top, GAP_W, 0.2, facecolor="#e6e6e6", edgecolor=MASK_EDGE, linewidth=0.6, hatch="////",
                   zorder=3)
            p.text(cx + GAP_W / 2, top - 0.24, f"{gap} bytes not in {name}", fontsize=6, color=MUTED, ha="center",
                   va="top")
            cx += GAP_W
        pixel(1, 0, True)  # program (0, 0) covers rows 0 to B1 - 1 too
        dots()
        # The strides, as brackets over the strip: one pixel to the next, one row to the next.
        for (start, end, label, rise) in ((starts[(0, 0)], starts[(0, 1)], f"{s0_name} = {s0}", 0.05),
                                          (starts[(0, 0)], starts[(1, 0)], f"{s1_name} = {s1}", 0.17)):
            h = top + rise
            p.line([start, start, end, end], [top + 0.01, h, h, top + 0.01], color=STRONG_EDGE, linewidth=0.8)
            p.text((start + end) / 2 if end - start > 0.6 else end + 0.05, h + 0.01, label, fontsize=6.5,
                   color=STRONG_EDGE, ha="center" if end - start > 0.6 else "left", va="bottom")
        p.text(cx + 0.1, top - 0.1, f"{sc_name} = {sc}: the channels of a pixel are neighbours", fontsize=6.5,
               color=MUTED, ha="left", va="center")
        used += STRIP_H
    return used


def strided_inset_height(scene: Scene, width: float) -> float:
    from matplotlib.figure import Figure

    return strided_inset(Painter(Figure(), 1, 1), scene, 0, 0, width)
