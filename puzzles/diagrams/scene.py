"""What a diagram shows, before any drawing: the tensors of a puzzle at its canonical size, which
grid axis or loop walks each dimension, and the block one program touches.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from matplotlib.figure import Figure

from puzzles.course.puzzle import Puzzle, cdiv
from puzzles.course.spec import TensorSpec, spec_signature
from puzzles.diagrams.style import MAX_LAYERS

# The block of a grid axis that runs one program per element of its dimension (no block size names it).
ONE = "1"


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
        if self.block_name == ONE and self.kind == "grid":
            sub = "one per program"
        elif self.block_name and self.kind == "grid":
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


_NAME = re.compile(r"[A-Za-z_]\w*")


def _eval(expr: str, env: dict[str, int]) -> int:
    return int(eval(expr, {"__builtins__": {}}, dict(env)))  # shapes are small expressions like "MID//8"


def size_names(expr: str, sizes: dict[str, int]) -> list[str]:
    """The size keys a dimension's expression names ("MID//8" -> ["MID"]), each once."""
    return [n for n in dict.fromkeys(_NAME.findall(expr)) if n in sizes]


def base_name(expr: str) -> str | None:
    """The first name in a dimension's expression: what a packed "X//k" is a form of."""
    names = _NAME.findall(expr)
    return names[0] if names else None


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
    bases = {n for e in exprs for n in size_names(e, sizes)}
    plain = [e for e in exprs if e in sizes]  # dimensions that are a single size name

    grid = tuple(puzzle.grid_for(sizes))
    deps = _grid_dependencies(puzzle, sizes)
    pid = tuple((g - 1) // 2 for g in grid)
    blocks = {**sizes, ONE: 1}  # the block sizes, with the one-element block of a program per row

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
            if found is None and grid[axis] == sizes[d]:  # one program per row (a dropout's, a norm's)
                found = (d, ONE)
        if found:
            d, key = found
            block_of[d] = (key, "grid")
            axis_of[d] = axis
            axis_dims.append(d)
            lo = pid[axis] * blocks[key]
            hi = min(lo + blocks[key], sizes[d]) - 1
            walk = f"{d}, one each" if key == ONE else f"{d} in blocks of {key}"
            axis_notes.append(f"axis {axis}: {walk}; here {lo}" + (f"…{hi}" if hi > lo else ""))
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
    block_env = {d: blocks[k] for d, (k, _) in block_of.items()}
    for e in exprs:
        size = _eval(e, sizes)
        names = size_names(e, sizes)
        blocked = [n for n in names if n in block_of]
        dim = Dim(e, size)
        if blocked:
            n = blocked[0]
            key, kind = block_of[n]
            block = _eval(e, {**sizes, **{b: block_env[b] for b in blocked}})
            # A dimension one column longer ("V+1": a row's values, then its loss) steps as its base does.
            offset = re.fullmatch(rf"\s*{re.escape(n)}\s*[+-]\s*\d+\s*", e) is not None
            if offset:
                block = block_env[n]
            if block > 0:
                dim.block, dim.kind = block, kind
                dim.block_name = key if e == n or offset else e.replace(n, key)
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
