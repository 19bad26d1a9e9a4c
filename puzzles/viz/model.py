"""One run's trace, digested once (the widget re-renders it many times): its programs in launch
order, their ops, the tensors' boxes, the numbers and the layout.

What is particular to a puzzle comes from its `Puzzle` record, passed in by the caller: the view
sizes of its strided inputs (for the fewest bytes) and its tile order (C's tiles in launch order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from puzzles.running.recording import Trace
from puzzles.viz.accesses import Op, Stats, compute_stats, output_name, program_ops
from puzzles.viz.launch_order import TILES, TileBox, tile_map
from puzzles.viz.layout import Layout, TensorBox, box_for, make_layout, stats_lines
from puzzles.viz.style import Program

if TYPE_CHECKING:  # imported lazily at run time: the viz must not slow down `import puzzles`
    from puzzles.course.puzzle import Puzzle
    from puzzles.grading.result import SizeOutcome, TestResult

Source = Any  # a TestResult, a SizeOutcome, a Trace, or a Model already digested


@dataclass
class Model:
    """One run, ready to draw: what `digest` makes of a TestResult, SizeOutcome or Trace."""

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
    tiles: np.ndarray | None = None  # tile-order puzzles: (TM, TN) launch index of the program per tile, -1 none
    _overview: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
    _touched: dict[str, np.ndarray] | None = None

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

    def touched(self) -> dict[str, np.ndarray]:
        """Per tensor: which elements some program touched."""
        if self._touched is None:
            self._touched = {name: count > 0 for name, (_, count) in self.overview().items()}
        return self._touched


def pick_outcome(result: TestResult) -> SizeOutcome | None:
    """The first failing size that has a trace; else the canonical size (the first)."""
    traced = [o for o in result.outcomes if o.trace is not None]
    failing = [o for o in traced if not o.passed]
    return (failing or traced or [None])[0]


def _view_numel(puzzle: Puzzle | None, sizes: dict[str, int]) -> dict[str, int]:
    """Elements of the view of each of the puzzle's strided inputs (their storage holds gaps too)."""
    if puzzle is None or not puzzle.strided_inputs or not sizes:
        return {}
    from puzzles.course.spec import spec_signature

    inputs, _ = spec_signature(puzzle.spec)
    return {t.name: math.prod(t.shape(sizes)) for t in inputs if t.name in puzzle.strided_inputs}


def digest(source: Source, outcome: int | None = None, *, puzzle: Puzzle | None = None) -> Model | None:
    """Digest a TestResult, SizeOutcome or Trace (None when there is no trace to draw).

    outcome: which size of a TestResult (default: its first failing size with a trace, else the first).
    puzzle: the run's puzzle, whose records say what is particular to it (strided inputs count
        their view in the fewest bytes; a tile order draws C's tiles); None draws the run as it is.
    """
    title = kernel = sizes = status = ""
    status_map = None
    size_dict: dict[str, int] = {}
    output = None
    if isinstance(source, Model):
        return source
    if hasattr(source, "outcomes"):  # a TestResult
        title, kernel = source.puzzle, source.kernel
        source = source.outcomes[outcome] if outcome is not None else pick_outcome(source)
        if source is None:
            return None
    if hasattr(source, "trace") and not isinstance(source, Trace):  # a SizeOutcome
        sizes, status, status_map = source.size_text(), source.status, source.status_map
        size_dict, output = source.sizes, source.output if source.output is not None else source.expected
        source = source.trace
    if not isinstance(source, Trace):
        return None
    trace = source
    m = Model(trace, title, kernel, sizes, status, status_map)
    m.ops = program_ops(trace)
    gx, gy, gz = (tuple(trace.grid) + (1, 1, 1))[:3]
    m.programs = [(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)]
    for program in m.ops:  # a trace from elsewhere may name programs outside its grid
        if program not in m.programs:
            m.programs.append(program)
    m.boxes = {name: box_for(name, shape, dtype) for name, (shape, dtype) in trace.tensors.items()}
    for name, box in m.boxes.items():
        oob = [a for plist in m.ops.values() for op in plist for t, a in op.oob.items() if t == name]
        box.keep_room_for(np.concatenate(oob) if oob else np.empty(0, np.int64))
    m.tiles = tile_map(puzzle.tile_order if puzzle else None, size_dict, output, len(m.programs))
    if m.tiles is not None:
        m.boxes[TILES] = TileBox.make(m.tiles.shape)
    m.stats = compute_stats(trace, m.ops, _view_numel(puzzle, size_dict))
    m.offending = list(dict.fromkeys(tuple(a.program) for a in [*trace.invalid, *trace.stores_to_inputs]))
    if not m.offending and status_map is not None and np.any(np.asarray(status_map) == 1):
        m.offending = _writers_of(m, int(np.flatnonzero(np.asarray(status_map).reshape(-1) == 1)[0]))
    most_ops = max((len(v) for v in m.ops.values()), default=0)
    header = " · ".join(s for s in (m.title, m.kernel, m.sizes) if s)
    m.layout = make_layout(m.boxes, stats_lines(most_ops, len(m.programs), len(m.boxes)), header, m.status)
    return m


def digest_to_draw(source: Source, outcome: int | None = None, *, puzzle: Puzzle | None = None) -> Model:
    """`digest`, or a ValueError that says why there is nothing to draw."""
    model = digest(source, outcome, puzzle=puzzle)
    if model is None:
        raise ValueError("no memory trace to draw: the kernel did not run in Triton's interpreter "
                         "(or failed before it ran); set TRITON_INTERPRET=1")
    return model


def _writers_of(m: Model, element: int) -> list[Program]:
    out = m.output
    return [p for p in m.programs for op in m.ops.get(p, []) if op.op != "load" and out in op.elements
            and np.any(op.elements[out] == element)][:1]


def layout(source: TestResult | SizeOutcome | Trace, outcome: int | None = None, *,
           puzzle: Puzzle | None = None) -> Layout:
    """The pixel layout `render_png` uses for this run (for tests and for pointing at cells)."""
    model = digest(source, outcome, puzzle=puzzle)
    if model is None:
        raise ValueError("no memory trace to lay out")
    return model.layout


def stats(source: TestResult | SizeOutcome | Trace, *, puzzle: Puzzle | None = None) -> Stats:
    """Loads, stores, bytes moved and masked lanes, per program and in total, for one run."""
    model = digest(source, puzzle=puzzle)
    if model is None:
        raise ValueError("no memory trace to count (the kernel did not run in the interpreter)")
    return model.stats
