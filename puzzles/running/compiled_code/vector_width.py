"""What decides how wide a global load or store compiles, read from the TTGIR: for each `tt.load` and `tt.store`,
the facts that Triton's compiler weighs when it groups a thread's elements into one vector instruction.

Triton gives each thread `sizePerThread` adjacent elements along the layout's fastest dimension (its `order[0]`),
and a thread moves them with one instruction only where (1) the block has that many elements per thread at all
(its elements over the program's threads: a 128-element block over 4 warps of 32 threads is one each), (2) it
can prove the addresses consecutive and the first a multiple of the vector's bytes (the axis analysis: an integer
argument is a multiple of 16 only where the launch's value was and Triton marked it `tt.divisibility = 16`;
`tl.multiple_of` marks a value it computes, in elements for an integer and in bytes for a pointer), and (3) the
mask is the same across the vector (`tl.max_constancy`, or a comparison with an integer known to divide it).
The first two decide the layout's `sizePerThread`; the third narrows the instruction when the PTX is written.

Pure text in, records out, as reading.py: the learner's lines are placed with the same `Place`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from puzzles.running.compiled_code.reading import Place

_LAYOUT = re.compile(r"^#(\w+) = #ttg\.blocked<\{sizePerThread = \[([\d, ]*)\].*?order = \[([\d, ]*)\]")
_LOC = re.compile(r"^#(loc\d*) = loc\((.*)\)\s*$")
_FILE_LOC = re.compile(r'^"((?:[^"\\]|\\.)*)":(\d+):\d+')
_NAMED_LOC = re.compile(r'^"(?:[^"\\]|\\.)*"\(#(loc\d*)\)$')
_CALLSITE = re.compile(r"^callsite\(#(loc\d*) at #(loc\d*)\)$")
_ARG = re.compile(r"%([\w.]+): (!tt\.ptr<\w+>|\w+)(?: \{tt\.divisibility = (\d+) : i32\})?")
_OP = re.compile(r"^\s*(?:%([\w.]+)(?::\d+)?\s*=\s*)?([a-z_]+(?:\.[a-z_]+)+)\b(.*)$")
_FOR = re.compile(r"scf\.for %([\w.]+) = %([\w.]+) to %[\w.]+ step %([\w.]+)")
_VALUE = re.compile(r"%([\w.]+)")
_TENSOR = re.compile(r"tensor<((?:\d+x)*)(!tt\.ptr<(\w+)>|\w+)(?:,\s*#(\w+))?")
_SCALAR = re.compile(r"^\s*(!tt\.ptr<(\w+)>|[a-z]\w*)")
_AXIS = re.compile(r"\baxis = (\d+)")
_BITS = re.compile(r"(\d+)$")


def _hint(attrs: str, name: str) -> list[int] | None:
    """The values of a `tt.divisibility` / `tt.constancy` attribute (one per dimension), None where absent."""
    found = re.search(rf"{name} = (?:dense<\[?([\d, ]+)\]?>|(\d+) : i32)", attrs)
    if not found:
        return None
    return [int(v) for v in (found.group(1) or found.group(2)).split(",")]


@dataclass(frozen=True)
class _Op:
    name: str
    operands: tuple[str, ...]
    attrs: str
    shape: tuple[int, ...]  # the result's (a scalar: ())
    element: str  # f32, i32, i1, or the pointee of a pointer (with `pointer` set)
    pointer: bool
    layout: str
    loc: str | None


@dataclass(frozen=True)
class MemoryOp:
    """One `tt.load` or `tt.store` of the TTGIR and what decides its width.

    `per_thread`: the layout's sizePerThread along its fastest dimension (the most one instruction can take);
    `share`: the block's elements over the program's threads; `unknown_in_address`: integer arguments the address
    is computed from that the compiler knows no divisibility of (no hint on the way); `pointer_hints` and
    `offset_hints`: the `tl.multiple_of` promises the address is computed from, as (line, value: bytes for a
    pointer, elements for an integer); `unknown_in_mask`: integer arguments that a comparison of the mask varying
    along the vector's dimension reads, with no `tl.max_constancy` on the way; `mask_hints`: (line, constancy)
    promises found there."""

    kind: str  # "load" or "store"
    line: int | None
    filename: str | None
    shape: tuple[int, ...]
    element_bits: int
    per_thread: int
    share: int
    threads: int
    masked: bool
    columns: int  # the block's extent along the fastest dimension
    unknown_in_address: tuple[str, ...] = ()
    pointer_hints: tuple[tuple[int | None, int], ...] = ()
    offset_hints: tuple[tuple[int | None, int], ...] = ()
    unknown_in_mask: tuple[str, ...] = ()
    mask_hints: tuple[tuple[int | None, int], ...] = ()
    layout: str = ""

    @property
    def elements(self) -> int:
        return math.prod(self.shape) if self.shape else 1


@dataclass
class _Listing:
    ops: dict[str, _Op] = field(default_factory=dict)
    args: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # name -> (type, tt.divisibility)
    layouts: dict[str, tuple[list[int], list[int]]] = field(default_factory=dict)  # sizePerThread, order
    locs: dict[str, str] = field(default_factory=dict)
    accesses: list[_Op] = field(default_factory=list)
    threads: int = 0


def _type_of(text: str) -> tuple[tuple[int, ...], str, bool, str]:
    """(shape, element, pointer, layout) of the first type in `text`."""
    text = text.strip()
    tensor = _TENSOR.match(text)
    if tensor:
        dims = tuple(int(d) for d in tensor.group(1).split("x") if d)
        return dims, tensor.group(3) or tensor.group(2), tensor.group(3) is not None, tensor.group(4) or ""
    scalar = _SCALAR.match(text)
    if scalar:
        return (), scalar.group(2) or scalar.group(1), scalar.group(2) is not None, ""
    return (), "", False, ""


def _parse(ttgir: str) -> _Listing:
    listing = _Listing()
    warps = re.search(r'"ttg\.num-warps" = (\d+)', ttgir)
    lanes = re.search(r'"ttg\.threads-per-warp" = (\d+)', ttgir)
    listing.threads = int(warps.group(1)) * int(lanes.group(1)) if warps and lanes else 0
    for text in ttgir.splitlines():
        layout = _LAYOUT.match(text)
        if layout:
            listing.layouts[layout.group(1)] = ([int(v) for v in layout.group(2).split(",") if v.strip()],
                                                [int(v) for v in layout.group(3).split(",") if v.strip()])
            continue
        loc = _LOC.match(text)
        if loc:
            listing.locs[loc.group(1)] = loc.group(2)
            continue
        if "tt.func" in text:
            for name, kind, divisibility in _ARG.findall(text):
                listing.args[name] = (kind, int(divisibility) if divisibility else None)
            continue
        loop = _FOR.search(text)
        if loop:  # the induction variable: its start and step decide what it is a multiple of
            listing.ops[loop.group(1)] = _Op("scf.for", (loop.group(2), loop.group(3)), "", (), "i32", False, "", None)
            continue
        op = _OP.match(text)
        if not op:
            continue
        result, name, rest = op.groups()
        at = re.search(r"\sloc\(#(loc\d*)\)\s*$", rest)
        rest = rest[: at.start()] if at else rest
        attrs = " ".join(re.findall(r"\{[^{}]*\}", rest))
        body, _, types = re.sub(r"\{[^{}]*\}", "", rest).partition(" : ")
        operands = tuple(_VALUE.findall(body))
        shape, element, pointer, layout_name = _type_of(types.split("->")[-1] if "->" in types else types)
        parsed = _Op(name, operands, attrs, shape, element, pointer, layout_name, at.group(1) if at else None)
        if result:
            listing.ops[result] = parsed
        if name in ("tt.load", "tt.store"):
            listing.accesses.append(parsed)
    return listing


def _places(listing: _Listing, loc: str | None, seen: int = 0) -> list[tuple[str, int]]:
    """(file, line) of a location, innermost first (a helper's line, then the line that called it)."""
    text = listing.locs.get(loc or "")
    if text is None or seen > 50:
        return []
    found = _FILE_LOC.match(text)
    if found:
        return [(found.group(1).replace('\\"', '"'), int(found.group(2)))]
    named = _NAMED_LOC.match(text)
    if named:
        return _places(listing, named.group(1), seen + 1)
    call = _CALLSITE.match(text)
    if call:
        return _places(listing, call.group(1), seen + 1) + _places(listing, call.group(2), seen + 1)
    return []


def _placed(listing: _Listing, loc: str | None, place: Place) -> tuple[str | None, int | None]:
    for path, line in _places(listing, loc):
        found = place(path, line)
        if found is not None:
            return found
    return None, None


Hints = list[tuple[int | None, int]]  # (the learner's line, the promised value)


def _walk_address(listing: _Listing, start: str, place: Place) -> tuple[list[str], Hints, Hints]:
    """Integer arguments the address reaches with no hint on the way, and the pointer and integer hints met."""
    unknown: list[str] = []
    pointer_hints: Hints = []
    offset_hints: Hints = []
    todo, seen = [start], set()
    while todo:
        value = todo.pop()
        if value in seen:
            continue
        seen.add(value)
        if value in listing.args:
            kind, divisibility = listing.args[value]
            if not kind.startswith("!tt.ptr") and kind != "i1" and divisibility is None and value not in unknown:
                unknown.append(value)
            continue
        op = listing.ops.get(value)
        if op is None:
            continue
        hint = _hint(op.attrs, "tt.divisibility")
        if hint is not None:  # a promise: the analysis takes it as it is and looks no further
            (pointer_hints if op.pointer else offset_hints).append((_placed(listing, op.loc, place)[1], min(hint)))
            continue
        todo.extend(op.operands)
    return unknown, pointer_hints, offset_hints


def _walk_mask(listing: _Listing, start: str, dim: int, place: Place) -> tuple[list[str], Hints]:
    """Integer arguments read by a comparison of the mask that varies along dimension `dim` (the vector's), and
    the `tl.max_constancy` promises met there (line, elements along `dim`). A value's `dim` follows it through
    expand_dims; a scalar splat, or a dimension of extent 1, is the same across the vector."""
    unknown: list[str] = []
    hints: Hints = []
    todo, seen = [(start, dim)], set()
    while todo:
        value, at = todo.pop()
        if (value, at) in seen or value not in listing.ops:
            continue
        seen.add((value, at))
        op = listing.ops[value]
        if not op.shape or at >= len(op.shape) or op.shape[at] == 1:
            continue
        constancy = _hint(op.attrs, "tt.constancy")
        if constancy is not None:
            hints.append((_placed(listing, op.loc, place)[1], constancy[at] if at < len(constancy) else constancy[-1]))
            continue
        if op.name == "arith.cmpi":
            for name in _arguments_reached(listing, op.operands):
                if name not in unknown:
                    unknown.append(name)
            continue
        if op.name == "tt.expand_dims":
            axis = _AXIS.search(op.attrs)
            new = int(axis.group(1)) if axis else -1
            if at != new:
                todo.append((op.operands[0], at if at < new else at - 1))
            continue
        if op.name in ("tt.splat", "tt.reshape", "tt.trans", "tt.join", "tt.split"):
            continue  # a scalar is the same everywhere; a reshaped mask is past this reading
        todo.extend((operand, at) for operand in op.operands)
    return unknown, hints


def _arguments_reached(listing: _Listing, start: tuple[str, ...]) -> list[str]:
    """Integer arguments with no divisibility that these values are computed from, no hint on the way."""
    found: list[str] = []
    todo, seen = list(start), set()
    while todo:
        value = todo.pop()
        if value in seen:
            continue
        seen.add(value)
        if value in listing.args:
            kind, divisibility = listing.args[value]
            if not kind.startswith("!tt.ptr") and divisibility is None:
                found.append(value)
            continue
        op = listing.ops.get(value)
        if op is not None and _hint(op.attrs, "tt.divisibility") is None:
            todo.extend(op.operands)
    return sorted(found)


def memory_ops(ttgir: str, place: Place) -> list[MemoryOp]:
    """Each global load and store of the TTGIR with what decides its width; none where the TTGIR reads otherwise
    than this expects (a Triton that prints it differently): the rule's verdict then says less, and still holds."""
    try:
        return _memory_ops(_parse(ttgir), place)
    except (ValueError, IndexError, KeyError):
        return []


def _memory_ops(listing: _Listing, place: Place) -> list[MemoryOp]:
    out = []
    for op in listing.accesses:
        kind = "load" if op.name == "tt.load" else "store"
        pointer = listing.ops.get(op.operands[0]) if op.operands else None
        element = _BITS.search(pointer.element if pointer else "")
        if pointer is None or element is None or not op.shape:
            continue
        bits = int(element.group(1))
        size_per_thread, order = listing.layouts.get(op.layout, ([], []))
        fast = order[0] if order else len(op.shape) - 1
        per_thread = size_per_thread[fast] if fast < len(size_per_thread) else 1
        mask = op.operands[1] if kind == "load" and len(op.operands) > 1 else (
            op.operands[2] if kind == "store" and len(op.operands) > 2 else None)
        unknown, pointer_hints, offset_hints = _walk_address(listing, op.operands[0], place)
        in_mask, mask_hints = _walk_mask(listing, mask, fast, place) if mask else ([], [])
        filename, line = _placed(listing, op.loc, place)
        out.append(MemoryOp(kind, line, filename, op.shape, bits, per_thread,
                            math.prod(op.shape) // listing.threads if listing.threads else 0, listing.threads,
                            mask is not None, op.shape[fast], tuple(unknown), tuple(pointer_hints),
                            tuple(offset_hints), tuple(in_mask), tuple(mask_hints), op.layout))
    return out
