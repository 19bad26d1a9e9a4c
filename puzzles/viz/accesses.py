"""The access model: what each program loaded, stored and masked off, recovered from the
`Trace` that `test()` records, and the numbers of a run (loads, stores, bytes, masked lanes,
the fewest bytes the puzzle needs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from puzzles.running.recording import Access, Trace
from puzzles.viz.style import Program


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


def compute_stats(trace: Trace, ops: dict[Program, list[Op]], view_numel: dict[str, int] | None = None) -> Stats:
    """The numbers of a run. `view_numel`: the elements of each strided input's view, whose storage
    also holds gaps that a kernel need not read; the fewest bytes count the view's elements only."""
    sizes = {name: itemsize(dtype) for name, (_, dtype) in trace.tensors.items()}
    tensor_bytes = {name: (view_numel or {}).get(name, math.prod(shape)) * sizes[name]
                    for name, (shape, _) in trace.tensors.items()}
    total = Counts()
    per_program = {}
    for program, plist in ops.items():
        c = Counts()
        for op in plist:
            c.add(op, sizes)
            total.add(op, sizes)
        per_program[program] = c
    return Stats(per_program, total, sum(tensor_bytes.values()), tensor_bytes, output_name(trace))
