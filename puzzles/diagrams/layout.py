"""Where each tensor goes: text sizes, axis labels and ticks, and the arrangement of the tensors
(in a row, folded left or above) at a given cell size.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field

from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from puzzles.diagrams.scene import Dim, Item, Scene, base_name
from puzzles.diagrams.style import DECK, FS_AXIS, FS_NAME, FS_SMALL, GAP

_TTP = TextToPath()


@functools.lru_cache(maxsize=4096)
def text_width(text: str, size: float, weight: str = "normal", family: str = "DejaVu Sans") -> float:
    """Width of a line of text, inches."""
    font = FontProperties(family=family, size=size, weight=weight)
    return _TTP.get_text_width_height_descent(text, font, ismath=False)[0] / 72


def wrap(text: str, size: float, width: float, family: str = "DejaVu Sans") -> list[str]:
    """`text` cut into lines no wider than `width` inches, at spaces."""
    lines, line = [], ""
    for word in text.split(" "):
        trial = f"{line} {word}".strip()
        if line and text_width(trial, size, family=family) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    return lines + ([line] if line else [])


NAME_H = 0.25  # the name line above a tensor
LINE_H = 0.15  # one line of an axis label
CELL_LABEL = 0.16  # the row of cell labels under (or beside) a face


def face_size(item: Item, c: float) -> tuple[float, float]:
    """Width and height of the drawn face (masked overhang included), inches."""
    w = item.col.padded / item.col.unit * c if item.col else c
    h = item.row.padded / item.row.unit * c if item.row else c
    return w, h


def deck_depth(item: Item) -> float:
    return (item.layers - 1) * DECK


def name_text(item: Item) -> tuple[str, str]:
    caption = item.caption
    if item.lead:
        parts = []
        for d in item.lead:
            lo = d.strong[0][0] if d.strong else 0
            parts.append(f"{lo} of {d.expr} = {d.size}")
        caption = "slice " + ", ".join(parts) + (f"; {caption}" if caption else "")
    return item.name, caption


def _axis_lines(dim: Dim | None, shown: bool) -> list[str]:
    if dim is None or not shown:
        return []
    return [t for t in dim.labels() if t]


def overflow(item: Item, dim: Dim | None) -> float:
    """How far, in cells, the program's block runs past the face (a window over the edge)."""
    if dim is None:
        return 0.0
    strong, _ = item.ranges(dim)
    end = max((b for _, b in strong), default=0)
    return max(0.0, (end - dim.padded) / dim.unit)


FS_TICK = 6.5
TICK_H = 0.13


@dataclass
class Labels:
    """What is written around one face, and the room it takes (inches)."""

    col_lines: list[str]
    row_lines: list[str]
    col_ticks: list[int]
    row_ticks: list[int]
    row_rotated: bool
    tick_w: float  # the column of row ticks
    row_w: float  # the row label, beyond the ticks
    top: float  # from the top of the deck to the top of the column label


def _ticks(item: Item, dim: Dim | None, shown: bool) -> list[int]:
    """Element offsets written along a labelled axis: 0, the edges of the program's block, the size."""
    if dim is None or not shown:
        return []
    marks = {0, dim.size}
    for lo, hi in item.ranges(dim)[0][:2]:
        marks.update((max(lo, 0), min(hi, dim.size)))
    return sorted(marks)


def axis_labels(item: Item, c: float) -> Labels:
    h = face_size(item, c)[1]
    col_lines = _axis_lines(item.col, item.show_col)
    row_lines = _axis_lines(item.row, item.show_row)
    col_ticks = _ticks(item, item.col, item.show_col)
    row_ticks = _ticks(item, item.row, item.show_row)
    tick_w = max((text_width(str(t), FS_TICK) for t in row_ticks), default=0) + (0.05 if row_ticks else 0)
    row_len = max((text_width(t, FS_AXIS) for t in row_lines), default=0)
    # Written along the face when that is long enough; it may run past the face's ends unless a
    # column label wider than the face comes down to the same corner.
    w = face_size(item, c)[0]
    if len(col_lines) == 2 and text_width(col_lines[1], FS_AXIS) > w + 0.3:  # one short line per part
        col_lines = col_lines[:1] + col_lines[1].split(", ")
    col_w = max((text_width(t, FS_AXIS) for t in col_lines), default=0)
    rotated = row_len <= h + 0.16 or (row_len <= 1.5 * h + 0.3 and col_w <= w + 0.1)
    if not rotated and len(row_lines) == 2:  # written across: one short line per part
        row_lines = row_lines[:1] + row_lines[1].split(", ")
        row_len = max(text_width(t, FS_AXIS) for t in row_lines)
    if not row_lines:
        row_w = 0.0
    elif rotated:
        row_w = LINE_H * len(row_lines) + 0.04
    else:
        row_w = row_len + 0.08
    top = (TICK_H if col_ticks else 0) + LINE_H * len(col_lines) + (0.04 if col_lines else 0)
    return Labels(col_lines, row_lines, col_ticks, row_ticks, rotated, tick_w, row_w, top)


