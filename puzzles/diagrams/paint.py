"""Drawing primitives shared by the diagram families: a tensor's cells and blocks, ticks, guides,
the grid of programs, the legend, the header (title, formula, notes) and the packing inset.
"""

from __future__ import annotations

import math
import re

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

from puzzles.diagrams.layout import (
    FS_TICK,
    LINE_H,
    TICK_H,
    Layout,
    axis_labels,
    deck_depth,
    face_size,
    name_text,
    overflow,
    text_width,
    wrap,
)
from puzzles.diagrams.scene import Dim, Item, Scene
from puzzles.diagrams.style import (
    DECK,
    FIG_W,
    FORMULA,
    FS_AXIS,
    FS_FORMULA,
    FS_NAME,
    FS_SMALL,
    FS_TITLE,
    GRID_LINE,
    GUIDE,
    INPUT_EDGE,
    INPUT_FILL,
    LABEL_GROUND,
    LIGHT,
    MASK_EDGE,
    MAX_LAYERS,
    MUTED,
    OUTPUT_EDGE,
    OUTPUT_FILL,
    STRONG,
    STRONG_EDGE,
    TEXT,
    TICK_GROUND_ACROSS,
    TICK_GROUND_DOWN,
    VIRTUAL_EDGE,
    VIRTUAL_FILL,
)


def _style(item: Item) -> tuple[str, str, str]:
    if item.role == "output":
        return OUTPUT_FILL, OUTPUT_EDGE, "-"
    if item.role == "virtual":
        return VIRTUAL_FILL, VIRTUAL_EDGE, "--"
    return INPUT_FILL, INPUT_EDGE, "-"


class Painter:
    """Draws in inches on one axes that covers the whole figure; (dx, dy) shifts what follows."""

    def __init__(self, fig: Figure, width: float, height: float) -> None:
        self.ax = fig.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, width)
        self.ax.set_ylim(0, height)
        self.ax.set_axis_off()
        self.dx = 0.0
        self.dy = 0.0

    def rect(self, x: float, y: float, w: float, h: float, **kw: object) -> None:
        """A rectangle by its top-left corner (y grows upwards)."""
        kw.setdefault("linewidth", 0)
        self.ax.add_patch(Rectangle((x + self.dx, y - h + self.dy), w, h, clip_on=False, **kw))

    def line(self, xs: list[float], ys: list[float], **kw: object) -> None:
        self.ax.plot([x + self.dx for x in xs], [y + self.dy for y in ys], solid_capstyle="butt", clip_on=False, **kw)

    def text(self, x: float, y: float, s: str, **kw: object) -> None:
        kw.setdefault("color", TEXT)
        self.ax.text(x + self.dx, y + self.dy, s, clip_on=False, **kw)

    def arrow(self, p: tuple[float, float], q: tuple[float, float], **kw: object) -> None:
        start, end = (p[0] + self.dx, p[1] + self.dy), (q[0] + self.dx, q[1] + self.dy)
        self.ax.add_patch(FancyArrowPatch(start, end, clip_on=False, **kw))


def point_at(item: Item, c: float, row_e: float, col_e: float) -> tuple[float, float]:
    """The point at element offsets (row, column) of an item's face."""
    x = item.fx + (col_e / item.col.unit * c if item.col else col_e * c)
    y = item.fy - (row_e / item.row.unit * c if item.row else row_e * c)
    return x, y


