"""One diagram per puzzle, drawn from the puzzle's own spec, sizes and grid.

`python -m puzzles.diagrams` (or `python -m puzzles diagrams`) writes `assets/<puzzle id>.svg`
for every puzzle of the catalog; the notebooks show them as `../assets/<id>.svg`.

A diagram shows every input and the output as grids at the canonical size (`sizes[0]`), the
block that one program (a middle one of the grid) touches in each of them, the formula (the
spec's docstring) and the grid of programs. All of it comes from the puzzle itself:

* the shapes from the spec's jaxtyping annotations (`spec_signature`);
* which grid axis walks which dimension, by evaluating the puzzle's grid function with one
  size changed at a time (the course's rule "axis k walks Nk" is then checked, not assumed);
* a dimension that no grid axis walks but that has a block size (`B_MID` for `MID`, `BK` for
  `K`, or a `Bk` whose `Nk` is not a dimension, as `B1` for `T`) is walked by a loop inside
  the program, in chunks of that size;
* a packed dimension such as `MID//8` is drawn so that one word lines up with the 8 values
  it holds.

Large dimensions are drawn in block units (one cell = one block, the block size labelled);
past the end of a dimension that is not a multiple of its block, the last block's masked lanes
are hatched. A few puzzles get a touch of their own (`_TOUCHES`, keyed by number) where the
generic picture would mislead: the scores of flash attention live only in registers, the
convolution's window, split-K's interleaved chunks, and the tile order of puzzle 16.

The SVG output is deterministic (fixed hash salt, no date, glyphs drawn as paths with the
DejaVu Sans that ships with matplotlib), so regenerating gives identical bytes with the pinned
matplotlib, and `tests/test_diagrams.py` can check that `assets/` is up to date.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.textpath import TextToPath

from puzzles.catalog import all_puzzles
from puzzles.inputs import TensorSpec, spec_signature
from puzzles.puzzle import Puzzle, cdiv

ASSETS = Path(__file__).resolve().parent.parent / "assets"

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


# --------------------------------------------------------------------------- the model


@dataclass
class Dim:
    """One dimension (an annotation's name or expression) at the canonical size."""

    expr: str
    size: int
    block: int | None = None  # elements per program block or per loop step
    block_name: str | None = None  # the size key(s) the block comes from, e.g. "B0", "BK//8"
    kind: str = "full"  # "grid": walked by grid axis `grid_axis`; "loop": walked inside a program; "full"
    grid_axis: int | None = None
    unit: int = 1  # elements per drawn cell
    strong: list[tuple[int, int]] = field(default_factory=list)  # the program's block(s), element ranges
    light: tuple[int, int] | None = None  # later steps of the program's loop

    @property
    def cells(self) -> float:
        return self.size / self.unit

    @property
    def padded(self) -> int:
        """The size rounded up to whole blocks: the lanes past `size` are masked."""
        if self.block and self.kind in ("grid", "loop"):
            return cdiv(self.size, self.block) * self.block
        return self.size

    def labels(self) -> tuple[str, str]:
        """The axis label: the size, then how the program walks it and what a cell is."""
        main = f"{self.expr} = {self.size}"
        sub = ""
        if self.block_name and self.kind == "grid":
            sub = f"blocks of {self.block_name} = {self.block}"
        elif self.block_name and self.kind == "loop":
            sub = f"steps of {self.block_name} = {self.block}"
        if self.unit > 1 and self.unit == self.block:
            sub = f"cells: {sub}"
        elif self.unit > 1:
            sub += f"{', ' if sub else ''}cells of {self.unit}"
        return main, sub


@dataclass
class Item:
    """One tensor of the picture."""

    name: str
    role: str  # "input", "output" or "virtual" (computed in registers, never stored)
    dtype: str
    dims: list[Dim]
    vertical: bool = False  # a 1-D tensor drawn as a column
    # Per-dimension overrides of the program's ranges for this tensor only (by expression).
    strong: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    light: dict[str, tuple[int, int] | None] = field(default_factory=dict)
    caption: str = ""  # small text after the name
    show_row: bool = True  # the row label (off when the tensor to the left has the same rows)
    show_col: bool = True  # the column label (off when the tensor above has the same columns)
    # Per dimension, a short label for each cell (drawn under a column axis, right of a row axis).
    cell_labels: dict[str, list[str]] = field(default_factory=dict)
    # layout (inches): the top-left corner of the front face
    fx: float = 0.0
    fy: float = 0.0

    @property
    def lead(self) -> list[Dim]:
        return self.dims[:-2]

    @property
    def row(self) -> Dim | None:
        if len(self.dims) == 1:
            return self.dims[0] if self.vertical else None
        return self.dims[-2]

    @property
    def col(self) -> Dim | None:
        if len(self.dims) == 1:
            return None if self.vertical else self.dims[0]
        return self.dims[-1]

    @property
    def layers(self) -> int:
        return min(math.prod(d.size for d in self.lead), MAX_LAYERS) if self.lead else 1

    def ranges(self, dim: Dim) -> tuple[list[tuple[int, int]], tuple[int, int] | None]:
        return self.strong.get(dim.expr, dim.strong), self.light.get(dim.expr, dim.light)


@dataclass
class Scene:
    """Everything one diagram shows, before layout."""

    puzzle: Puzzle
    sizes: dict[str, int]
    grid: tuple[int, ...]
    pid: tuple[int, ...]
    dims: dict[str, Dim]
    items: list[Item]
    axis_dims: list[str | None]  # per grid axis, the dimension it walks (None: not a dimension)
    axis_notes: list[str]  # per grid axis, a short description
    formula: str
    notes: list[str] = field(default_factory=list)  # extra lines under the picture
    anchor: Item | None = None
    arrows: list[tuple[Item, tuple[float, float], Item, tuple[float, float], str]] = field(default_factory=list)
    custom: Callable[[Figure, Scene], None] | None = None  # replaces the generic picture


# --------------------------------------------------------------------------- building a scene


_NAME = re.compile(r"[A-Za-z_]\w*")


def _eval(expr: str, env: dict[str, int]) -> int:
    return int(eval(expr, {"__builtins__": {}}, dict(env)))  # shapes are small expressions like "MID//8"


def _names(expr: str, sizes: dict[str, int]) -> list[str]:
    return [n for n in dict.fromkeys(_NAME.findall(expr)) if n in sizes]


def _grid_dependencies(puzzle: Puzzle, sizes: dict[str, int]) -> list[set[str]]:
    """For each grid axis, the size keys whose value changes it."""
    base = puzzle.grid_for(sizes)
    deps: list[set[str]] = [set() for _ in base]
    for key in sizes:
        changed = dict(sizes)
        changed[key] = sizes[key] * 7 + 3
        try:
            other = puzzle.grid_for(changed)
        except Exception:  # noqa: BLE001 - a grid that cannot take the change says nothing about the key
            continue
        for axis, (a, b) in enumerate(zip(base, other, strict=True)):
            if a != b:
                deps[axis].add(key)
    return deps


def _block_keys(name: str, sizes: dict[str, int]) -> list[str]:
    """Size keys that, by the course's naming, are the block of dimension `name`."""
    keys = [f"B{name}", f"B_{name}"]
    if re.fullmatch(r"N\d", name):
        keys.insert(0, f"B{name[1:]}")
    return [k for k in keys if k in sizes]


def _unit(size: int, block: int | None) -> int:
    """Elements per drawn cell: elements when few, else blocks (halved while there would be 2 cells or fewer)."""
    if size <= 16:  # elements; a single block much larger than the size in quarters of it
        return block // 4 if block and block >= 8 and block > size else 1
    if not block or block == 1:
        return 1 if size <= 32 else cdiv(size, 24)
    if block >= size:
        return 1 if size <= 32 and block == size else block
    unit = block * max(1, cdiv(cdiv(size, block), 24))
    while size / unit < 2.5 and unit % 2 == 0:
        unit //= 2
    return unit


def build_scene(puzzle: Puzzle) -> Scene:
    """The generic scene of a puzzle (before its touch, if any)."""
    sizes = dict(puzzle.canonical)
    inputs, output = spec_signature(puzzle.spec)
    specs: list[tuple[TensorSpec, str]] = [(t, "input") for t in inputs] + [(output, "output")]
    exprs = list(dict.fromkeys(d for t, _ in specs for d in t.dims))
    bases = {n for e in exprs for n in _names(e, sizes)}
    plain = [e for e in exprs if e in sizes]  # dimensions that are a single size name

    grid = tuple(puzzle.grid_for(sizes))
    deps = _grid_dependencies(puzzle, sizes)
    pid = tuple((g - 1) // 2 for g in grid)

    # Which dimension each grid axis walks, and with which block.
    block_of: dict[str, tuple[str, str]] = {}  # dimension -> (block key, "grid"/"loop")
    axis_of: dict[str, int] = {}
    axis_dims: list[str | None] = []
    axis_notes: list[str] = []
    for axis, keys in enumerate(deps):
        walked = [d for d in plain if d in keys]
        found = None
        if len(walked) == 1:
            d = walked[0]
            candidates = (keys - {d}) | set(_block_keys(d, sizes))
            for key in sorted(candidates, key=lambda k: (k not in _block_keys(d, sizes), k)):
                if cdiv(sizes[d], sizes[key]) == grid[axis]:
                    found = (d, key)
                    break
        if found:
            d, key = found
            block_of[d] = (key, "grid")
            axis_of[d] = axis
            axis_dims.append(d)
            lo = pid[axis] * sizes[key]
            hi = min(lo + sizes[key], sizes[d]) - 1
            axis_notes.append(f"axis {axis}: {d} in blocks of {key}; here {lo}" + (f"…{hi}" if hi > lo else ""))
        else:
            axis_dims.append(None)
            named = ", ".join(sorted(keys)) or "nothing"
            axis_notes.append(f"axis {axis}: {grid[axis]} programs ({named})")

    # Loops: a dimension with a block of its own name, or an orphan Bk for the one dimension left.
    used_blocks = {k for k, _ in block_of.values()}
    for d in plain:
        if d in block_of:
            continue
        for key in _block_keys(d, sizes):
            if key not in used_blocks:
                block_of[d] = (key, "loop")
                used_blocks.add(key)
                break
    orphans = [
        k for k in sizes
        if re.fullmatch(r"B\d", k) and k not in used_blocks and f"N{k[1:]}" not in bases
    ]
    left = [d for d in plain if d not in block_of and not re.fullmatch(r"N\d", d) and d in bases]
    if len(orphans) == 1 and len(left) == 1:
        block_of[left[0]] = (orphans[0], "loop")

    # Dimensions, with their blocks; expressions take their block from their names' blocks.
    dims: dict[str, Dim] = {}
    block_env = {d: sizes[k] for d, (k, _) in block_of.items()}
    for e in exprs:
        size = _eval(e, sizes)
        names = _names(e, sizes)
        blocked = [n for n in names if n in block_of]
        dim = Dim(e, size)
        if blocked:
            n = blocked[0]
            key, kind = block_of[n]
            block = _eval(e, {**sizes, **{b: block_env[b] for b in blocked}})
            if block > 0:
                dim.block, dim.kind = block, kind
                dim.block_name = key if e == n else e.replace(n, key)
                dim.grid_axis = axis_of.get(n) if kind == "grid" else None
        dims[e] = dim

    # Units: each dimension alone, then a packed "X//k" lines its words up with X's values.
    for dim in dims.values():
        dim.unit = _unit(dim.size, dim.block)
    tiled = [d for d in dims.values() if d.kind == "grid" and d.block and d.size > 16]
    if tiled:  # the dimensions of a program's tile share one cell size, so that a square tile looks square
        common = min(d.unit for d in tiled)
        for d in tiled:
            if d.block % common == 0 and d.size / common <= 32:
                d.unit = common
    for e, dim in dims.items():
        m = re.fullmatch(r"\s*(\w+)\s*//\s*(\w+)\s*", e)
        if m and m.group(1) in dims:
            factor = _eval(m.group(2), sizes)
            base = dims[m.group(1)]
            if 0 < factor * dim.unit < base.unit:
                base.unit = factor * dim.unit
    for dim in dims.values():  # a packed dimension follows its base when that is coarser
        m = re.fullmatch(r"\s*(\w+)\s*//\s*(\w+)\s*", dim.expr)
        if m and m.group(1) in dims:
            factor = _eval(m.group(2), sizes)
            dim.unit = max(dim.unit, dims[m.group(1)].unit // max(factor, 1), 1)

    # The program's ranges.
    for dim in dims.values():
        if dim.kind == "grid" and dim.block:
            start = pid[dim.grid_axis] * dim.block
            dim.strong = [(start, start + dim.block)]
        elif dim.kind == "loop" and dim.block:
            dim.strong = [(0, dim.block)]
            dim.light = (0, dim.padded)
        else:
            dim.strong = [(0, dim.size)]

    scalar = Dim("1", 1, strong=[(0, 1)])  # a 0-d tensor is drawn as one cell
    items = [
        Item(t.name, role, str(t.dtype).replace("torch.", ""), [dims[d] for d in t.dims] or [scalar])
        for t, role in specs
    ]
    doc = (inspect.getdoc(puzzle.spec) or "").strip().splitlines()
    formula = doc[0] if doc else ""
    # The output is `z` in the spec; the formula may name it (dx in puzzle 6): use that name.
    m = re.match(r"\s*([A-Za-z][A-Za-z0-9]*)(?:_\w+)?\s*(?:\[[^\]]*\])?\s*=", formula)
    if m and m.group(1) not in {t.name for t in inputs}:
        items[-1].name = m.group(1)
    return Scene(puzzle, sizes, grid, pid, dims, items, axis_dims, axis_notes, formula)


# --------------------------------------------------------------------------- per-puzzle touches


def _touch_flash_attention(scene: Scene) -> None:
    """Puzzle 9: the N0 x T scores exist only in registers; draw them, dashed, in the middle."""
    dims = scene.dims
    if "N0" in dims and "T" in dims:
        scores = Item("q·k", "virtual", "float32", [dims["N0"], dims["T"]], caption="scores, in registers only")
        scene.items.insert(len(scene.items) - 1, scores)
        scene.anchor = scores


def _touch_convolution(scene: Scene) -> None:
    """Puzzle 10: the program loops over pixels; show one window and the pixel it makes."""
    s, dims = scene.sizes, scene.dims
    if not all(k in s for k in ("H", "W", "KH", "KW")):
        return
    h, w = max(s["H"] - s["KH"] // 2 - 1, 0), max(s["W"] // 2 - 2, 0)
    for dim in ("H", "W"):
        dims[dim].kind = "loop"
        dims[dim].light = (0, dims[dim].size)
    for item in scene.items:
        if item.name == "x":
            item.strong = {"H": [(h, h + s["KH"])], "W": [(w, w + s["KW"])]}
        elif item.role == "output":
            item.strong = {"H": [(h, h + 1)], "W": [(w, w + 1)]}
        else:  # the filter: all of it, every step
            item.light = {"KH": None, "KW": None}
    scene.notes.append(
        f"one step of the program's loop: output pixel (h, w) = ({h}, {w}) from the {s['KH']} × {s['KW']} window "
        f"at rows {h}…{h + s['KH'] - 1}, columns {w}…{w + s['KW'] - 1} of x; rows past H = {s['H']} are masked (zero)"
    )
    x = next((i for i in scene.items if i.name == "x"), None)
    z = next((i for i in scene.items if i.role == "output"), None)
    if x and z:
        scene.arrows.append((x, (h + s["KH"] / 2, w + s["KW"] / 2), z, (h + 0.5, w + 0.5), "Σ k·window"))


def _touch_splitk(scene: Scene) -> None:
    """Puzzles 17 and 18: part s (grid axis 2) takes the K chunks s, s + SPLIT_K, ..."""
    s = scene.sizes
    split = [a for a, d in enumerate(scene.axis_dims) if d is None and "SPLIT_K" in scene.axis_notes[a]]
    if not split or "K" not in scene.dims or not scene.dims["K"].block:
        return
    part, parts = scene.pid[split[0]], s["SPLIT_K"]
    scene.axis_notes[split[0]] = f"axis {split[0]}: part s of K, SPLIT_K = {parts}; here s = {part}"
    k = scene.dims["K"]
    n_chunks = cdiv(k.size, k.block)
    chunks = list(range(part, n_chunks, parts))
    for e, dim in scene.dims.items():
        if "K" in _names(e, s) and dim.block:
            dim.strong = [(i * dim.block, (i + 1) * dim.block) for i in chunks]
            dim.light = None
    for item in scene.items:
        for dim in item.dims:
            if "K" in _names(dim.expr, s) and dim.block and dim.unit == dim.block:
                item.cell_labels[dim.expr] = [str(i % parts) for i in range(cdiv(dim.size, dim.block))]
    listed = ", ".join(str(i) for i in chunks)
    scene.notes.append(
        f"part s = {part} takes the K chunks s, s + SPLIT_K, … of {k.block_name} = {k.block} rows (here chunks "
        f"{listed}; the small numbers say which part takes each chunk) and atomically adds its partial tile into z"
    )


def _touch_tile_order(scene: Scene) -> None:
    """Puzzle 16: the interesting picture is the order of the tiles, not the placeholder tensors."""
    scene.custom = _draw_tile_order


def _touch_strided(scene: Scene) -> None:
    """Puzzle 19: the input is a view; say where its elements sit in the storage behind it."""
    for name, strides in scene.puzzle.strided_inputs.items():
        index = "jikl"[: len(strides)] if len(strides) != 3 else "jic"  # rows, columns, channels
        where = " + ".join(f"{i}·{st}" for i, st in zip(index, strides, strict=True))
        values = ", ".join(f"{st} = {scene.sizes[st]}" for st in strides)
        scene.notes.append(f"{name} is a strided view, not a packed array: {name}[{', '.join(index)}] sits at "
                           f"{name}_ptr + {where} ({values}); other bytes of the storage lie between its elements")


def _touch_multi_tensor(scene: Scene) -> None:
    """Puzzle 21: the spec's flat tensors hide the lesson; draw the tensors, their chunks and the map."""
    from puzzles.diagram_lists import draw_multi_tensor

    scene.custom = draw_multi_tensor


_TOUCHES: dict[int, Callable[[Scene], None]] = {
    9: _touch_flash_attention,
    10: _touch_convolution,
    16: _touch_tile_order,
    17: _touch_splitk,
    18: _touch_splitk,
    19: _touch_strided,
    21: _touch_multi_tensor,
}


# --------------------------------------------------------------------------- layout

_TTP = TextToPath()


@functools.lru_cache(maxsize=4096)
def _text_w(text: str, size: float, weight: str = "normal", family: str = "DejaVu Sans") -> float:
    """Width of a line of text, inches."""
    font = FontProperties(family=family, size=size, weight=weight)
    return _TTP.get_text_width_height_descent(text, font, ismath=False)[0] / 72


NAME_H = 0.25  # the name line above a tensor
LINE_H = 0.15  # one line of an axis label
CELL_LABEL = 0.16  # the row of cell labels under (or beside) a face


def _face(item: Item, c: float) -> tuple[float, float]:
    """Width and height of the drawn face (masked overhang included), inches."""
    w = item.col.padded / item.col.unit * c if item.col else c
    h = item.row.padded / item.row.unit * c if item.row else c
    return w, h


def _deck(item: Item) -> float:
    return (item.layers - 1) * DECK


def _name_text(item: Item) -> tuple[str, str]:
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


def _overflow(item: Item, dim: Dim | None) -> float:
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


def _labels(item: Item, c: float) -> Labels:
    h = _face(item, c)[1]
    col_lines = _axis_lines(item.col, item.show_col)
    row_lines = _axis_lines(item.row, item.show_row)
    col_ticks = _ticks(item, item.col, item.show_col)
    row_ticks = _ticks(item, item.row, item.show_row)
    tick_w = max((_text_w(str(t), FS_TICK) for t in row_ticks), default=0) + (0.05 if row_ticks else 0)
    row_len = max((_text_w(t, FS_AXIS) for t in row_lines), default=0)
    # Written along the face when that is long enough; it may run past the face's ends unless a
    # column label wider than the face comes down to the same corner.
    w = _face(item, c)[0]
    if len(col_lines) == 2 and _text_w(col_lines[1], FS_AXIS) > w + 0.3:  # one short line per part
        col_lines = col_lines[:1] + col_lines[1].split(", ")
    col_w = max((_text_w(t, FS_AXIS) for t in col_lines), default=0)
    rotated = row_len <= h + 0.16 or (row_len <= 1.5 * h + 0.3 and col_w <= w + 0.1)
    if not rotated and len(row_lines) == 2:  # written across: one short line per part
        row_lines = row_lines[:1] + row_lines[1].split(", ")
        row_len = max(_text_w(t, FS_AXIS) for t in row_lines)
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
    w, h = _face(item, c)
    dk = _deck(item)
    lab = _labels(item, c)
    name, caption = _name_text(item)
    name_w = _text_w(name, FS_NAME, "bold") + (_text_w("  " + caption, FS_SMALL) if caption else 0)
    col_w = max((_text_w(t, FS_AXIS) for t in lab.col_lines), default=0)
    right = max(w + dk + _overflow(item, item.col) * c, name_w, col_w / 2 + w / 2)
    if item.row is not None and item.row.expr in item.cell_labels:
        right = max(right, w + CELL_LABEL + 0.05)
    left = lab.tick_w + lab.row_w
    top = dk + lab.top + NAME_H
    bottom = h + _overflow(item, item.row) * c
    if item.col is not None and item.col.expr in item.cell_labels:
        bottom += CELL_LABEL
    if lab.row_rotated:
        row_len = max((_text_w(t, FS_AXIS) for t in lab.row_lines), default=0)
        bottom = max(bottom, h / 2 + row_len / 2)
    else:
        bottom = max(bottom, h / 2 + LINE_H * len(lab.row_lines) / 2)
    left_edge = -left
    if col_w / 2 > w / 2 + left:  # a column label wider than the face and its row label
        left_edge = w / 2 - col_w / 2
    return left_edge, right, top, -bottom


def _base(expr: str) -> str | None:
    names = _NAME.findall(expr)
    return names[0] if names else None


def _shares(dim: Dim | None, own: Dim | None) -> bool:
    """Does `own` line up with `dim`: the same dimension, or a packed form of it drawn the same length?"""
    if dim is None or own is None:
        return False
    if own is dim:
        return True
    return _base(own.expr) == _base(dim.expr) and math.isclose(own.padded / own.unit, dim.padded / dim.unit)


@dataclass
class Layout:
    left: list[Item] = field(default_factory=list)  # right to left: the last is the outermost
    above: list[Item] = field(default_factory=list)  # bottom to top
    above_row: list[Item] = field(default_factory=list)  # beside the first tensor above, left to right
    left_col: list[Item] = field(default_factory=list)  # under the nearest tensor on the left, top to bottom
    right: list[Item] = field(default_factory=list)
    below: list[Item] = field(default_factory=list)
    rows: set[int] = field(default_factory=set)  # ids of the tensors whose rows line up with the anchor's
    cols: set[int] = field(default_factory=set)  # ... whose columns line up


def _arrange(scene: Scene, fold_left: bool = False, fold_above: bool = False) -> Layout:
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
    if fold_above and len(lay.above) >= 2:
        lay.above, lay.above_row = lay.above[:1], lay.above[1:]
        lay.cols -= {id(i) for i in lay.above_row}
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


def _place(scene: Scene, lay: Layout, c: float) -> tuple[float, float, float, float]:
    """Place every item for cell size c; returns the bounding box (x0, x1, y0, y1), inches."""
    a = scene.anchor
    assert a is not None
    a.fx, a.fy = 0.0, 0.0
    aw, ah = _face(a, c)
    al, ar, at, ab = _extents(a, c)
    boxes = [(al, ar, at, ab)]

    def put(item: Item, fx: float, fy: float) -> tuple[float, float, float, float]:
        item.fx, item.fy = fx, fy
        l_, r_, t_, b_ = _extents(item, c)
        boxes.append((fx + l_, fx + r_, fy + t_, fy + b_))
        return boxes[-1]

    def centred(item: Item) -> float:
        return 0.0 if id(item) in lay.rows else -(ah - _face(item, c)[1]) / 2

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
        w = _face(item, c)[0]
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
        w = _face(item, c)[0]
        _, _, t_, _ = _extents(item, c)
        box = put(item, 0.0 if id(item) in lay.cols else (aw - w) / 2, cursor - t_)
        cursor = box[3] - GAP * 0.5
    return min(b[0] for b in boxes), max(b[1] for b in boxes), min(b[3] for b in boxes), max(b[2] for b in boxes)


# --------------------------------------------------------------------------- drawing


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


def _xy(item: Item, c: float, row_e: float, col_e: float) -> tuple[float, float]:
    """The point at element offsets (row, column) of an item's face."""
    x = item.fx + (col_e / item.col.unit * c if item.col else col_e * c)
    y = item.fy - (row_e / item.row.unit * c if item.row else row_e * c)
    return x, y


def _draw_item(p: Painter, item: Item, c: float) -> None:
    fill, edge, ls = _style(item)
    w, h = _face(item, c)
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
    dk = _deck(item)
    lab = _labels(item, c)
    y = item.fy + dk + 0.03
    if lab.col_ticks:
        _tick_row(p, [item.fx + t / unit_c * c for t in lab.col_ticks], lab.col_ticks, y, horizontal=True)
        y += TICK_H
    for i, line in enumerate(reversed(lab.col_lines)):
        small = i < len(lab.col_lines) - 1
        p.text(item.fx + nc * c / 2, y, line, fontsize=FS_AXIS - (0.5 if small else 0), color=MUTED, ha="center",
               va="bottom", zorder=6)
        y += LINE_H
    name, caption = _name_text(item)
    name_color = VIRTUAL_EDGE if item.role == "virtual" else edge
    p.text(item.fx, y + 0.02, name, fontsize=FS_NAME, fontweight="bold", va="bottom", ha="left", zorder=6,
           color=name_color)
    if caption:
        p.text(item.fx + _text_w(name, FS_NAME, "bold"), y + 0.035, "  " + caption, fontsize=FS_SMALL, color=MUTED,
               va="bottom", ha="left", zorder=6)
    if lab.row_ticks:
        _tick_row(p, [item.fy - t / unit_r * c for t in lab.row_ticks], lab.row_ticks, item.fx - 0.04,
                  horizontal=False)
    x = item.fx - lab.tick_w - 0.04
    middle = item.fy - h / 2
    for i, line in enumerate(reversed(lab.row_lines)):
        size = FS_AXIS - (0.5 if i < len(lab.row_lines) - 1 else 0)
        if lab.row_rotated:
            p.text(x, middle, line, fontsize=size, color=MUTED, rotation=90, ha="center", va="bottom",
                   rotation_mode="anchor", zorder=6)
            x -= LINE_H
        else:
            offset = (len(lab.row_lines) / 2 - i - 0.5) * LINE_H
            p.text(x, middle - offset, line, fontsize=size, color=MUTED, ha="right", va="center", zorder=6)
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
        room = _text_w(text, FS_TICK) / 2 + 0.04 if horizontal else 0.1
        if abs(pos - last) < room + (0.06 if horizontal else 0):
            continue
        last = pos
        if horizontal:
            p.text(pos, at, text, fontsize=FS_TICK, color=MUTED, ha="center", va="bottom", zorder=6)
        else:
            p.text(at, pos, text, fontsize=FS_TICK, color=MUTED, ha="right", va="center", zorder=6)


def _guides(p: Painter, scene: Scene, lay: Layout, c: float) -> None:
    """Dashed lines from each aligned tensor's block to the anchor's: the same rows, or the same columns."""
    a = scene.anchor
    assert a is not None
    aw, ah = _face(a, c)
    for item in scene.items:
        if item is a or item.strong or a.strong:
            continue
        w, h = _face(item, c)
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


def _program_grid(p: Painter, scene: Scene, x: float, y: float) -> tuple[float, float]:
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
    width = max(nh * cell + (nd - 1) * DECK, _text_w(title, FS_AXIS + 0.5, "bold"))
    for line in lines:
        p.text(x, ty, line, fontsize=FS_SMALL, color=MUTED, va="top", ha="left")
        width = max(width, _text_w(line, FS_SMALL))
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


def _legend(p: Painter, scene: Scene, x: float, y: float, width: float) -> float:
    """The legend entries the picture uses, wrapped into `width`; returns the height used."""
    faces = [(i, d) for i in scene.items for d in (i.row, i.col) if d is not None]
    used = {"input", "output", "the program's block"}
    if any(i.role == "virtual" for i in scene.items):
        used.add("in registers only")
    if any(_later_steps(i, d) for i, d in faces):
        used.add("its later loop steps")
    if any(d.padded > d.size for _, d in faces) or any(_overflow(i, d) > 0 for i, d in faces):
        used.add("masked: past the end")
    cx, cy = x, y
    for label, fill, edge, ls, hatch in LEGEND:
        if label not in used:
            continue
        need = 0.3 + _text_w(label, FS_SMALL) + 0.25
        if cx + need > x + width:
            cx, cy = x, cy - 0.2
        p.rect(cx, cy, 0.22, 0.13, facecolor=fill, edgecolor=edge, linewidth=0.9, linestyle=ls, hatch=hatch, zorder=3)
        p.text(cx + 0.28, cy - 0.065, label, fontsize=FS_SMALL, va="center", ha="left")
        cx += need
    return y - cy + 0.2


def _wrap(text: str, size: float, width: float, family: str = "DejaVu Sans") -> list[str]:
    lines, line = [], ""
    for word in text.split(" "):
        trial = f"{line} {word}".strip()
        if line and _text_w(trial, size, family=family) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    return lines + ([line] if line else [])


def _header_lines(scene: Scene) -> tuple[list[str], list[str]]:
    sizes = ", ".join(f"{k} = {v}" for k, v in scene.sizes.items())
    return (_wrap(f"canonical sizes: {sizes}", FS_SMALL + 0.5, FIG_W - 0.3),
            _wrap(scene.formula, FS_FORMULA, FIG_W - 0.3, family="DejaVu Sans Mono"))


def _header_height(scene: Scene) -> float:
    sizes, formula = _header_lines(scene)
    return 0.42 + 0.18 * len(sizes) + 0.04 + 0.2 * len(formula) + 0.08


def _header(p: Painter, scene: Scene, top: float) -> None:
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
    """Tensors of int32 words holding 4-bit values: (tensor, the dimension it packs, values per word)."""
    found = []
    for item in scene.items:
        if item.dtype != "int32":
            continue
        for dim in item.dims:
            m = re.fullmatch(r"\s*(\w+)\s*//\s*(\d+)\s*", dim.expr)
            if m and int(m.group(2)) == 8 and m.group(1) in scene.dims:
                found.append((item, m.group(1), 8))
    return found


INSET_H = 0.62


def _packing_inset(p: Painter, scene: Scene, x: float, y: float, width: float) -> float:
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
    lines = _wrap(head, FS_SMALL, width - (tx - x))
    for item, base, per in packed:
        text = f"{item.name}: word w holds {base} = {per}w … {per}w + {per - 1} (nibble n: {base} = {per}w + n)"
        lines += _wrap(text, FS_SMALL, width - (tx - x))
    for i, line in enumerate(lines):
        p.text(tx, y - 0.02 - 0.16 * i, line, fontsize=FS_SMALL, color=TEXT if i == 0 else MUTED, ha="left", va="top")
    return max(INSET_H, 0.16 * len(lines) + 0.12)


def _inset_height(scene: Scene, width: float) -> float:
    return _packing_inset(Painter(Figure(), 1, 1), scene, 0, 0, width)


def _fit(scene: Scene, lay: Layout, max_h: float = MAX_H) -> tuple[float, float]:
    """The largest cell size (inches) at which the tensors fit the page, or the one that overflows it least,
    and by how much (1: not at all). Labels change with the cell size, so every size is tried."""
    best = (C_MIN, math.inf)
    c = C_MAX
    while c >= C_MIN:
        x0, x1, y0, y1 = _place(scene, lay, c)
        over = max((x1 - x0) / (FIG_W - 0.4), (y1 - y0) / max_h, 1.0)
        if over == 1.0:
            return c, over
        if over < best[1]:
            best = (c, over)
        c *= 0.97
    return best


def _draw_generic(fig: Figure, scene: Scene) -> None:
    # The plain arrangement, unless folding a long row or a tall stack gives clearly larger cells.
    options = []
    for fold_left, fold_above in ((False, False), (True, False), (False, True), (True, True)):
        lay = _arrange(scene, fold_left, fold_above)
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
    lay = _arrange(scene, fold_left, fold_above)
    x0, x1, y0, y1 = _place(scene, lay, c)

    # The grid of programs goes beside the tensors when there is room, else under them with the legend.
    probe = Painter(Figure(), 1, 1)
    grid_w, grid_h = _program_grid(probe, scene, 0, 0)
    body_w, body_h = x1 - x0, y1 - y0
    side = body_w + grid_w + 0.7 <= FIG_W - 0.3
    notes_x = 0.2 if side else 0.2 + grid_w + 0.45
    notes_w = FIG_W - 0.2 - notes_x
    note_lines = [line for note in scene.notes for line in _wrap(note, FS_SMALL, notes_w)]
    inset_h = _inset_height(scene, notes_w)
    text_h = _legend(probe, scene, 0, 0, notes_w) + 0.18 * len(note_lines) + inset_h + 0.1
    if side:
        middle_h, foot_h = max(body_h, grid_h), text_h + 0.05
    else:
        middle_h, foot_h = body_h, max(grid_h, text_h) + 0.1

    head_h = _header_height(scene)
    height = round(head_h + 0.1 + middle_h + 0.3 + foot_h, 2)
    fig.set_size_inches(FIG_W, height)
    p = Painter(fig, FIG_W, height)
    _header(p, scene, height)

    body_top = height - head_h - 0.1
    room = FIG_W - (grid_w + 0.5 if side else 0)
    p.dx = (room - body_w) / 2 - x0
    p.dy = body_top - y1
    _guides(p, scene, lay, c)
    for item in scene.items:
        _draw_item(p, item, c)
    for src, (sr, sc), dst, (dr, dc), label in scene.arrows:
        start, end = _xy(src, c, sr, sc), _xy(dst, c, dr, dc)
        p.arrow(start, end, arrowstyle="-|>", mutation_scale=11, color=STRONG_EDGE, linewidth=1.3,
                connectionstyle="arc3,rad=0.3", zorder=8, shrinkA=0, shrinkB=2)
        p.text((start[0] + end[0]) / 2, min(start[1], end[1]) - 0.3, label, fontsize=FS_AXIS, color=STRONG_EDGE,
               ha="center", va="top", zorder=8)

    p.dx = p.dy = 0.0
    top = foot_h + 0.05
    if side:
        _program_grid(p, scene, FIG_W - 0.2 - grid_w, body_top - 0.05)
    else:
        _program_grid(p, scene, 0.2, top)
    ty = top - _legend(p, scene, notes_x, top - 0.02, notes_w) - 0.05
    for line in note_lines:
        p.text(notes_x, ty, line, fontsize=FS_SMALL, color=MUTED, va="top", ha="left")
        ty -= 0.18
    _packing_inset(p, scene, notes_x, ty - 0.04, notes_w)


# --------------------------------------------------------------------------- puzzle 16


def _draw_tile_order(fig: Figure, scene: Scene) -> None:
    """Row-major and grouped program order over the TM x TN tiles, side by side."""
    s = scene.sizes
    tm, tn, group = cdiv(s["M"], s["BM"]), cdiv(s["N"], s["BN"]), s["GROUP_M"]

    def grouped(pid: int) -> tuple[int, int]:
        per_group = group * tn
        first = (pid // per_group) * group
        rows = min(tm - first, group)
        return first + (pid % per_group) % rows, (pid % per_group) // rows

    def row_major(pid: int) -> tuple[int, int]:
        return pid // tn, pid % tn

    cell = min(0.36, 3.2 / tn, 3.6 / tm)
    first = min(group * group, tm * tn)
    head_h = _header_height(scene)
    panel_w, panel_h = tn * cell, tm * cell
    height = head_h + 0.75 + panel_h + 1.0
    fig.set_size_inches(FIG_W, height)
    p = Painter(fig, FIG_W, height)
    _header(p, scene, height)
    top = height - head_h - 0.55
    gap = FIG_W - 2 * panel_w
    panels = [(gap / 3, "row-major order", row_major), (2 * gap / 3 + panel_w, f"grouped, GROUP_M = {group}", grouped)]
    for x, title, order in panels:
        where = {order(pid): pid for pid in range(tm * tn)}
        p.text(x, top + 0.3, title, fontsize=FS_NAME, fontweight="bold", ha="left", va="bottom", color=OUTPUT_EDGE)
        p.text(x + panel_w / 2, top + 0.04, f"TN = cdiv(N, BN) = {tn} tile columns", fontsize=FS_AXIS, color=MUTED,
               ha="center", va="bottom")
        p.text(x - 0.06, top - panel_h / 2, f"TM = cdiv(M, BM) = {tm} tile rows", fontsize=FS_AXIS, color=MUTED,
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
    p.text(0.2, 0.55, f"one 1-D grid of TM · TN = {tm * tn} programs; the number in a tile is the pid that computes it"
           f"{'; purple lines: bands of GROUP_M tile rows' if tm > group else ''}.", fontsize=FS_SMALL, color=MUTED,
           ha="left", va="top")
    p.text(0.2, 0.35, "z[pid] = (tile_m, tile_n); the input launch is a placeholder whose shape carries the "
           "geometry", fontsize=FS_SMALL, color=MUTED, ha="left", va="top")


# --------------------------------------------------------------------------- entry points


@contextmanager
def _rc() -> Iterator[None]:
    with matplotlib.rc_context(RC):
        yield


def scene_for(puzzle: Puzzle) -> Scene:
    """The scene of a puzzle, its touch applied."""
    scene = build_scene(puzzle)
    touch = _TOUCHES.get(puzzle.number)
    if touch is not None:
        touch(scene)
    return scene


def draw(puzzle: Puzzle) -> Figure:
    """The diagram of one puzzle, at its canonical size."""
    with _rc():
        scene = scene_for(puzzle)
        fig = Figure(figsize=(FIG_W, 4))
        (scene.custom or _draw_generic)(fig, scene)
        return fig


def save(fig: Figure, path: Path | str, title: str | None = None) -> None:
    """Write a diagram as SVG (or any format by the suffix) with deterministic bytes."""
    path = Path(path)
    with _rc():
        if path.suffix == ".svg":
            fig.savefig(path, format="svg", metadata={**METADATA_KEYS, "Title": title} if title else METADATA_KEYS)
        else:
            fig.savefig(path, dpi=110)


def write_all(directory: Path | str = ASSETS) -> list[Path]:
    """Write `<directory>/<puzzle id>.svg` for every puzzle in the catalog."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for puzzle in all_puzzles():
        path = directory / f"{puzzle.id}.svg"
        save(draw(puzzle), path, title=f"Puzzle {puzzle.number}: {puzzle.title}")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """`python -m puzzles.diagrams [DIRECTORY]`: write every diagram (default: assets/)."""
    args = sys.argv[1:] if argv is None else argv
    for path in write_all(args[0] if args else ASSETS):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
