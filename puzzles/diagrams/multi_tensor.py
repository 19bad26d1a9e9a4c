"""The picture of a puzzle over lists of tensors (a `TensorLists` on its `Puzzle`, as puzzle 21):
tensors of different sizes cut into chunks, and which program takes which.

The generic picture draws the spec's flat tensors, which hides the lesson; this one draws what
the kernel sees: one allocation per tensor (a column of the address table), each cut into chunks
of B0 with a partial last chunk, every chunk labelled with the program the chunk map sends to it.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from puzzles.course.puzzle import TensorLists, cdiv
from puzzles.course.tensor_lists import chunk_map
from puzzles.diagrams import paint, style
from puzzles.diagrams.scene import Scene


def draw_multi_tensor(fig: Figure, scene: Scene) -> None:
    s = scene.sizes
    lengths, block = TensorLists.lengths(s), s["B0"]
    rows = chunk_map(lengths, block).tolist()
    chosen = next((pid for pid, (t, c) in enumerate(rows) if (c + 1) * block > lengths[t] and t > 0), 0)
    longest = max(cdiv(n, block) * block for n in lengths)
    left, width = 1.9, style.FIG_W - 2.4
    scale, bar_h, pitch = width / longest, 0.32, 0.62
    head_h = paint.header_height(scene)
    height = head_h + 0.45 + pitch * len(lengths) + 1.55
    fig.set_size_inches(style.FIG_W, height)
    p = paint.Painter(fig, style.FIG_W, height)
    paint.draw_header(p, scene, height)
    top = height - head_h - 0.35
    p.text(0.15, top + 0.05, "each tensor in its own allocation (column t of the address table), cut into chunks of "
           f"B0 = {block}; the number in a chunk is the program that updates it", fontsize=style.FS_SMALL,
           color=style.MUTED, ha="left", va="bottom")
    pid = 0
    for t, n in enumerate(lengths):
        y = top - 0.2 - t * pitch
        p.text(left - 0.12, y - bar_h / 2, f"tensor {t}: L{t} = {n}", fontsize=style.FS_AXIS, ha="right", va="center")
        for c in range(cdiv(n, block)):
            x0 = left + c * block * scale
            used = min(block, n - c * block) * scale
            strong = pid == chosen
            p.rect(x0, y, used, bar_h, facecolor=style.STRONG if strong else style.INPUT_FILL,
                   edgecolor=style.STRONG_EDGE if strong else style.INPUT_EDGE, linewidth=0.9, zorder=2)
            if used < block * scale:  # the masked tail of a partial last chunk
                p.rect(x0 + used, y, block * scale - used, bar_h, facecolor="none", edgecolor=style.MASK_EDGE,
                       hatch="////", linewidth=0.5, zorder=1)
            p.text(x0 + max(used, 0.16) / 2, y - bar_h / 2, str(pid), fontsize=7, ha="center", va="center", zorder=3)
            pid += 1
    # The program-to-chunk map, one cell per program.
    y = top - 0.2 - len(lengths) * pitch - 0.15
    cell = min(0.42, (style.FIG_W - left - 0.3) / len(rows))
    p.text(left - 0.12, y - 0.2, "chunks[pid] = (t, c)", fontsize=style.FS_AXIS, ha="right", va="center",
           family="DejaVu Sans Mono")
    for i, (t, c) in enumerate(rows):
        strong = i == chosen
        p.rect(left + i * cell, y, cell, 0.4, facecolor=style.STRONG if strong else style.OUTPUT_FILL,
               edgecolor="white", linewidth=0.8, zorder=2)
        p.text(left + (i + 0.5) * cell, y - 0.11, str(i), fontsize=6.5, ha="center", va="center", color=style.MUTED,
               zorder=3)
        p.text(left + (i + 0.5) * cell, y - 0.28, f"{t},{c}", fontsize=6.5, ha="center", va="center", zorder=3)
    t, c = rows[chosen]
    p.text(0.15, 0.5, f"grid (C,) = ({len(rows)},): program {chosen} reads chunks[{chosen}] = ({t}, {c}), so it "
           f"updates elements {c * block}…{lengths[t] - 1} of tensor {t} (lanes past L{t} = {lengths[t]} are masked)",
           fontsize=style.FS_SMALL, color=style.STRONG_EDGE, ha="left", va="top")
    p.text(0.15, 0.3, "addresses[r, t] for r = params, grads, moms, new params, new moms; numels[t] = L_t",
           fontsize=style.FS_SMALL, color=style.MUTED, ha="left", va="top")