def draw_item(p: Painter, item: Item, c: float) -> None:
    fill, edge, ls = _style(item)
    w, h = face_size(item, c)
    row, col = item.row, item.col
    size_r, size_c = (row.size if row else 1), (col.size if col else 1)
    unit_r, unit_c = (row.unit if row else 1), (col.unit if col else 1)
    nr, nc = size_r / unit_r, size_c / unit_c
    z0 = 2.0
    dashed = (0, (2, 2))

    for layer in range(item.layers - 1, 0, -1):  # the slices behind the front face
        off = layer * DECK
        p.rect(item.fx + off, item.fy + off, nc * c, nr * c, facecolor=fill, edgecolor=edge, linewidth=0.8,
               linestyle=ls, zorder=z0)
    p.rect(item.fx, item.fy, nc * c, nr * c, facecolor=fill, zorder=z0 + 0.1)
    if w > nc * c + 1e-9:  # masked lanes past the end of the last block
        p.rect(item.fx + nc * c, item.fy, w - nc * c, h, facecolor="white", hatch="////", edgecolor=MASK_EDGE,
               linewidth=0.6, linestyle=dashed, zorder=z0 + 0.05)
    if h > nr * c + 1e-9:
        p.rect(item.fx, item.fy - nr * c, nc * c, h - nr * c, facecolor="white", hatch="////", edgecolor=MASK_EDGE,
               linewidth=0.6, linestyle=dashed, zorder=z0 + 0.05)

    rs, rl = item.ranges(row) if row else ([(0, 1)], None)
    cs, cl = item.ranges(col) if col else ([(0, 1)], None)

    def box(r: tuple[float, float], k: tuple[float, float], clip: bool) -> tuple[float, float, float, float] | None:
        r0, r1 = max(r[0], 0), (min(r[1], size_r) if clip else r[1])
        k0, k1 = max(k[0], 0), (min(k[1], size_c) if clip else k[1])
        if r1 <= r0 or k1 <= k0:
            return None
        return item.fx + k0 / unit_c * c, item.fy - r0 / unit_r * c, (k1 - k0) / unit_c * c, (r1 - r0) / unit_r * c

    if rl is not None or cl is not None:  # the later steps of the program's loop
        for r in [rl] if rl is not None else rs:
            for k in [cl] if cl is not None else cs:
                b = box(r, k, True)
                if b:
                    p.rect(*b, facecolor=LIGHT, zorder=z0 + 0.2)
    for r in rs:
        for k in cs:
            b = box(r, k, True)
            if b:
                p.rect(*b, facecolor=STRONG, zorder=z0 + 0.3)

    def lines(dim: Dim | None, count: float, vertical: bool) -> None:
        if dim is None:
            return
        step = dim.block // dim.unit if dim.block and dim.block % dim.unit == 0 and dim.block > dim.unit else 0
        for i in range(1, math.ceil(count - 1e-9)):
            lw = 1.8 if step and i % step == 0 else 0.6
            if vertical:
                p.line([item.fx + i * c] * 2, [item.fy, item.fy - nr * c], color=GRID_LINE, linewidth=lw,
                       zorder=z0 + 0.4)
            else:
                p.line([item.fx, item.fx + nc * c], [item.fy - i * c] * 2, color=GRID_LINE, linewidth=lw,
                       zorder=z0 + 0.4)

    lines(col, nc, True)
    lines(row, nr, False)
    p.rect(item.fx, item.fy, nc * c, nr * c, facecolor="none", edgecolor=edge, linewidth=1.1, linestyle=ls,
           zorder=z0 + 0.5)

    # the outline of the program's block; dashed where it runs past the end (masked lanes)
    for r in rs:
        for k in cs:
            whole, inside = box(r, k, False), box(r, k, True)
            if whole and inside and whole != inside:
                p.rect(*whole, facecolor="white", hatch="////", edgecolor=MASK_EDGE, linewidth=0, zorder=z0 - 0.01)
                p.rect(*whole, facecolor="none", edgecolor=STRONG_EDGE, linewidth=1.2, linestyle=(0, (3, 2)),
                       zorder=z0 + 0.6)
            if inside:
                p.rect(*inside, facecolor="none", edgecolor=STRONG_EDGE, linewidth=1.6, zorder=z0 + 0.7)

    # an arrow along a loop: from the first step to the last
    loops = [(d, rng) for d, rng in ((row, rl), (col, cl)) if d is not None and rng is not None]
    if len(loops) == 1:
        d, (lo, hi) = loops[0]
        first = item.ranges(d)[0][0]
        hi = min(hi, d.size)
        if (hi - first[1]) / d.unit >= 1:
            if d is col:
                y = item.fy - (sum(max(r[0], 0) + min(r[1], size_r) for r in rs[:1]) / 2) / unit_r * c
                a, b = (item.fx + first[1] / unit_c * c, y), (item.fx + (hi - 0.25 * unit_c) / unit_c * c, y)
            else:
                x = item.fx + (sum(max(k[0], 0) + min(k[1], size_c) for k in cs[:1]) / 2) / unit_c * c
                a, b = (x, item.fy - first[1] / unit_r * c), (x, item.fy - (hi - 0.25 * unit_r) / unit_r * c)
            p.arrow(a, b, arrowstyle="-|>", mutation_scale=9, color=STRONG_EDGE, linewidth=1.0, zorder=z0 + 0.8)

    # labels: ticks and the column label over the face, the name over them; ticks and the row label on the left
    dk = deck_depth(item)
    lab = axis_labels(item, c)
    y = item.fy + dk + 0.03
    if lab.col_ticks:
        _tick_row(p, [item.fx + t / unit_c * c for t in lab.col_ticks], lab.col_ticks, y, horizontal=True)
        y += TICK_H
    for i, line in enumerate(reversed(lab.col_lines)):
        small = i < len(lab.col_lines) - 1
        p.text(item.fx + nc * c / 2, y, line, fontsize=FS_AXIS - (0.5 if small else 0), color=MUTED, ha="center",
               va="bottom", zorder=6, bbox=LABEL_GROUND)
        y += LINE_H
    name, caption = name_text(item)
    name_color = VIRTUAL_EDGE if item.role == "virtual" else edge
    p.text(item.fx, y + 0.02, name, fontsize=FS_NAME, fontweight="bold", va="bottom", ha="left", zorder=6,
           color=name_color, bbox=LABEL_GROUND)
    if caption:  # after two spaces' room (not spaces in the text, whose box would run into the name's)
        p.text(item.fx + text_width(name, FS_NAME, "bold") + text_width("  ", FS_SMALL), y + 0.035, caption,
               fontsize=FS_SMALL, color=MUTED, va="bottom", ha="left", zorder=6, bbox=LABEL_GROUND)
    if lab.row_ticks:
        _tick_row(p, [item.fy - t / unit_r * c for t in lab.row_ticks], lab.row_ticks, item.fx - 0.04,
                  horizontal=False)
    x = item.fx - lab.tick_w - 0.04
    middle = item.fy - h / 2
    for i, line in enumerate(reversed(lab.row_lines)):
        size = FS_AXIS - (0.5 if i < len(lab.row_lines) - 1 else 0)
        if lab.row_rotated:
            p.text(x, middle, line, fontsize=size, color=MUTED, rotation=90, ha="center", va="bottom",
                   rotation_mode="anchor", zorder=6, bbox=LABEL_GROUND)
            x -= LINE_H
        else:
            offset = (len(lab.row_lines) / 2 - i - 0.5) * LINE_H
            p.text(x, middle - offset, line, fontsize=size, color=MUTED, ha="right", va="center", zorder=6,
                   bbox=LABEL_GROUND)
    # per-cell labels (split-K parts)
    for d, labels in item.cell_labels.items():
        for i, text in enumerate(labels):
            if d == (col.expr if col else None):
                p.text(item.fx + (i + 0.5) * c, item.fy - h - 0.03, text, fontsize=6.5, color=STRONG_EDGE,
                       ha="center", va="top", zorder=6)
            elif d == (row.expr if row else None):
                p.text(item.fx + w + 0.05, item.fy - (i + 0.5) * c, text, fontsize=6.5, color=STRONG_EDGE,
                       ha="left", va="center", zorder=6)


