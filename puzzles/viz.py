"""See the memory: what each program of a kernel loaded, stored and masked off.

Everything is drawn from the `Trace` that `test()` records in Triton's interpreter, into a
plain PNG (no display, no GUI backend; matplotlib only for its fonts), so the same picture
works in JupyterLab, Colab, VS Code, nbviewer, GitHub and a grading directory:

    render_png(result, "p02.png", program=6)        # one program's loads and stores
    render_png(result, view="overview")              # each element coloured by its program
    show(result)                                     # the interactive view (test(..., viz=True))
    save_pngs(result, "viz/")                        # the grading command's --viz DIR

Every tensor argument is a grid of its elements (1-D: a row, wrapped when long; 2-D: a grid;
3-D: small multiples along the first axis). Out-of-bounds lanes are drawn in red outside the
tensor (past its last element, or before its first), where the memory would have been.

The picture is assembled pixel by pixel (cells are exact squares at known positions, see
`layout()`) and the text is rasterised with matplotlib's FreeType fonts and cached; nothing is
resampled, so tests read exact colours, and a redraw takes tens of milliseconds.
"""

from __future__ import annotations

import base64
import io
import math
import os
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from puzzles.recording import Access, Trace

if TYPE_CHECKING:  # imported lazily at run time: the viz must not slow down `import puzzles`
    from matplotlib.figure import Figure

    from puzzles.puzzle import Puzzle
    from puzzles.result import SizeOutcome, TestResult

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


# =====================================================================================================
# What happened: the ops of each program, recovered from the trace
# =====================================================================================================


@dataclass
class Op:
    """One load/store/atomic executed by one program (in-bounds and out-of-bounds lanes together)."""

    op: str
    program: Program
    line: int | None
    lanes: int
    masked: int
    elements: dict[str, np.ndarray] = field(default_factory=dict)  # in-bounds flat indices, by tensor
    oob: dict[str, np.ndarray] = field(default_factory=dict)  # out-of-bounds flat indices, by tensor
    into_input: dict[str, np.ndarray] = field(default_factory=dict)  # in-bounds stores to an input
    source: str = ""

    @property
    def tensors(self) -> list[str]:
        return list(dict.fromkeys([*self.elements, *self.oob]))

    @property
    def oob_lanes(self) -> int:
        return int(sum(a.size for a in self.oob.values()))

    def describe(self) -> str:
        names = ", ".join(self.tensors) or "(no lane active)"
        where = f" line {self.line}" if self.line else ""
        extra = f", {self.oob_lanes} out of bounds" if self.oob_lanes else ""
        code = f": {self.source.strip()}" if self.source.strip() else ""
        return f"{self.op} {names}{where}{code} · {self.lanes} lanes, {self.masked} masked off{extra}"


def _same_op(a: Access, b: Access) -> bool:
    # One op whose lanes fall in two tensors is recorded as consecutive accesses, one per tensor.
    return (a.op, a.program, a.line, a.lanes, a.masked, a.shape) == (b.op, b.program, b.line, b.lanes, b.masked,
                                                                     b.shape) and a.tensor != b.tensor


def program_ops(trace: Trace) -> dict[Program, list[Op]]:
    """Each program's ops in execution order, with out-of-bounds lanes attached to their op.

    The trace keeps in-bounds accesses and out-of-bounds reports in two lists. An op that had
    out-of-bounds lanes has fewer in-bounds elements than active lanes; a report is attached to
    the first such op of the same program, kind and line, in order. A report with no such op
    (every active lane out of bounds) becomes an op of its own, placed after the last one matched.
    """
    ops: dict[Program, list[Op]] = {}
    previous: Access | None = None
    for a in trace.accesses:
        program = tuple(a.program)
        if previous is not None and _same_op(previous, a):
            op = ops[program][-1]
        else:
            op = Op(a.op, program, a.line, a.lanes, a.masked)
            ops.setdefault(program, []).append(op)
        if a.tensor and len(a.elements):  # an op may have no in-bounds lane at all
            op.elements[a.tensor] = np.asarray(a.elements, dtype=np.int64)
        previous = a
    sources: dict[tuple[Program, int | None], str] = {}
    cursor: dict[Program, int] = {}  # index of the op the program's last report went to
    for bad in trace.invalid:
        program = tuple(bad.program)
        sources[(program, bad.line)] = bad.source
        elements = np.asarray(bad.elements if bad.elements is not None else [bad.element], dtype=np.int64)
        plist = ops.setdefault(program, [])
        last = cursor.get(program, -1)
        for i in range(max(last, 0), len(plist)):
            op = plist[i]
            unaccounted = op.lanes - op.masked - sum(e.size for e in op.elements.values()) - op.oob_lanes
            if op.op == bad.op and op.line == bad.line and unaccounted >= elements.size:
                op.oob[bad.tensor] = np.concatenate([op.oob.get(bad.tensor, np.empty(0, np.int64)), elements])
                cursor[program] = i
                break
        else:
            # Every active lane was out of bounds, so no access recorded it. Its place is a guess:
            # after the last report's op, before the next op of a later line (a loop may fool it).
            # Its lanes beyond the offending ones are unknown; none were masked that we know of.
            at = next((j for j in range(last + 1, len(plist))
                       if None not in (plist[j].line, bad.line) and plist[j].line > bad.line), len(plist))
            plist.insert(at, Op(bad.op, program, bad.line, elements.size, 0, oob={bad.tensor: elements}))
            cursor[program] = at
    for bad in trace.stores_to_inputs:
        program = tuple(bad.program)
        sources[(program, bad.line)] = bad.source
        for op in ops.get(program, []):
            if op.op == bad.op and op.line == bad.line and bad.tensor in op.elements:
                op.into_input[bad.tensor] = op.elements[bad.tensor]
    for plist in ops.values():
        for op in plist:
            op.source = sources.get((op.program, op.line), "")
    return ops


# =====================================================================================================
# Numbers: loads, stores, bytes, masked lanes, and the fewest bytes the puzzle needs
# =====================================================================================================


_ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
             "int8": 1, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1}


def itemsize(dtype: str) -> int:
    """Bytes per element of a dtype written as the trace writes it ("float32", "int8" ...)."""
    if dtype in _ITEMSIZE:
        return _ITEMSIZE[dtype]
    try:
        import torch

        return int(getattr(torch, dtype).itemsize)
    except (AttributeError, ImportError):
        return 4


def _numel(shape: Iterable[int]) -> int:
    return math.prod(shape)


@dataclass
class Counts:
    """Memory traffic of one program, or of all of them."""

    loads: int = 0
    stores: int = 0
    atomics: int = 0
    bytes_loaded: int = 0
    bytes_stored: int = 0  # atomics count here (their read is not counted separately)
    lanes: int = 0
    masked: int = 0
    out_of_bounds: int = 0
    read: dict[str, int] = field(default_factory=dict)  # bytes loaded, by tensor
    written: dict[str, int] = field(default_factory=dict)  # bytes stored, by tensor

    @property
    def bytes_moved(self) -> int:
        return self.bytes_loaded + self.bytes_stored

    @property
    def masked_fraction(self) -> float:
        return self.masked / self.lanes if self.lanes else 0.0

    def add(self, op: Op, sizes: dict[str, int]) -> None:
        if op.op == "load":
            self.loads += 1
        elif op.op == "store":
            self.stores += 1
        else:
            self.atomics += 1
        self.lanes += op.lanes
        self.masked += op.masked
        self.out_of_bounds += op.oob_lanes
        for name, elements in op.elements.items():
            nbytes = int(elements.size) * sizes.get(name, 4)
            if op.op == "load":
                self.bytes_loaded += nbytes
                self.read[name] = self.read.get(name, 0) + nbytes
            else:
                self.bytes_stored += nbytes
                self.written[name] = self.written.get(name, 0) + nbytes


@dataclass
class Stats:
    per_program: dict[Program, Counts]
    total: Counts
    min_bytes: int  # every input read once, the output written once
    tensor_bytes: dict[str, int]
    output: str

    @property
    def ratio(self) -> float:
        return self.total.bytes_moved / self.min_bytes if self.min_bytes else 0.0