def _extents(item: Item, c: float) -> tuple[float, float, float, float]:
    """(left, right, top, bottom) of everything drawn for an item, relative to its face's top-left."""
    w, h = face_size(item, c)
    dk = deck_depth(item)
    lab = axis_labels(item, c)
    name, caption = name_text(item)
    name_w = text_width(name, FS_NAME, "bold") + (text_width("  " + caption, FS_SMALL) if caption else 0)
    col_w = max((text_width(t, FS_AXIS) for t in lab.col_lines), default=0)
    right = max(w + dk + overflow(item, item.col) * c, name_w, col_w / 2 + w / 2)
    if item.row is not None and item.row.expr in item.cell_labels:
        right = max(right, w + CELL_LABEL + 0.05)
    left = lab.tick_w + lab.row_w
    top = dk + lab.top + NAME_H
    bottom = h + overflow(item, item.row) * c
    if item.col is not None and item.col.expr in item.cell_labels:
        bottom += CELL_LABEL
    if lab.row_rotated:
        row_len = max((text_width(t, FS_AXIS) for t in lab.row_lines), default=0)
        bottom = max(bottom, h / 2 + row_len / 2)
    else:
        bottom = max(bottom, h / 2 + LINE_H * len(lab.row_lines) / 2)
    left_edge = -left
    if col_w / 2 > w / 2 + left:  # a column label wider than the face and its row label
        left_edge = w / 2 - col_w / 2
    return left_edge, right, top, -bottom


def _shares(dim: Dim | None, own: Dim | None) -> bool:
    """Does `own` line up with `dim`: the same dimension, or a packed form of it drawn the same length?"""
    if dim is None or own is None:
        return False
    if own is dim:
        return True
    return base_name(own.expr) == base_name(dim.expr) and math.isclose(own.padded / own.unit, dim.padded / dim.unit)


@dataclass
class Layout:
    left: list[Item] = field(default_factory=list)  # right to left: the last is the outermost
    above: list[Item] = field(default_factory=list)  # bottom to top (the signature's last tensor first)
    above_row: list[Item] = field(default_factory=list)  # beside the first tensor above, left to right
    left_col: list[Item] = field(default_factory=list)  # under the nearest tensor on the left, top to bottom
    right: list[Item] = field(default_factory=list)
    below: list[Item] = field(default_factory=list)
    rows: set[int] = field(default_factory=set)  # ids of the tensors whose rows line up with the anchor's
    cols: set[int] = field(default_factory=set)  # ... whose columns line up