def _tick_row(p: Painter, positions: list[float], values: list[int], at: float, horizontal: bool) -> None:
    """Tick numbers along an edge, leaving out those that would touch the previous one."""
    last = -1e9
    for pos, value in zip(positions, values, strict=True):
        text = str(value)
        room = text_width(text, FS_TICK) / 2 + 0.04 if horizontal else 0.1
        if abs(pos - last) < room + (0.06 if horizontal else 0):
            continue
        last = pos
        if horizontal:
            p.text(pos, at, text, fontsize=FS_TICK, color=MUTED, ha="center", va="bottom", zorder=6,
                   bbox=TICK_GROUND_ACROSS)
        else:
            p.text(at, pos, text, fontsize=FS_TICK, color=MUTED, ha="right", va="center", zorder=6,
                   bbox=TICK_GROUND_DOWN)


def draw_guides(p: Painter, scene: Scene, lay: Layout, c: float) -> None:
    """Dashed lines from each aligned tensor's block to the anchor's: the same rows, or the same columns."""
    a = scene.anchor
    assert a is not None
    aw, ah = face_size(a, c)
    for item in scene.items:
        if item is a or item.strong or a.strong:
            continue
        w, h = face_size(item, c)
        if id(item) in lay.rows and a.row is not None and item.row is not None:
            for r0, r1 in item.ranges(item.row)[0][:1]:
                for e in (max(r0, 0), min(r1, item.row.padded)):
                    y = item.fy - e / item.row.unit * c
                    x0, x1 = (item.fx + w, a.fx) if item.fx < a.fx else (a.fx + aw, item.fx)
                    p.line([x0, x1], [y, y], color=GUIDE, linewidth=0.7, linestyle=(0, (2, 2)), zorder=1)
        if id(item) in lay.cols and a.col is not None and item.col is not None:
            for k0, k1 in item.ranges(item.col)[0][:1]:
                for e in (max(k0, 0), min(k1, item.col.padded)):
                    x = item.fx + e / item.col.unit * c
                    y0, y1 = (item.fy - h, a.fy) if item.fy > a.fy else (a.fy - ah, item.fy)
                    p.line([x, x], [y0, y1], color=GUIDE, linewidth=0.7, linestyle=(0, (2, 2)), zorder=1)