def output_name(trace: Trace) -> str:
    """The output tensor: "z" by the course's convention, else the last argument."""
    return "z" if "z" in trace.tensors else list(trace.tensors)[-1]


def stats(source: TestResult | SizeOutcome | Trace) -> Stats:
    """Loads, stores, bytes moved and masked lanes, per program and in total, for one run."""
    model = _model(source)
    if model is None:
        raise ValueError("no memory trace to count (the kernel did not run in the interpreter)")
    return model.stats


def _compute_stats(trace: Trace, ops: dict[Program, list[Op]]) -> Stats:
    sizes = {name: itemsize(dtype) for name, (_, dtype) in trace.tensors.items()}
    tensor_bytes = {name: _numel(shape) * sizes[name] for name, (shape, _) in trace.tensors.items()}
    total = Counts()
    per_program = {}
    for program, plist in ops.items():
        c = Counts()
        for op in plist:
            c.add(op, sizes)
            total.add(op, sizes)
        per_program[program] = c
    return Stats(per_program, total, sum(tensor_bytes.values()), tensor_bytes, output_name(trace))


def _fmt_bytes(n: int) -> str:
    return f"{n:,} B"


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "0"


# =====================================================================================================
# Where things go: cell positions of every element (in bounds or not), in PNG pixels
# =====================================================================================================


@dataclass
class TensorBox:
    """A tensor's grid: element -> cell (row, col), the margins for out-of-bounds lanes, its place."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    numel: int
    width: int  # elements per grid row (1-D: the wrap width; 2-D, 3-D: the last dimension)
    rows: int  # grid rows of the in-bounds elements
    cols: int  # grid columns of the in-bounds elements
    panel_rows: int = 0  # 3-D: rows of one panel (0 for 1-D and 2-D)
    panels_per_row: int = 1
    top: int = 0  # margin rows/columns kept for out-of-bounds lanes
    bottom: int = 0
    left: int = 0
    right: int = 0
    x: int = 0  # pixel position of cell (0, 0), set by the layout
    y: int = 0
    room: int = 0  # pixels for the name and the note above the grid

    def cells(self, elements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Grid (row, col) of flat element indices; indices outside the tensor land outside its grid."""
        e = np.asarray(elements, dtype=np.int64)
        if self.panel_rows:  # 3-D: panel p, then row and column inside it; panels left to right
            per_panel = self.panel_rows * self.width
            panel, rest = np.divmod(e, per_panel)
            prow, pcol = np.divmod(panel, self.panels_per_row)
            r, c = np.divmod(rest, self.width)
            return prow * (self.panel_rows + 1) + r, pcol * (self.width + 1) + c
        if self.rows == 1 and self.width == self.numel and len(self.shape) <= 1:
            return np.zeros_like(e), e  # a single row: out-of-bounds lanes continue it left/right
        return np.divmod(e, self.width)

    def drawn(self, elements: np.ndarray) -> np.ndarray:
        """Which elements have a cell in the picture (far out-of-bounds lanes do not)."""
        r, c = self.cells(elements)
        return (r >= -self.top) & (r < self.rows + self.bottom) & (c >= -self.left) & (c < self.cols + self.right)

    @property
    def grid_rows(self) -> int:
        return self.top + self.rows + self.bottom

    @property
    def grid_cols(self) -> int:
        return self.left + self.cols + self.right

    def label(self) -> str:
        dims = ", ".join(str(s) for s in self.shape)
        wrapped = f" (rows of {self.width})" if len(self.shape) == 1 and self.rows > 1 else ""
        return f"{self.name}  {self.dtype}[{dims}]{wrapped}"