def arrange(scene: Scene, fold_left: bool = False, fold_above: bool = False) -> Layout:
    """Where each tensor goes around the anchor (the output, or the tensor with the most dimensions).

    Folding puts all but the nearest of the tensors on the left under that nearest one (or all
    but the nearest above beside it), for a long row or a tall stack."""
    for item in scene.items:
        item.show_row = item.show_col = True
    if scene.anchor is None:
        scene.anchor = max(scene.items, key=lambda i: (len(i.dims), i.role == "output"))
    a = scene.anchor
    lay = Layout()
    wide = a.col is not None and a.row is not None and a.col.cells > 1.6 * a.row.cells
    left: list[Item] = []
    for item in scene.items:
        if item is a:
            continue
        if len(item.dims) == 1:
            item.vertical = _shares(a.row, item.dims[0]) and not _shares(a.col, item.dims[0])
        rows, cols = _shares(a.row, item.row), _shares(a.col, item.col)
        if rows and cols:
            rows, cols = not wide, wide
        if rows:
            (lay.right if item.role == "output" else left).append(item)
            lay.rows.add(id(item))
        elif cols:
            (lay.below if item.role == "output" else lay.above).append(item)
            lay.cols.add(id(item))
        else:
            (lay.right if item.role == "output" else left).append(item)
    lay.left = left
    if fold_above and len(lay.above) >= 2:  # read left to right in the signature's order
        lay.above, lay.above_row = lay.above[:1], lay.above[1:]
        lay.cols -= {id(i) for i in lay.above_row}
    else:  # read top to bottom in the signature's order: its first tensor on top, the nearest to the anchor last
        lay.above.reverse()
    if fold_left and len(lay.left) >= 2:
        lay.left, lay.left_col = lay.left[-1:], lay.left[:-1]
        lay.rows -= {id(i) for i in lay.left_col}
    # One label per line of aligned tensors: the outermost one carries it.
    chain = [i for i in lay.left if id(i) in lay.rows] + [a] + [i for i in lay.right if id(i) in lay.rows]
    for before, item in itertools.pairwise(chain):
        item.show_row = not (before.row and item.row and before.row.expr == item.row.expr)
    stack = [i for i in reversed(lay.above) if id(i) in lay.cols] + [a] + [i for i in lay.below if id(i) in lay.cols]
    for before, item in itertools.pairwise(stack):
        item.show_col = not (before.col and item.col and before.col.expr == item.col.expr)
    return lay


def place(scene: Scene, lay: Layout, c: float) -> tuple[float, float, float, float]:
    """Place every item for cell size c; returns the bounding box (x0, x1, y0, y1), inches."""
    a = scene.anchor
    assert a is not None
    a.fx, a.fy = 0.0, 0.0
    aw, ah = face_size(a, c)
    al, ar, at, ab = _extents(a, c)
    boxes = [(al, ar, at, ab)]

    def put(item: Item, fx: float, fy: float) -> tuple[float, float, float, float]:
        item.fx, item.fy = fx, fy
        l_, r_, t_, b_ = _extents(item, c)
        boxes.append((fx + l_, fx + r_, fy + t_, fy + b_))
        return boxes[-1]

    def centred(item: Item) -> float:
        return 0.0 if id(item) in lay.rows else -(ah - face_size(item, c)[1]) / 2

    cursor = al - GAP
    for item in reversed(lay.left):
        _, r_, _, _ = _extents(item, c)
        cursor = put(item, cursor - r_, centred(item))[0] - GAP
    if lay.left:
        near = lay.left[-1]
        cursor = near.fy + _extents(near, c)[3] - GAP * 0.5
        for item in lay.left_col:
            cursor = put(item, near.fx, cursor - _extents(item, c)[2])[3] - GAP * 0.5
    cursor = ar + GAP
    for item in lay.right:
        l_, _, _, _ = _extents(item, c)
        cursor = put(item, cursor - l_, centred(item))[1] + GAP
    cursor = at + GAP * 0.5
    for item in lay.above:
        w = face_size(item, c)[0]
        _, _, _, b_ = _extents(item, c)
        box = put(item, 0.0 if id(item) in lay.cols else (aw - w) / 2, cursor - b_)
        cursor = box[2] + GAP * 0.5
    if lay.above:
        first = lay.above[0]
        fl, fr, ft, fb = _extents(first, c)
        x = first.fx + fr + GAP
        for item in lay.above_row:
            l_, r_, _, b_ = _extents(item, c)
            box = put(item, x - l_, first.fy + fb - b_)
            x = box[1] + GAP
    cursor = ab - GAP * 0.5
    for item in lay.below:
        w = face_size(item, c)[0]
        _, _, t_, _ = _extents(item, c)
        box = put(item, 0.0 if id(item) in lay.cols else (aw - w) / 2, cursor - t_)
        cursor = box[3] - GAP * 0.5
    return min(b[0] for b in boxes), max(b[1] for b in boxes), min(b[3] for b in boxes), max(b[2] for b in boxes)