def draw_program_grid(p: Painter, scene: Scene, x: float, y: float) -> tuple[float, float]:
    """The grid of programs with the chosen one highlighted; returns (width, height), inches.

    An axis that walks the anchor's columns is drawn across, one that walks its rows down, and
    a third one as slices (front: the chosen program's)."""
    grid, pid, a = scene.grid, scene.pid, scene.anchor
    direction = []
    for d in scene.axis_dims:
        if a is not None and d is not None and a.col is not None and a.col.expr == d:
            direction.append("h")
        elif a is not None and d is not None and a.row is not None and a.row.expr == d:
            direction.append("v")
        else:
            direction.append("")
    for axis, dname in enumerate(direction):
        if not dname:
            direction[axis] = next((k for k in ("h", "v", "d") if k not in direction), "d")
    if len(set(direction)) < len(direction):
        direction = ["h", "v", "d"][: len(grid)]
    axis_in = {dname: axis for axis, dname in enumerate(direction)}
    nh = grid[axis_in["h"]] if "h" in axis_in else 1
    nv = grid[axis_in["v"]] if "v" in axis_in else 1
    nd = min(grid[axis_in["d"]], MAX_LAYERS) if "d" in axis_in else 1
    cell = min(0.26, 1.9 / nh, 1.3 / nv)
    total = math.prod(grid)
    title = f"grid {tuple(grid)}: {total} program{'s' if total > 1 else ''}"
    p.text(x, y, title, fontsize=FS_AXIS + 0.5, fontweight="bold", va="top", ha="left")
    fx, fy = x + 0.02, y - 0.3 - (nd - 1) * DECK
    for layer in range(nd - 1, 0, -1):
        off = layer * DECK
        p.rect(fx + off, fy + off, nh * cell, nv * cell, facecolor="#eeeeee", edgecolor="#9a9a9a", linewidth=0.6,
               zorder=2)
    p.rect(fx, fy, nh * cell, nv * cell, facecolor="#eeeeee", edgecolor="#9a9a9a", linewidth=0.6, zorder=2.1)
    for i in range(1, nh):
        p.line([fx + i * cell] * 2, [fy, fy - nv * cell], color="white", linewidth=0.8, zorder=2.2)
    for j in range(1, nv):
        p.line([fx, fx + nh * cell], [fy - j * cell] * 2, color="white", linewidth=0.8, zorder=2.2)
    ph = pid[axis_in["h"]] if "h" in axis_in else 0
    pv = pid[axis_in["v"]] if "v" in axis_in else 0
    p.rect(fx + ph * cell, fy - pv * cell, cell, cell, facecolor=STRONG, edgecolor=STRONG_EDGE, linewidth=1.2,
           zorder=2.3)
    if len(grid) == 1 and total <= 16 and cell >= 0.18:
        for i in range(total):
            cx, cy = (fx + (i + 0.5) * cell, fy - cell / 2) if nh > 1 else (fx + cell / 2, fy - (i + 0.5) * cell)
            p.text(cx, cy, str(i), fontsize=6.5, ha="center", va="center", zorder=2.4)
    shown = pid if len(pid) > 1 else pid[0]
    lines = [f"highlighted: program {shown}"]
    for axis, note in enumerate(scene.axis_notes):
        lines.append({"h": "→ ", "v": "↓ ", "d": "↗ "}[direction[axis]] + note)
    ty = fy - nv * cell - 0.1
    width = max(nh * cell + (nd - 1) * DECK, text_width(title, FS_AXIS + 0.5, "bold"))
    for line in lines:
        p.text(x, ty, line, fontsize=FS_SMALL, color=MUTED, va="top", ha="left")
        width = max(width, text_width(line, FS_SMALL))
        ty -= 0.17
    return width, y - ty