def _box_for(name: str, shape: tuple[int, ...], dtype: str) -> TensorBox:
    shape = tuple(int(s) for s in shape)
    numel = max(1, _numel(shape))
    if len(shape) <= 1:
        width = numel if numel <= 128 else 64  # long rows wrap at 64: power-of-two blocks stay aligned
        return TensorBox(name, shape, dtype, numel, width, -(-numel // width), width)
    if len(shape) == 2:
        return TensorBox(name, shape, dtype, numel, shape[1], shape[0], shape[1])
    # 3-D and more: small multiples of the last two dimensions, in a roughly square arrangement.
    panels = numel // (shape[-2] * shape[-1]) if shape[-2] * shape[-1] else 1
    r, c = shape[-2], shape[-1]
    per_row = max(1, min(panels, round(math.sqrt(panels * (r + 1) / (c + 1)))))
    prows = -(-panels // per_row)
    return TensorBox(name, shape, dtype, numel, c, prows * (r + 1) - 1, per_row * (c + 1) - 1, r, per_row)


def _set_margins(box: TensorBox, oob: np.ndarray) -> None:
    """Room around the grid for the out-of-bounds lanes of the whole run (the layout never jumps)."""
    if oob.size == 0:
        return
    r, c = box.cells(oob)
    cap_rows = max(2, min(8, box.rows // 2)) if not box.panel_rows else box.panel_rows + 1
    box.top = int(min(cap_rows, max(0, -r.min())))
    box.bottom = int(min(cap_rows, max(0, r.max() - box.rows + 1)))
    if box.rows == 1 and len(box.shape) <= 1:
        cap_cols = max(8, min(64, box.numel // 2))
        box.left = int(min(cap_cols, max(0, -c.min())))
        box.right = int(min(cap_cols, max(0, c.max() - box.cols + 1)))


@dataclass
class Layout:
    """Where each tensor's cells are in the PNG. `cell_box` gives exact pixel rectangles."""

    cell: int  # cell pitch in pixels
    gap: int  # white pixels between cells
    boxes: dict[str, TensorBox]
    width: int  # the PNG's size
    height: int
    area_w: int  # the tensors' area
    area_h: int
    stats_x: int
    stats_y: int

    def cell_origin(self, box: TensorBox, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return box.x + cols * self.cell, box.y + rows * self.cell

    def cell_box(self, tensor: str, element: int) -> tuple[int, int, int, int]:
        """(x0, y0, x1, y1) of the element's cell, ends exclusive; works for out-of-bounds elements too."""
        box = self.boxes[tensor]
        r, c = box.cells(np.array([element]))
        x0, y0 = self.cell_origin(box, r, c)
        inner = self.cell - self.gap
        return int(x0[0]), int(y0[0]), int(x0[0]) + inner, int(y0[0]) + inner

    def cell_pixel(self, tensor: str, element: int) -> tuple[int, int]:
        """A pixel inside the element's cell, clear of the centre dot and of half-cell splits."""
        x0, y0, x1, y1 = self.cell_box(tensor, element)
        return x0 + max(0, (x1 - x0) // 4), y0 + max(0, (y1 - y0) // 4)


def _pack(boxes: list[TensorBox], cell: int, max_w: int) -> tuple[int, int, list[tuple[int, int]]]:
    """Shelf packing: boxes left to right, a new shelf when the row is full. Returns (w, h, positions)."""
    x = y = shelf_h = area_w = 0
    places = []
    for box in boxes:
        w = max(box.grid_cols * cell, _text_w(box.label()))
        h = LABEL_H + box.grid_rows * cell
        if x > 0 and x + w > max_w:
            y += shelf_h + BOX_GAP_Y
            x = shelf_h = 0
        places.append((x, y))
        area_w = max(area_w, x + w)
        shelf_h = max(shelf_h, h)
        x += w + BOX_GAP_X
    return area_w, y + shelf_h, places


def _fit(boxes: list[TensorBox], max_w: int, max_h: int) -> tuple[int, int, int, list[tuple[int, int]]]:
    """The largest cell size whose packing fits (max_w, max_h): (cell, area w, area h, positions)."""
    best = None
    for cell in CELL_SIZES:
        if any(b.grid_cols * cell > max_w for b in boxes):
            continue
        area_w, area_h, places = _pack(boxes, cell, max_w)
        best = (cell, area_w, area_h, places)
        if area_h <= max_h:
            break
    return best or (CELL_SIZES[-1], *_pack(boxes, CELL_SIZES[-1], max_w))


def _label_room(places: list[tuple[int, int]], area_w: int) -> list[int]:
    """Pixels from each box's left edge to the next box on its shelf (or the area's edge)."""
    rooms = []
    for i, (x, y) in enumerate(places):
        right = next((nx for nx, ny in places[i + 1 :] if ny == y), area_w + BOX_GAP_X)
        rooms.append(right - BOX_GAP_X // 2 - x)
    return rooms


def _text_w(text: str, size: float = 8.5, bold: bool = True) -> int:
    return _FONTS.width(text, size, bold) + 4


def _stats_lines_reserved(model: _Model) -> int:
    # The panel's height is fixed per run, so the picture keeps its size while one steps through it.
    most_ops = max((len(v) for v in model.ops.values()), default=0)
    n_programs = len(model.programs)
    counts, tensors, totals = 9, 2 + len(model.boxes), 5
    program_view = counts + tensors + totals + 2 + min(most_ops, MAX_OPS_LISTED) + (most_ops > MAX_OPS_LISTED)
    overview = counts + tensors + totals + 2 + min(n_programs, MAX_PROGRAMS_LISTED) + (n_programs > MAX_PROGRAMS_LISTED)
    return max(program_view, overview) + 1


def _make_layout(model: _Model) -> Layout:
    boxes = list(model.boxes.values())
    # Numbers beside the tensors; but long, flat tensors (a 4 × 200 input) get the full width
    # with the numbers underneath, when that makes their cells much bigger.
    cell, area_w, area_h, places = _fit(boxes, MAX_AREA_W, MAX_AREA_H)
    side = True
    if cell < 5:
        wide = _fit(boxes, WIDE_AREA_W, WIDE_AREA_H)
        if wide[0] >= cell + 2:
            (cell, area_w, area_h, places), side = wide, False
    gap = 1 if cell >= 5 else 0
    top = PAD + HEADER_H
    area_w = max(area_w, MIN_AREA_W)
    for box, (x, y), room in zip(boxes, places, _label_room(places, area_w), strict=True):
        box.x = PAD + x + box.left * cell
        box.y = top + y + LABEL_H + box.top * cell
        box.room = room
    stats_h = _stats_lines_reserved(model) * LINE_H
    if side:
        stats_x, stats_y = PAD + area_w + BOX_GAP_X, top
        width = stats_x + STATS_W + PAD
        height = top + max(area_h, stats_h) + PAD
    else:
        stats_x, stats_y = PAD, top + area_h + BOX_GAP_Y
        width = PAD + max(area_w, STATS_W) + PAD
        height = stats_y + stats_h + PAD
    title = " · ".join(s for s in (model.title, model.kernel, model.sizes) if s)
    width = max(width, PAD + _text_w(title, 11) + 30 + _text_w(model.status.upper(), 11) + PAD)
    return Layout(cell, gap, model.boxes, width, height, area_w, area_h, stats_x, stats_y)


# =====================================================================================================
# The model: one run's trace, digested once (the widget re-renders it many times)
# =====================================================================================================


@dataclass
class _Model:
    trace: Trace
    title: str = ""
    kernel: str = ""
    sizes: str = ""
    status: str = ""
    status_map: Any = None  # per output element: 0 right, 1 wrong, 2 never written
    ops: dict[Program, list[Op]] = field(default_factory=dict)
    programs: list[Program] = field(default_factory=list)  # launch order on a GPU: axis 0 fastest
    boxes: dict[str, TensorBox] = field(default_factory=dict)
    stats: Stats | None = None
    layout: Layout | None = None
    offending: list[Program] = field(default_factory=list)
    _overview: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
    _touched: dict[str, np.ndarray] | None = None
    tiles: np.ndarray | None = None  # tile-order puzzles: (TM, TN) launch index of the program per tile, -1 none

    @property
    def output(self) -> str:
        return output_name(self.trace)

    def program_index(self, program: Program | int | tuple[int, ...] | None) -> int:
        if program is None:
            return self.programs.index(self.offending[0]) if self.offending else 0
        if isinstance(program, (int, np.integer)):
            if not 0 <= program < len(self.programs):
                raise ValueError(f"program index {program} is outside 0 … {len(self.programs) - 1}")
            return int(program)
        key = tuple(program) + (0,) * (3 - len(program))
        if key not in self.programs:
            raise ValueError(f"program {tuple(program)} is not in the grid {self.trace.grid}")
        return self.programs.index(key)

    def overview(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per tensor: the first program (launch index) that touched each element, and how many did."""
        if self._overview is None:
            n = len(self.programs)
            hits: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {name: ([], []) for name in self.boxes}
            for i, program in enumerate(self.programs):
                for op in self.ops.get(program, []):
                    for name, elements in op.elements.items():
                        if name in hits:
                            hits[name][0].append(elements)
                            hits[name][1].append(np.full(elements.size, i, np.int64))
            result = {}
            for name, box in self.boxes.items():
                first = np.full(box.numel, n, np.int64)
                count = np.zeros(box.numel, np.int64)
                if hits[name][0]:
                    idx, who = np.concatenate(hits[name][0]), np.concatenate(hits[name][1])
                    np.minimum.at(first, idx, who)
                    pairs = np.unique(idx * n + who)  # each (element, program) once
                    count = np.bincount(pairs // n, minlength=box.numel)
                result[name] = (np.where(first == n, -1, first), count)
            self._overview = result
        return self._overview


def _pick_outcome(result: TestResult) -> SizeOutcome | None:
    """The first failing size that has a trace; else the canonical size (the first)."""
    traced = [o for o in result.outcomes if o.trace is not None]
    failing = [o for o in traced if not o.passed]
    return (failing or traced or [None])[0]


def _model(source: Any, outcome: int | None = None) -> _Model | None:
    """Digest a TestResult, SizeOutcome or Trace (None when there is no trace to draw)."""
    title = kernel = sizes = status = ""
    status_map = None
    size_dict: dict[str, int] = {}
    output = None
    if isinstance(source, _Model):
        return source
    if hasattr(source, "outcomes"):  # a TestResult
        title, kernel = source.puzzle, source.kernel
        source = source.outcomes[outcome] if outcome is not None else _pick_outcome(source)
        if source is None:
            return None
    if hasattr(source, "trace") and not isinstance(source, Trace):  # a SizeOutcome
        sizes, status, status_map = source.size_text(), source.status, source.status_map
        size_dict, output = source.sizes, source.output if source.output is not None else source.expected
        source = source.trace
    if not isinstance(source, Trace):
        return None
    trace = source
    m = _Model(trace, title, kernel, sizes, status, status_map)
    m.ops = program_ops(trace)
    gx, gy, gz = (tuple(trace.grid) + (1, 1, 1))[:3]
    m.programs = [(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)]
    for program in m.ops:  # a trace from elsewhere may name programs outside its grid
        if program not in m.programs:
            m.programs.append(program)
    m.boxes = {name: _box_for(name, shape, dtype) for name, (shape, dtype) in trace.tensors.items()}
    for name, box in m.boxes.items():
        oob = [a for plist in m.ops.values() for op in plist for t, a in op.oob.items() if t == name]
        _set_margins(box, np.concatenate(oob) if oob else np.empty(0, np.int64))
    m.tiles = tile_map(size_dict, output, len(m.programs))
    if m.tiles is not None:
        m.boxes[TILES] = _TileBox.make(m.tiles.shape)
    m.stats = _compute_stats(trace, m.ops)
    m.offending = list(dict.fromkeys(tuple(a.program) for a in [*trace.invalid, *trace.stores_to_inputs]))
    if not m.offending and status_map is not None and np.any(np.asarray(status_map) == 1):
        m.offending = _writers_of(m, int(np.flatnonzero(np.asarray(status_map).reshape(-1) == 1)[0]))
    m.layout = _make_layout(m)
    return m


TILES = "C's tiles"


def tile_map(sizes: dict[str, int], output: Any, programs: int) -> np.ndarray | None:
    """For a tile-order puzzle (z[pid] = (tile_m, tile_n) over a TM × TN grid of C's tiles, as in
    puzzle 16): the (TM, TN) map of which program (launch index) takes each tile, -1 for none.
    None for any other kind of run."""
    if output is None or not {"M", "N", "BM", "BN"} <= set(sizes):
        return None
    tm, tn = -(-sizes["M"] // sizes["BM"]), -(-sizes["N"] // sizes["BN"])
    z = np.asarray(output.detach().cpu()) if hasattr(output, "detach") else np.asarray(output)
    if z.shape != (tm * tn, 2) or programs != tm * tn or z.dtype.kind not in "iu":
        return None
    tiles = np.full((tm, tn), -1, np.int64)
    for pid in range(tm * tn - 1, -1, -1):  # the first program that claims a tile names it
        r, c = int(z[pid, 0]), int(z[pid, 1])
        if 0 <= r < tm and 0 <= c < tn:
            tiles[r, c] = pid
    return tiles


@dataclass
class _TileBox(TensorBox):
    """C's tiles as a grid of K × K cells each (big enough to carry a number), not a tensor."""

    k: int = 3

    @classmethod
    def make(cls, shape: tuple[int, ...]) -> _TileBox:
        tm, tn = shape
        k = 4 if tm * tn <= 24 else 3
        return cls(TILES, (tm, tn), "tile", tm * tn * k * k, tn * k, tm * k, tn * k, k=k)

    def label(self) -> str:
        return f"{TILES}  {self.shape[0]} × {self.shape[1]} (tile_m down, tile_n across)"

    def tile_elements(self, r: int, c: int) -> np.ndarray:
        """The cells of tile (r, c), as the flat indices `cells` maps back."""
        rows, cols = np.meshgrid(np.arange(r * self.k, (r + 1) * self.k), np.arange(c * self.k, (c + 1) * self.k))
        return (rows * self.width + cols).ravel()


def _paint_tiles(model: _Model, paints: dict[str, _Paint], view: str, pi: int) -> list[_Text]:
    """Colour C's tiles (by the program that takes each) and, in the launch-order view, number them."""
    if model.tiles is None or TILES not in paints:
        return []
    box, paint, lay = model.boxes[TILES], paints[TILES], model.layout
    n = len(model.programs)
    texts = []
    for (r, c), who in np.ndenumerate(model.tiles):
        cells = box.tile_elements(r, c)
        if who < 0:
            paint.fill(cells, UNTOUCHED)
            continue
        if view == "order":
            color = order_color(int(who), n)
        elif view == "overview":
            color = program_color(int(who))
        else:
            color = STORE if who == pi else OTHERS
        paint.fill(cells, color)
        side = box.k * lay.cell
        if view == "order" and side >= _text_w(str(who), 7.5) - 2:
            x, y = box.x + (c + 0.5) * side - lay.gap / 2, box.y + (r + 0.5) * side - lay.gap / 2
            texts.append(_Text(float(x), float(y), str(who), size=7.5, halo=True, ha="center", va="center",
                               weight="bold"))
    paint.tile = box.k
    return texts


def _writers_of(m: _Model, element: int) -> list[Program]:
    out = m.output
    return [p for p in m.programs for op in m.ops.get(p, []) if op.op != "load" and out in op.elements
            and np.any(op.elements[out] == element)][:1]


def layout(source: TestResult | SizeOutcome | Trace, outcome: int | None = None) -> Layout:
    """The pixel layout `render_png` uses for this run (for tests and for pointing at cells)."""
    model = _model(source, outcome)
    if model is None:
        raise ValueError("no memory trace to lay out")
    return model.layout


# =====================================================================================================
# Drawing
# =====================================================================================================


def _fade(color: RGB) -> RGB:
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


class _Paint:
    """Cell-level colours of one tensor's grid (top and bottom half, and a centre dot)."""

    def __init__(self, box: TensorBox) -> None:
        self.box = box
        shape = (box.grid_rows, box.grid_cols, 3)
        self.top = np.full(shape, 255, np.uint8)
        self.bottom = np.full(shape, 255, np.uint8)
        self.dot = np.zeros(shape, np.uint8)
        self.has_dot = np.zeros(shape[:2], bool)
        self.tile = 1  # cells per tile side: the white gaps separate tiles, not cells

    def _rc(self, elements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r, c = self.box.cells(elements)
        r, c = r + self.box.top, c + self.box.left
        keep = (r >= 0) & (r < self.box.grid_rows) & (c >= 0) & (c < self.box.grid_cols)
        return r[keep], c[keep]

    def fill(self, elements: np.ndarray, color: RGB | np.ndarray, half: str = "both") -> None:
        r, c = self._rc(elements)
        if half in ("both", "top"):
            self.top[r, c] = color
        if half in ("both", "bottom"):
            self.bottom[r, c] = color

    def mark(self, elements: np.ndarray, color: RGB) -> None:
        r, c = self._rc(elements)
        self.dot[r, c] = color
        self.has_dot[r, c] = True

    def pixels(self, cell: int, gap: int) -> np.ndarray:
        """Expand cells to pixels: split halves, centre dots, white gaps between cells."""
        inner = cell - gap
        img = np.repeat(np.repeat(self.top, cell, 0), cell, 1)
        bottom = np.repeat(np.repeat(self.bottom, cell, 0), cell, 1)
        py = np.arange(img.shape[0]) % cell
        img = np.where((py >= (inner + 1) // 2)[:, None, None], bottom, img)
        if self.has_dot.any() and inner >= 4:
            lo, hi = inner // 2 - max(1, inner // 6), inner // 2 + max(1, inner // 6)
            in_dot = (py >= lo) & (py < hi)
            px = np.arange(img.shape[1]) % cell
            in_dot_x = (px >= lo) & (px < hi)
            dots = np.repeat(np.repeat(self.has_dot, cell, 0), cell, 1) & in_dot[:, None] & in_dot_x[None, :]
            dot_colors = np.repeat(np.repeat(self.dot, cell, 0), cell, 1)
            img[dots] = dot_colors[dots]
        if gap:
            pitch = cell * self.tile
            img[np.arange(img.shape[0]) % pitch >= pitch - gap] = 255
            img[:, np.arange(img.shape[1]) % pitch >= pitch - gap] = 255
        return img


def _all_touched(model: _Model) -> dict[str, np.ndarray]:
    if model._touched is None:
        model._touched = {name: count > 0 for name, (_, count) in model.overview().items()}
    return model._touched


def _paint_program(model: _Model, pi: int, op_index: int | None) -> dict[str, _Paint]:
    program = model.programs[pi]
    plist = model.ops.get(program, [])
    paints = {}
    touched = _all_touched(model)
    for name, box in model.boxes.items():
        p = _Paint(box)
        p.fill(np.arange(box.numel), UNTOUCHED)
        p.fill(np.flatnonzero(touched[name]), OTHERS)
        paints[name] = p
    if op_index is None:
        passes = [(plist, False)]
    else:
        passes = [(plist[:op_index], True), (plist[op_index : op_index + 1], False)]
    for ops, faded in passes:
        f = _fade if faded else (lambda c: c)
        for name, paint in paints.items():
            loaded = [op.elements[name] for op in ops if op.op == "load" and name in op.elements]
            stored = [op.elements[name] for op in ops if op.op == "store" and name in op.elements]
            atomic = [op.elements[name] for op in ops if op.op == "atomic" and name in op.elements]
            bad = [a for op in ops for t, a in [*op.oob.items(), *op.into_input.items()] if t == name]
            lset = np.unique(np.concatenate(loaded)) if loaded else np.empty(0, np.int64)
            sset = np.unique(np.concatenate(stored)) if stored else np.empty(0, np.int64)
            both = np.intersect1d(lset, sset)
            paint.fill(lset, f(LOAD))
            paint.fill(sset, f(STORE))
            paint.fill(both, f(LOAD), "top")  # loaded and stored: top half load, bottom half store
            for a in atomic:
                paint.fill(a, f(ATOMIC))
            for a in bad:
                paint.fill(a, f(OUT_OF_BOUNDS))
    _mark_wrong(model, paints)
    return paints


def _mark_wrong(model: _Model, paints: dict[str, _Paint]) -> None:
    if model.status_map is None:
        return
    status = np.asarray(model.status_map).reshape(-1)
    out = model.output
    if out in paints and status.size == paints[out].box.numel:
        paints[out].mark(np.flatnonzero(status == 1), WRONG_DOT)


def _paint_overview(model: _Model, order: bool) -> dict[str, _Paint]:
    paints = {}
    n = len(model.programs)
    palette = np.array([order_color(i, n) if order else program_color(i) for i in range(n)], np.uint8)
    bad = {}
    for plist in model.ops.values():
        for op in plist:
            for t, a in [*op.oob.items(), *op.into_input.items()]:
                bad.setdefault(t, []).append(a)
    for name, (first, count) in model.overview().items():
        box = model.boxes[name]
        p = _Paint(box)
        p.fill(np.arange(box.numel), UNTOUCHED)
        hit = np.flatnonzero(first >= 0)
        p.fill(hit, palette[first[hit]])
        if not order:  # the order view stays plain: its colours already say which program came first
            p.mark(np.flatnonzero(count > 1), SHARED_DOT)
        for a in bad.get(name, []):
            p.fill(a, OUT_OF_BOUNDS)
        paints[name] = p
    _mark_wrong(model, paints)
    return paints


@dataclass
class _Text:
    x: float
    y: float
    s: str
    color: str = "#222222"
    size: float = 8.5
    mono: bool = False
    weight: str = "normal"
    halo: bool = False
    ha: str = "left"
    va: str = "top"


def _draw(model: _Model, view: str, pi: int, op_index: int | None) -> tuple[np.ndarray, list[_Text]]:
    lay = model.layout
    canvas = np.full((lay.height, lay.width, 3), 255, np.uint8)
    texts: list[_Text] = []
    if view == "program":
        paints = _paint_program(model, pi, op_index)
    else:
        paints = _paint_overview(model, order=view == "order")
    tile_texts = _paint_tiles(model, paints, view, pi)
    for name, paint in paints.items():
        box = paint.box
        img = paint.pixels(lay.cell, lay.gap)
        x0, y0 = box.x - box.left * lay.cell, box.y - box.top * lay.cell
        h, w = img.shape[:2]
        h, w = min(h, lay.height - y0), min(w, lay.width - x0)
        canvas[y0 : y0 + h, x0 : x0 + w] = img[:h, :w]
        texts.append(_Text(x0, y0 - LABEL_H + 2, box.label(), weight="bold"))
        note, color = _tensor_note(model, view, pi, op_index, name)
        label_w = _text_w(box.label())
        while note and label_w + 8 + _text_w(note, bold=False) > box.room:
            note = note.rpartition(" · ")[0]  # drop details that do not fit; the stats panel has them
        if note:
            texts.append(_Text(x0 + label_w + 8, y0 - LABEL_H + 2, note, color=color))
    texts += tile_texts
    if view != "program":
        texts += _program_labels(model, view == "order")
    _header(model, view, pi, op_index, canvas, texts)
    texts += _stats_text(model, view, pi, op_index)
    return canvas, texts


def _tensor_note(model: _Model, view: str, pi: int, op_index: int | None, name: str) -> tuple[str, str]:
    """What the shown ops did to one tensor; masked-off lanes have no address, so they are a count."""
    if view != "program":
        _, count = model.overview()[name]
        most = int(count.max()) if count.size else 0
        return (f"up to {most} programs touch one element", "#555555") if most > 1 else ("", "")
    plist = model.ops.get(model.programs[pi], [])
    ops = plist if op_index is None else plist[op_index : op_index + 1]
    ops = [op for op in ops if name in op.tensors]
    if not ops:
        return "", ""
    parts = []
    for kind, verb in (("load", "loaded"), ("store", "stored"), ("atomic", "atomic")):
        hits = [op.elements[name] for op in ops if op.op == kind and name in op.elements]
        lanes = sum(h.size for h in hits)
        distinct = np.unique(np.concatenate(hits)).size if hits else 0
        if lanes:
            parts.append(f"{verb} {distinct}" + (f" ({lanes} lanes: re-reads)" if lanes > distinct else ""))
    masked = sum(op.masked for op in ops)
    if masked:
        parts.append(f"{masked} lanes masked off")
    oob = [op.oob[name] for op in ops if name in op.oob]
    if oob:
        lanes = np.concatenate(oob)
        far = int((~model.boxes[name].drawn(lanes)).sum())
        parts.append(f"{lanes.size} out of bounds" + (f" ({far} too far out to draw)" if far else ""))
    offending = oob or any(name in op.into_input for op in ops)
    return " · ".join(parts), "#c62828" if offending else "#1f4e79"


def _program_labels(model: _Model, order: bool) -> list[_Text]:
    """Name each program at the centre of the output cells it stored (tiling at a glance)."""
    lay, out = model.layout, model.output
    box = model.boxes[out]
    if len(model.programs) > 64:
        return []
    grid = model.trace.grid
    axes = [k for k in range(3) if grid[k] > 1] or [0]
    labels = []
    for i, program in enumerate(model.programs):
        written = [op.elements[out] for op in model.ops.get(program, []) if op.op != "load" and out in op.elements]
        if not written:
            continue
        r, c = box.cells(np.unique(np.concatenate(written)))
        xs, ys = lay.cell_origin(box, r, c)
        text = f"#{i}" if order else ",".join(str(program[k]) for k in axes)
        if xs.max() - xs.min() + lay.cell < _text_w(text, 7.5) or ys.max() - ys.min() + lay.cell < 11:
            continue  # the tile is smaller than its name
        x, y = float(xs.mean() + lay.cell / 2), float(ys.mean() + lay.cell / 2)
        if any(abs(x - t.x) < 14 and abs(y - t.y) < 10 for t in labels):
            continue  # several programs wrote this tile (split-K): the first one names it, as it colours it
        labels.append(_Text(x, y, text, size=7.5, halo=True, ha="center", va="center", weight="bold"))
    return labels


def _program_name(program: Program) -> str:
    return f"({program[0]}, {program[1]}, {program[2]})"


def _header(model: _Model, view: str, pi: int, op_index: int | None, canvas: np.ndarray,
            texts: list[_Text]) -> None:
    ok = model.status == "passed"
    verdict = model.status.upper() if model.status else ""
    parts = [s for s in (model.title, model.kernel, model.sizes) if s]
    texts.append(_Text(PAD, PAD, " · ".join(parts) or "memory accesses", size=11, weight="bold"))
    if verdict:
        texts.append(_Text(model.layout.width - PAD, PAD, verdict, size=11, weight="bold",
                           color="#2e7d32" if ok else "#c62828", ha="right"))
    grid = "×".join(str(g) for g in model.trace.grid)
    program = model.programs[pi]
    plist = model.ops.get(program, [])
    if view == "program":
        if op_index is None:
            what = f"program {_program_name(program)} of grid {grid} · all {len(plist)} ops"
        else:
            op = plist[op_index]
            what = f"program {_program_name(program)} · step {op_index + 1}/{len(plist)}: " \
                   f"{op.describe()}"
        legend = [(LOAD, "loaded"), (STORE, "stored"), (OTHERS, "other programs"), (UNTOUCHED, "untouched"),
                  (OUT_OF_BOUNDS, "out of bounds")]
        if any(op.op == "atomic" for ops in model.ops.values() for op in ops):
            legend.insert(2, (ATOMIC, "atomic"))
        if op_index is not None:
            legend.append((_fade(LOAD), "earlier steps"))
    elif view == "overview":
        what = f"overview: each element coloured by the program that touched it first · grid {grid} " \
               f"({len(model.programs)} programs)"
        legend = [(program_color(0), "program 0"), (program_color(1), "program 1"), (SHARED_DOT, "• several"),
                  (UNTOUCHED, "untouched"), (OUT_OF_BOUNDS, "out of bounds")]
    else:
        what = f"launch order on a GPU (axis 0 fastest): #0 first … #{len(model.programs) - 1} last · grid {grid}"
        if model.tiles is not None:
            what = f"launch order: C's tiles numbered by the program that takes each (0 first, " \
                   f"{len(model.programs) - 1} last) · grid {grid}"
        n = len(model.programs)
        legend = [(order_color(0, n), "#0 first"), (order_color(n - 1, n), f"#{n - 1} last"),
                  (UNTOUCHED, "untouched"), (OUT_OF_BOUNDS, "out of bounds")]
    texts.append(_Text(PAD, PAD + 22, what[:170], size=9, color="#333333"))
    x, y = PAD, PAD + 44
    for color, label in legend:  # swatches drawn in pixels, so their colours are exact
        canvas[y + 2 : y + 13, x : x + 11] = color
        if label.startswith("•"):
            canvas[y + 2 : y + 13, x : x + 11] = program_color(0)
            canvas[y + 5 : y + 10, x + 3 : x + 8] = SHARED_DOT
            label = label[1:].strip()
        texts.append(_Text(x + 15, y, label, size=8.5))
        x += 15 + _text_w(label, bold=False) + 12
    if model.status_map is not None and np.any(np.asarray(model.status_map) == 1):
        canvas[y + 2 : y + 13, x : x + 11] = UNTOUCHED
        canvas[y + 5 : y + 10, x + 3 : x + 8] = WRONG_DOT
        texts.append(_Text(x + 15, y, "wrong value", size=8.5))


def _stats_text(model: _Model, view: str, pi: int, op_index: int | None) -> list[_Text]:
    st, lay = model.stats, model.layout
    program = model.programs[pi]
    mine = st.per_program.get(program, Counts())
    total = st.total
    red, grey = "#c62828", "#555555"
    lines: list[tuple[str, str]] = []
    n = len(model.programs)

    def row(label: str, a: str, b: str, color: str = "#222222") -> None:
        lines.append((f"{label:<17}{a:>15}  {b:>16}", color))

    if view == "program":
        row("", f"program {program[0]},{program[1]},{program[2]}", f"all {n} programs", grey)
    else:
        row("", "", f"all {n} programs", grey)

    def pair(get: Any) -> tuple[str, str]:
        return (get(mine) if view == "program" else ""), get(total)

    row("load ops", *pair(lambda c: str(c.loads)))
    row("store ops", *pair(lambda c: str(c.stores)))
    if total.atomics:
        row("atomic ops", *pair(lambda c: str(c.atomics)))
    row("bytes loaded", *pair(lambda c: _fmt_bytes(c.bytes_loaded)))
    row("bytes stored", *pair(lambda c: _fmt_bytes(c.bytes_stored)))
    row("lanes masked off", *pair(lambda c: _pct(c.masked, c.lanes)))
    if total.out_of_bounds:
        row("out-of-bounds", *pair(lambda c: str(c.out_of_bounds)), color=red)
    lines.append(("", ""))
    if view == "program":
        lines.append((f"{'by tensor':<17}{'this program':>12} {'all programs':>14} {'× size':>7}", grey))
    else:
        lines.append((f"{'by tensor':<17}{'':>12} {'all programs':>14} {'× size':>7}", grey))
    for name, size in st.tensor_bytes.items():
        verb = "write" if name == st.output else "read"
        moved = total.read.get(name, 0) + total.written.get(name, 0)
        here = mine.read.get(name, 0) + mine.written.get(name, 0)
        ratio = moved / size if size else 0
        color = red if ratio > 1.001 else "#222222"
        here_text = _fmt_bytes(here) if view == "program" else ""
        lines.append((f"{name[:10]:<10} {verb:<5} {here_text:>12} {_fmt_bytes(moved):>14} {ratio:>6.2f}×", color))
    lines.append(("", ""))
    lines.append((f"fewest bytes the puzzle needs {_fmt_bytes(st.min_bytes):>16}", "#222222"))
    lines.append(("  (each input read once, the output written once)", grey))
    lines.append((f"this run moved {_fmt_bytes(total.bytes_moved):>31}", "#222222"))
    lines.append((f"  = {st.ratio:.2f}× the fewest" + ("  (re-reads)" if st.ratio > 1.001 else ""),
                  red if st.ratio > 1.001 else grey))
    lines.append(("", ""))
    if view == "program":
        plist = model.ops.get(program, [])
        lines.append((f"ops of program {program[0]},{program[1]},{program[2]} ({len(plist)}):", grey))
        current = op_index if op_index is not None else 0
        start = max(0, min(current - MAX_OPS_LISTED // 2, len(plist) - MAX_OPS_LISTED))
        for i in range(start, min(len(plist), start + MAX_OPS_LISTED)):
            op = plist[i]
            mark = ">" if op_index == i else " "
            names = ",".join(op.tensors)[:8] or "-"
            oob = f" {op.oob_lanes} OOB" if op.oob_lanes else ""
            line = f"L{op.line or '?'}"
            text = f"{mark}{i + 1:>3} {op.op:<6} {names:<8} {line:<5} {op.lanes:>4} lanes {op.masked:>3} masked{oob}"
            lines.append((text, red if oob else "#222222"))
        if len(plist) > MAX_OPS_LISTED:
            lines.append((f"     … {len(plist)} ops in all", grey))
    else:
        lines.append(("program      loads stores      bytes  masked", grey))
        for program in model.programs[:MAX_PROGRAMS_LISTED]:
            c = st.per_program.get(program, Counts())
            name = f"{program[0]},{program[1]},{program[2]}"
            frac = f"{100 * c.masked_fraction:.0f}%"
            lines.append((f"{name:<12}{c.loads:>6}{c.stores + c.atomics:>7}{c.bytes_moved:>11,}{frac:>8}",
                          red if c.out_of_bounds else "#222222"))
        if n > MAX_PROGRAMS_LISTED:
            lines.append((f"… {n - MAX_PROGRAMS_LISTED} more programs", grey))
    return [_Text(lay.stats_x, lay.stats_y + i * LINE_H, s, color=c, mono=True, size=STATS_PT)
            for i, (s, c) in enumerate(lines) if s]


class _Fonts:
    """Text through matplotlib's FreeType, rasterised once per string and cached.

    Drawing through Figure.text costs ~5 ms a string; the widget redraws the same labels on
    every step, so cached bitmaps keep a render well under the 0.5 s budget.
    """

    def __init__(self) -> None:
        self._fonts: dict[tuple[bool, bool], Any] = {}
        self._cache: dict[tuple[str, float, bool, bool], tuple[np.ndarray, int]] = {}

    def _font(self, bold: bool, mono: bool) -> Any:
        key = (bold, mono)
        if key not in self._fonts:
            from matplotlib import font_manager
            from matplotlib.ft2font import FT2Font

            props = font_manager.FontProperties(family="DejaVu Sans Mono" if mono else "DejaVu Sans",
                                                weight="bold" if bold else "normal")
            self._fonts[key] = FT2Font(font_manager.findfont(props))
        return self._fonts[key]

    def bitmap(self, s: str, size: float, bold: bool = False, mono: bool = False) -> tuple[np.ndarray, int]:
        """(coverage 0..255, row of the bitmap's top below the line's top)."""
        key = (s, size, bold, mono)
        if key not in self._cache:
            try:
                from matplotlib.ft2font import LoadFlags

                flags = LoadFlags.FORCE_AUTOHINT
            except ImportError:  # matplotlib < 3.10 (an older Colab image)
                from matplotlib.ft2font import LOAD_FORCE_AUTOHINT as flags

            font = self._font(bold, mono)
            font.set_size(size, DPI)
            font.set_text(s, 0.0, flags=flags)
            font.draw_glyphs_to_bitmap(antialiased=True)
            img = np.asarray(font.get_image()).copy()
            ascent = round(font.ascender / font.units_per_EM * size * DPI / 72)
            descent = round(font.get_descent() / 64)
            if len(self._cache) > 4000:  # a long session: start over rather than grow
                self._cache.clear()
            self._cache[key] = (img, ascent - (img.shape[0] - descent))
        return self._cache[key]

    def width(self, s: str, size: float = 8.5, bold: bool = False, mono: bool = False) -> int:
        return self.bitmap(s, size, bold, mono)[0].shape[1]


_FONTS = _Fonts()


def _hex_rgb(color: str) -> np.ndarray:
    return np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)], np.float32)


def _blit(canvas: np.ndarray, t: _Text) -> None:
    """Blend one text into the canvas (with a white halo when asked, for labels over cells)."""
    img, top = _FONTS.bitmap(t.s, t.size, t.weight == "bold", t.mono)
    h, w = img.shape
    x = int(round(t.x - (w / 2 if t.ha == "center" else w if t.ha == "right" else 0)))
    y = int(round(t.y - h / 2 if t.va == "center" else t.y + top))
    x0, y0, x1, y1 = max(0, x), max(0, y), min(canvas.shape[1], x + w), min(canvas.shape[0], y + h)
    if x0 >= x1 or y0 >= y1:
        return
    alpha = img[y0 - y : y1 - y, x0 - x : x1 - x].astype(np.float32)[..., None] / 255
    region = canvas[y0:y1, x0:x1].astype(np.float32)
    if t.halo:  # a 1-pixel white outline: the alpha dilated by one pixel in every direction
        a = alpha[..., 0]
        grown = a.copy()
        grown[1:] = np.maximum(grown[1:], a[:-1])
        grown[:-1] = np.maximum(grown[:-1], a[1:])
        grown[:, 1:] = np.maximum(grown[:, 1:], grown[:, :-1])
        grown[:, :-1] = np.maximum(grown[:, :-1], grown[:, 1:])
        region = region * (1 - grown[..., None]) + 255 * grown[..., None]
    region = region * (1 - alpha) + _hex_rgb(t.color) * alpha
    canvas[y0:y1, x0:x1] = np.clip(region + 0.5, 0, 255).astype(np.uint8)


def _picture(model: _Model, view: str, program: Program | int | None, op_index: int | None) -> np.ndarray:
    """The finished picture as an (height, width, 3) uint8 array."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, not {view!r}")
    pi = model.program_index(program)
    n_ops = len(model.ops.get(model.programs[pi], []))
    if op_index is not None and not 0 <= op_index < n_ops:
        raise ValueError(f"op_index {op_index} is outside this program's {n_ops} ops")
    canvas, texts = _draw(model, view, pi, op_index)
    for t in texts:
        _blit(canvas, t)
    return canvas


def _require(source: Any, outcome: int | None) -> _Model:
    model = _model(source, outcome)
    if model is None:
        raise ValueError("no memory trace to draw: the kernel did not run in Triton's interpreter "
                         "(or failed before it ran); set TRITON_INTERPRET=1")
    return model


def render_figure(source: TestResult | SizeOutcome | Trace, program: Program | int | None = None,
                  op_index: int | None = None, *, view: str = "program", outcome: int | None = None) -> Figure:
    """The picture as a matplotlib Figure (Agg; never shown on screen), pixel for pixel. See `render_png`."""
    from matplotlib.figure import Figure

    canvas = _picture(_require(source, outcome), view, program, op_index)
    fig = Figure(figsize=(canvas.shape[1] / DPI, canvas.shape[0] / DPI), dpi=DPI, facecolor="white")
    fig.figimage(canvas, 0, 0, origin="upper")  # no axes, no resampling
    return fig


def render_png(source: TestResult | SizeOutcome | Trace, path: str | Path | None = None,
               program: Program | int | None = None, op_index: int | None = None, *, view: str = "program",
               outcome: int | None = None) -> bytes:
    """Draw one run's memory accesses as PNG bytes (and write them to `path` if given).

    source: a TestResult (its first failing size, else its canonical size; `outcome` picks another),
        a SizeOutcome, or a Trace.
    program: a program id (tuple) or its launch index; default the first offending program, else 0.
    op_index: show that program's ops up to this one (0-based; earlier ones faded); None shows all.
    view: "program" (one program's loads and stores), "overview" (each element coloured by the
        program that touched it) or "order" (programs coloured by launch order).
    """
    from PIL import Image  # matplotlib's own PNG writer is Pillow

    canvas = _picture(_require(source, outcome), view, program, op_index)
    buf = io.BytesIO()
    Image.fromarray(canvas).save(buf, format="png", compress_level=3)
    png = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(png)
    return png


# =====================================================================================================
# Text: the stats table for a terminal
# =====================================================================================================


def stats_table(source: TestResult | SizeOutcome | Trace, max_programs: int = 32) -> str:
    """Per program and in total: ops, bytes, masked lanes, and the fewest bytes the puzzle needs."""
    model = _model(source)
    if model is None:
        return "no memory trace (the kernel did not run in Triton's interpreter)"
    st = model.stats
    head = " · ".join(s for s in (model.title, model.kernel, model.sizes, model.status) if s)
    lines = [head, f"grid {model.trace.grid}, {len(model.programs)} programs"] if head else []
    lines.append(f"{'program':<14} {'loads':>6} {'stores':>6} {'atomics':>7} {'bytes in':>11} {'bytes out':>11} "
                 f"{'masked off':>18} {'OOB lanes':>9}")

    def row(name: str, c: Counts) -> str:
        return (f"{name:<14} {c.loads:>6} {c.stores:>6} {c.atomics:>7} {c.bytes_loaded:>11,} {c.bytes_stored:>11,} "
                f"{_pct(c.masked, c.lanes):>18} {c.out_of_bounds:>9}")

    for program in model.programs[:max_programs]:
        lines.append(row(str(program), st.per_program.get(program, Counts())))
    if len(model.programs) > max_programs:
        lines.append(f"... {len(model.programs) - max_programs} more programs")
    lines.append(row("total", st.total))
    parts = ", ".join(f"{n} {b:,}" for n, b in st.tensor_bytes.items())
    lines.append(f"fewest bytes the puzzle needs: {st.min_bytes:,} (each tensor once: {parts}); "
                 f"this run moved {st.total.bytes_moved:,} = {st.ratio:.2f}x")
    for bad in [*model.trace.invalid, *model.trace.stores_to_inputs][:8]:
        lines.append(f"offending: {bad.describe()}")
    return "\n".join(lines)


# =====================================================================================================
# Files: the grading command's --viz DIR
# =====================================================================================================


def save_pngs(result: TestResult, directory: str | Path, max_programs: int = 8) -> list[Path]:
    """Write the overview, the launch order and a few programs' pictures; return the paths written.

    The programs drawn are the offending ones first, then the first and the last, up to
    `max_programs`. Nothing is written when the run has no trace (a GPU run, a signature error).
    """
    model = _model(result)
    if model is None:
        return []
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for view, name in (("overview", "overview.png"), ("order", "launch-order.png")):
        if view == "order" and len(model.programs) < 2:
            continue
        render_png(model, out / name, view=view)
        written.append(out / name)
    chosen = list(dict.fromkeys([*model.offending, model.programs[0], model.programs[-1], *model.programs]))
    for program in chosen[:max_programs]:
        path = out / f"program-{program[0]}-{program[1]}-{program[2]}.png"
        render_png(model, path, program=program)
        written.append(path)
    return written


# =====================================================================================================
# Jupyter: the interactive view, with a static picture for viewers that cannot run widgets
# =====================================================================================================


def _frontend() -> str:
    """"kernel" inside Jupyter (Lab, Notebook, Colab, VS Code), "ipython" in a terminal IPython, else "terminal"."""
    try:
        from IPython import get_ipython
    except ImportError:
        return "terminal"
    shell = get_ipython()
    if shell is None:
        return "terminal"
    return "kernel" if getattr(shell, "kernel", None) is not None else "ipython"


class _WithFallback:
    """A widget whose output also carries a PNG: JupyterLab draws the widget (its renderer ranks
    first); nbviewer, GitHub and frontends without widget support draw the picture instead."""

    def __init__(self, widget: Any, png: bytes, text: str) -> None:
        self.widget, self.png, self.text = widget, png, text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        data = dict(self.widget._repr_mimebundle_())
        data["image/png"] = base64.b64encode(self.png).decode("ascii")
        data["text/plain"] = self.text
        return data


def quantization_track(puzzle: Puzzle | None) -> bool:
    """The quantization track: the puzzles after the twelve classic ones (13: pack int4, and on)."""
    return puzzle is not None and getattr(puzzle, "number", 0) > 12


def widget(result: TestResult, puzzle: Puzzle | None = None, program: Program | int | None = None) -> Any:
    """The interactive view: size, program, step through its ops, overview and launch order.

    The picture is the same PNG `render_png` makes, in an ipywidgets.Image (in the last child, a
    frame that scrolls sideways rather than shrink it).
    """
    import ipywidgets as w

    traced = [i for i, o in enumerate(result.outcomes) if o.trace is not None]
    if not traced:
        raise ValueError("no memory trace to draw")
    models: dict[int, _Model] = {}

    def model_for(i: int) -> _Model:
        if i not in models:
            models[i] = _require(result, i)
        return models[i]

    start = result.outcomes.index(_pick_outcome(result))
    m = model_for(start)
    views = [("one program", "program"), ("overview", "overview"), ("launch order", "order")]
    view = w.ToggleButtons(options=views, value="program", style={"button_width": "110px"})
    size = w.Dropdown(options=[(f"{result.outcomes[i].size_text()} · {result.outcomes[i].status}", i) for i in traced],
                      value=start, description="size", layout=w.Layout(width="auto"))
    prog = w.IntSlider(min=0, max=max(0, len(m.programs) - 1), value=m.program_index(program),
                       description="program", continuous_update=False, layout=w.Layout(width="420px"))
    prog_label = w.Label()
    step = w.IntSlider(min=0, max=0, value=0, description="step", continuous_update=False,
                       layout=w.Layout(width="420px"))
    play = w.Play(min=0, max=0, interval=900, description="play the steps")
    w.jslink((play, "value"), (step, "value"))  # in the browser: playing needs no round trip
    step_label = w.Label()
    note = w.HTML()
    # flex-start: a column flexbox would stretch the picture to the cell width and blur it
    # Shown at its own pixel size, never shrunk to the cell's width (which made the stats text
    # tiny): a picture wider than the cell scrolls sideways in its frame.
    image = w.Image(format="png", layout=w.Layout(max_width="none", width="auto", height="auto",
                                                  align_self="flex-start", flex="0 0 auto"))
    frame = w.Box([image], layout=w.Layout(overflow="auto", width="100%"))
    hint = ("<i>Quantization track: the launch order shows which programs a GPU runs together, "
            "and so which packed weight and activation tiles they can share in cache.</i>")
    busy = {"on": False}  # setting one control from another must not redraw twice

    def refresh(*_: Any) -> None:
        if busy["on"]:
            return
        busy["on"] = True
        try:
            model = model_for(size.value)
            prog.max = max(0, len(model.programs) - 1)
            program_id = model.programs[prog.value]
            n_ops = len(model.ops.get(program_id, []))
            step.max = play.max = n_ops
            if step.value > n_ops:
                step.value = 0
            prog_label.value = f"{program_id} of grid {tuple(model.trace.grid)}"
            step_label.value = "0 = all ops" if step.value == 0 else f"op {step.value} of {n_ops}"
            is_program = view.value == "program"
            for c in (prog, prog_label, step, play, step_label):
                c.layout.visibility = "visible" if is_program else "hidden"
            op_index = step.value - 1 if step.value else None
            image.value = render_png(model, program=prog.value, op_index=op_index, view=view.value)
            note.value = hint if view.value == "order" and quantization_track(puzzle) else ""
        except Exception as err:  # noqa: BLE001 - say it in the widget, not in a hidden log
            note.value = f"<b>could not draw:</b> {type(err).__name__}: {err}"
        finally:
            busy["on"] = False

    def new_size(change: Any) -> None:
        model = model_for(change["new"])
        busy["on"] = True
        try:
            prog.max = max(0, len(model.programs) - 1)
            prog.value = model.program_index(None)
            step.value = 0
        finally:
            busy["on"] = False
        refresh()

    size.observe(new_size, names="value")
    for control in (view, prog, step):
        control.observe(refresh, names="value")
    refresh()
    rows = [w.HBox([view, size]), w.HBox([prog, prog_label]), w.HBox([step, play, step_label]), note, frame]
    box = w.VBox(rows, layout=w.Layout(width="100%"))
    box.add_class("puzzles-viz")
    return box


def show(result: TestResult, puzzle: Puzzle | None = None) -> None:
    """Show the memory accesses under the verdict; never raises, never blocks.

    Jupyter with ipywidgets: the interactive view (its output also carries the PNG, for
    frontends without a widget renderer); Jupyter without ipywidgets: the static picture;
    a terminal: the stats table. PUZZLES_VIZ=static shows only the picture (a notebook to be
    read on nbviewer or GitHub, which draw no widget without saved widget state).
    """
    try:
        model = _model(result)
        if model is None:
            print(_no_trace_reason(result))
            return
        if _frontend() != "kernel":
            print(stats_table(model))
            print("(pictures: puzzles.viz.render_png(result, 'accesses.png') or save_pngs(result, 'viz/'))")
            return
        from IPython.display import Image, display

        if os.environ.get("PUZZLES_VIZ", "").lower() == "static":
            display(Image(render_png(model)))
            return
        _enable_colab_widgets()
        try:
            view = widget(result, puzzle)
        except Exception:  # noqa: BLE001 - no ipywidgets (or a broken install): the picture alone
            display(Image(render_png(model)))
            return
        display(_WithFallback(view, view.children[-1].children[0].value, stats_table(model)))
    except Exception as err:  # noqa: BLE001 - a drawing problem must not hide the verdict
        print(f"(could not draw the memory accesses: {type(err).__name__}: {err})")


def _enable_colab_widgets() -> None:
    """Colab draws ipywidgets 8 only through its custom widget manager; turn it on (a no-op elsewhere)."""
    if "google.colab" not in sys.modules:
        return
    try:
        from google.colab import output

        output.enable_custom_widget_manager()
    except Exception:  # noqa: BLE001 - an older Colab: the PNG in the same output still shows
        pass


def _no_trace_reason(result: Any) -> str:
    if getattr(result, "error", None) is not None:
        return "no memory accesses to draw: the kernel did not run (see the verdict above)"
    return ("no memory accesses to draw: they are recorded only when kernels run in Triton's interpreter "
            "(TRITON_INTERPRET=1, the default without a GPU)")


# =====================================================================================================
# triton-viz's own 3-D viewer (optional)
# =====================================================================================================

_servers: dict[int, Any] = {}


def launch_triton_viz(kernel: Any, *args: Any, grid: tuple[int, ...] = (1,), port: int = 5001,
                      **kwargs: Any) -> str | None:
    """Run `kernel[grid](*args, **kwargs)` under triton-viz and serve its viewer on 127.0.0.1:port.

    The server runs in a background thread (the notebook stays usable) and never opens
    triton-viz's Cloudflare tunnel. Its page loads three.js from a CDN (esm.sh), so it renders
    only with internet access; `render_png`/`show` work offline. Returns the URL, or None with
    a message when triton-viz is missing or the run fails. port=0 picks a free port.
    """
    try:
        import logging

        import triton_viz
        from triton_viz.visualizer import interface
        from werkzeug.serving import make_server
    except Exception as err:  # noqa: BLE001 - optional extra
        print(f"triton-viz is not available ({type(err).__name__}: {err}); "
              "install it with: pip install triton-viz==3.0")
        return None
    try:
        triton_viz.clear()  # show this launch only
        traced = triton_viz.trace("tracer")(kernel)
        traced[tuple(grid)](*args, **kwargs)
        stop_triton_viz(port)
        # werkzeug's dev server, as triton_viz.launch(share=False) uses, but bound to 127.0.0.1 and
        # served from a daemon thread: launch() itself would block the notebook.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        server = make_server("127.0.0.1", port, interface.app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, name="triton-viz", daemon=True)
        thread.start()
        actual = server.server_port
        _servers[actual] = server
        interface._server_state.set_local_port(actual)
    except Exception as err:  # noqa: BLE001 - the learner's kernel or a busy port
        print(f"could not start triton-viz: {type(err).__name__}: {err}")
        return None
    url = f"http://127.0.0.1:{actual}/"
    print(f"triton-viz is serving {url} (stop it with puzzles.viz.stop_triton_viz({actual})).\n"
          "Its page loads three.js from a CDN (esm.sh): it renders only with internet access. "
          "Offline, use puzzles.viz.show(result) or render_png(result).")
    return url


def stop_triton_viz(port: int | None = None) -> None:
    """Stop the viewer started by `launch_triton_viz` on this port (every one when None)."""
    for p in [port] if port is not None else list(_servers):
        server = _servers.pop(p, None)
        if server is not None:
            server.shutdown()
            server.server_close()


__all__ = [
    "Counts", "Layout", "Op", "Stats", "TensorBox", "VIEWS", "launch_triton_viz", "layout", "program_ops",
    "quantization_track",
    "render_figure", "render_png", "save_pngs", "show", "stats", "stats_table", "stop_triton_viz", "widget",
]