LEGEND = [
    ("input", INPUT_FILL, INPUT_EDGE, "-", None),
    ("output", OUTPUT_FILL, OUTPUT_EDGE, "-", None),
    ("in registers only", VIRTUAL_FILL, VIRTUAL_EDGE, "--", None),
    ("the program's block", STRONG, STRONG_EDGE, "-", None),
    ("its later loop steps", LIGHT, LIGHT, "-", None),
    ("masked: past the end", "white", MASK_EDGE, (0, (2, 2)), "////"),
]


def _later_steps(item: Item, dim: Dim) -> bool:
    """Does the program's loop cover more of this dimension than its first step?"""
    strong, light = item.ranges(dim)
    if light is None:
        return False
    covered = sum(max(0, min(b, dim.size) - max(a, 0)) for a, b in strong)
    return min(light[1], dim.size) - max(light[0], 0) > covered


def draw_legend(p: Painter, scene: Scene, x: float, y: float, width: float) -> float:
    """The legend entries the picture uses, wrapped into `width`; returns the height used."""
    faces = [(i, d) for i in scene.items for d in (i.row, i.col) if d is not None]
    used = {"input", "output", "the program's block"}
    if any(i.role == "virtual" for i in scene.items):
        used.add("in registers only")
    if any(_later_steps(i, d) for i, d in faces):
        used.add("its later loop steps")
    if any(d.padded > d.size for _, d in faces) or any(overflow(i, d) > 0 for i, d in faces):
        used.add("masked: past the end")
    cx, cy = x, y
    for label, fill, edge, ls, hatch in LEGEND:
        if label not in used:
            continue
        need = 0.3 + text_width(label, FS_SMALL) + 0.25
        if cx + need > x + width:
            cx, cy = x, cy - 0.2
        p.rect(cx, cy, 0.22, 0.13, facecolor=fill, edgecolor=edge, linewidth=0.9, linestyle=ls, hatch=hatch, zorder=3)
        p.text(cx + 0.28, cy - 0.065, label, fontsize=FS_SMALL, va="center", ha="left")
        cx += need
    return y - cy + 0.2


def _header_lines(scene: Scene) -> tuple[list[str], list[str]]:
    sizes = ", ".join(f"{k} = {v}" for k, v in scene.sizes.items())
    return (wrap(f"canonical sizes: {sizes}", FS_SMALL + 0.5, FIG_W - 0.3),
            wrap(scene.formula, FS_FORMULA, FIG_W - 0.3, family="DejaVu Sans Mono"))


def header_height(scene: Scene) -> float:
    sizes, formula = _header_lines(scene)
    return 0.42 + 0.18 * len(sizes) + 0.04 + 0.2 * len(formula) + 0.08


def draw_header(p: Painter, scene: Scene, top: float) -> None:
    """Title, sizes and formula, from `top` down."""
    pz = scene.puzzle
    y = top - 0.12
    p.text(0.15, y, f"Puzzle {pz.number} · {pz.title}", fontsize=FS_TITLE, fontweight="bold", va="top", ha="left")
    y -= 0.3
    sizes, formula = _header_lines(scene)
    for line in sizes:
        p.text(0.15, y, line, fontsize=FS_SMALL + 0.5, color=MUTED, va="top", ha="left")
        y -= 0.18
    y -= 0.04
    for line in formula:
        p.text(0.15, y, line, fontsize=FS_FORMULA, family="DejaVu Sans Mono", va="top", ha="left", color=FORMULA)
        y -= 0.2


def _packed(scene: Scene) -> list[tuple[Item, str, int]]:
    """Tensors of int32 words holding 4-bit values: (tensor, the dimension it packs, its elements per word): 8,
    or a multiple of 8 where each nibble stands for a group of them (puzzle 12's offset, `MID//64`)."""
    found = []
    for item in scene.items:
        if item.dtype != "int32":
            continue
        for dim in item.dims:
            m = re.fullmatch(r"\s*(\w+)\s*//\s*(\d+)\s*", dim.expr)
            if m and int(m.group(2)) % 8 == 0 and m.group(1) in scene.dims:
                found.append((item, m.group(1), int(m.group(2))))
    return found


INSET_H = 0.62


def draw_packing_inset(p: Painter, scene: Scene, x: float, y: float, width: float) -> float:
    """One int32 word and its 8 nibbles, low nibble first; returns the height used."""
    packed = _packed(scene)
    if not packed:
        return 0.0
    box = 0.3
    for n in range(8):
        bx = x + (7 - n) * box
        p.rect(bx, y, box, 0.2, facecolor=INPUT_FILL if n else STRONG, edgecolor=INPUT_EDGE, linewidth=0.8, zorder=3)
        p.text(bx + box / 2, y - 0.1, f"n={n}", fontsize=6.5, ha="center", va="center", zorder=4)
    p.text(x, y - 0.23, "bit 31", fontsize=6, color=MUTED, ha="left", va="top")
    p.text(x + 8 * box, y - 0.23, "bit 0", fontsize=6, color=MUTED, ha="right", va="top")
    tx = x + 8 * box + 0.15
    head = "one int32 word = 8 four-bit values, low nibble first: nibble n is (word >> 4n) & 0xF"
    lines = wrap(head, FS_SMALL, width - (tx - x))
    for item, base, per in packed:
        group = per // 8  # elements of `base` that one nibble stands for
        # Positions along the size `base` are "index i along MID": a size's name is never an index's.
        text = (f"{item.name}: word w holds the values at index {per}w … {per}w + {per - 1} along {base}, "
                f"index {per}w + n in nibble n"
                if group == 1 else
                f"{item.name}: one value per group of {group} along {base} (group g = index // {group}); nibble n "
                f"of word w holds group g = 8w + n (index {per}w + {group}n … {per}w + {group}n + {group - 1})")
        lines += wrap(text, FS_SMALL, width - (tx - x))
    for i, line in enumerate(lines):
        p.text(tx, y - 0.02 - 0.16 * i, line, fontsize=FS_SMALL, color=TEXT if i == 0 else MUTED, ha="left", va="top")
    return max(INSET_H, 0.16 * len(lines) + 0.12)


def packing_inset_height(scene: Scene, width: float) -> float:
    return draw_packing_inset(Painter(Figure(), 1, 1), scene, 0, 0, width)
