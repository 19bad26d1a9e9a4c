"""Record, check and guard every memory access of a kernel run by Triton's interpreter.

Triton's CPU interpreter sends every load, store and atomic through four methods of its
builder (found on each Triton by what they receive: interpreter_hooks.py). While a `Recorder` is active
those methods are wrapped: each active lane's address
is looked up among the run's tensors; a lane outside every tensor is recorded as an invalid
access (op, tensor, element, program id, kernel line) and masked off, so the access never
happens and cannot corrupt memory. Masked-off lanes are counted but never checked.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import triton
from triton.runtime import interpreter as _interp

from puzzles.running import interpreter_hooks
from puzzles.running.descriptor_stores import TmaStores

LIBRARY_DIRS = tuple(
    os.path.dirname(m.__file__) + os.sep for m in (triton, np, sys.modules[__name__.split(".")[0]])
)


@dataclass
class Access:
    """One load, store or atomic op executed by one program."""

    op: str  # "load", "store" or "atomic"
    program: tuple[int, int, int]
    tensor: str
    elements: np.ndarray = field(repr=False)  # flat element indices of the in-bounds active lanes
    lanes: int  # lanes of the op
    masked: int  # lanes masked off by the kernel
    line: int | None
    shape: tuple[int, ...] = ()  # the op's block shape
    rmw: str = ""  # for an atomic: "add", "xchg", "max", "cas", ...
    # For a plain store into an output: the value of each lane in `elements` (two programs storing
    # one element are a race only where their values differ).
    values: np.ndarray | None = field(default=None, repr=False)


@dataclass
class InvalidAccess:
    """An active lane whose address lies outside its tensor."""

    op: str
    tensor: str
    element: int  # flat index relative to the tensor's first element (may be negative)
    program: tuple[int, int, int]
    line: int | None
    source: str = ""
    count: int = 1  # lanes of the same op that went out of bounds
    elements: np.ndarray | None = field(default=None, repr=False)  # every offending flat index, for drawing

    kind: str = "out of bounds"  # or "store to an input"
    shape: tuple[int, ...] = ()  # the tensor's shape, to name the element by its coordinates
    # The element's coordinates as the kernel's block walked them (block_coordinates): the column of a row that
    # a missing column mask ran past, where the flat index alone would read as the next row's (None: not known).
    coords: tuple[int, ...] | None = None
    # For an input read through strides (StridedLayout): where in its storage the lane landed, between the
    # view's elements ("" for any other access).
    between: str = ""
    why: str = ""  # what made the kernel's store reach there, where it is not the kernel's own pointers (TMA chunks)

    def describe(self) -> str:
        where = f"line {self.line}: {self.source.strip()}" if self.line else "kernel"
        more = f" (and {self.count - 1} more lane{'s' if self.count > 2 else ''})" if self.count > 1 else ""
        if self.between:
            return (f"{self.op} of {self.tensor}_ptr + {self.element}, which is no element of {self.tensor} "
                    f"({self.between}), in program {self.program}{more}, at {where}")
        what = "out of bounds" if self.kind == "out of bounds" else "writes into an input tensor"
        axes = self.overflow_text() if self.kind == "out of bounds" else ""
        why = f": {self.why}" if self.why else ""
        return (f"{self.op} of {self.tensor}{self.index_text()} {what}{f' ({axes})' if axes else ''} "
                f"in program {self.program}{more}, at {where}{why}")

    def coordinates(self) -> tuple[int, ...]:
        """The element's coordinates: as the kernel's block walked them where known, else from the flat index
        (its first coordinate running past the tensor, or below zero, as the pointer did)."""
        if self.coords is not None:
            return self.coords
        coords, rest = [], self.element
        for dim in reversed(self.shape[1:]):
            rest, c = divmod(rest, max(1, dim))
            coords.append(c)
        coords.append(rest)
        return tuple(reversed(coords))

    def index_text(self) -> str:
        """`[70, 40] (z is 64×128)` for element 9000 of a 64×128 tensor, `[9000]` for a vector."""
        if len(self.shape) < 2:
            # A single lane just past the end: the off-by-one of a mask written <= where < is meant.
            past = " (one past its end)" if self.shape and self.element == self.shape[0] and self.count == 1 else ""
            return f"[{self.element}]{past}"
        shape = "×".join(str(d) for d in self.shape)
        return f"[{', '.join(str(c) for c in self.coordinates())}] ({self.tensor} is {shape})"

    def overflow_text(self) -> str:
        """The axes the element's coordinates run past, as a learner fixes them: `column 8 of a row 8 wide`
        ("" for a vector, or where the coordinates are not known from the block)."""
        if self.coords is None or len(self.shape) < 2:
            return ""
        parts = []
        for axis, (c, n) in enumerate(zip(self.coords, self.shape, strict=True)):
            if 0 <= c < n:
                continue
            if axis == len(self.shape) - 1:
                parts.append(f"column {c} of a row {n} wide")
            elif axis == len(self.shape) - 2:
                parts.append(f"row {c} of {n} row{'s' if n != 1 else ''}")
            else:
                parts.append(f"index {c} of axis {axis}, which has {n}")
        return " and ".join(parts)



@dataclass(frozen=True)
class StridedLayout:
    """An input the kernel reads through strides of the grader's own (puzzle 19): its storage holds bytes that
    belong to no element of the view (row padding, pixels outside a crop). Reading one is reported as an access
    outside the tensor, with the element it lies after."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    stride_names: tuple[str, ...]  # the kernel's arguments that hold them (S1, S0, SC)
    storage_numel: int

    def offsets(self) -> np.ndarray:
        """The storage offset of every element of the view, in the view's row-major order."""
        grids = np.meshgrid(*[np.arange(n) for n in self.shape], indexing="ij")
        return sum(g * s for g, s in zip(grids, self.strides, strict=True)).ravel().astype(np.int64)

    def in_view(self) -> np.ndarray:
        """True for each storage element that is an element of the view."""
        mask = np.zeros(self.storage_numel, dtype=bool)
        mask[self.offsets()] = True
        return mask

    def describe_gap(self, offset: int, name: str) -> str:
        """Where storage element `offset` lies: after which element of the view, and how the view is laid out."""
        offsets = self.offsets()
        order = np.argsort(offsets, kind="stable")
        before = order[np.searchsorted(offsets[order], offset, side="right") - 1] if offset > offsets.min() else None
        at = " + ".join(f"{i}·{n}" for i, n in zip("jicdef", self.stride_names, strict=False))
        values = ", ".join(f"{n} = {s}" for n, s in zip(self.stride_names, self.strides, strict=True))
        place = ""
        if before is not None:
            coords = np.unravel_index(int(before), self.shape)
            gap = offset - int(offsets[before])
            place = f"{gap} after {name}[{', '.join(str(int(c)) for c in coords)}]; "
        return (f"{place}{name}[{', '.join('jicdef'[:len(self.shape)])}] is at {name}_ptr + {at}, with {values}: "
                "the bytes between are row padding or pixels outside the view, which the kernel must not read")


@dataclass
class UnfilledLoad:
    """A masked load without `other=` whose masked-off lanes the grader filled with poison."""

    line: int | None
    source: str
    lanes: int  # masked-off lanes filled, over the whole run


@dataclass
class Trace:
    """Everything one run touched."""

    tensors: dict[str, tuple[tuple[int, ...], str]]  # name -> (shape, dtype)
    grid: tuple[int, int, int]
    accesses: list[Access] = field(default_factory=list)
    invalid: list[InvalidAccess] = field(default_factory=list)
    stores_to_inputs: list[InvalidAccess] = field(default_factory=list)
    # Masked loads without `other=`, by line: their masked-off lanes held poison (NaN, junk integers),
    # as a GPU leaves them undefined where the interpreter would give 0.
    unfilled_loads: dict[int | None, UnfilledLoad] = field(default_factory=dict)
    # What the grader did for the kernel that Triton's interpreter cannot (an exchange of floats).
    emulated: list[str] = field(default_factory=list)
    recorded: bool = True
    # On a GPU, the output of this (interpreted) check run, whose undefined lanes held poison.
    output: Any = field(default=None, repr=False)  # False: accesses were checked but not kept (test(record=False))

    def __repr__(self) -> str:
        # One line, not thousands of accesses with their element arrays.
        names = ", ".join(f"{n}{list(shape)}" for n, (shape, _) in self.tensors.items())
        text = (f"<Trace grid={tuple(self.grid)} tensors: {names} · {len(self.accesses)} accesses, "
                f"{len(self.invalid)} out of bounds>")
        return text if len(text) <= 200 else text[:198] + "…>"


class Recorder:
    """Context manager that wraps the interpreter's memory ops for one run."""

    def __init__(self, regions: list[tuple[int, int, str]], element_sizes: dict[str, int],
                 inputs: set[str], trace: Trace, kernel_file: str | None, record: bool = True,
                 layouts: dict[str, StridedLayout] | None = None) -> None:
        self.starts = np.array([r[0] for r in regions], dtype=np.uint64)
        self.ends = np.array([r[1] for r in regions], dtype=np.uint64)
        self.names = [r[2] for r in regions]
        self.element_sizes = element_sizes
        self.inputs = inputs
        self.trace = trace
        self.kernel_file = kernel_file
        self.record = record
        self._saved: dict[str, object] = {}
        # Inputs read through strides: which of their storage's elements belong to the view.
        self.layouts = layouts or {}
        self._in_view = {self.names.index(n): (layout, layout.in_view()) for n, layout in self.layouts.items()
                         if n in self.names}
        self._semantic_saved: dict[str, Any] = {}
        self._from_class: set[str] = set()
        self._semantic_class: type | None = None
        self.tma = TmaStores()

    # -- the wrapped builder methods --------------------------------------------------------
    def __enter__(self) -> Recorder:
        hooks = interpreter_hooks.require()  # located on this Triton by what they receive; never judged without
        b = _interp.interpreter_builder
        names = hooks.builder_methods
        for name in names.values():
            self._saved[name] = getattr(b, name)
        # Methods the builder had from its class, not as its own attributes: dropped on exit, not set on it.
        self._from_class = {name for name in names.values() if name not in vars(b)}
        orig_load, orig_store = self._saved[names["load"]], self._saved[names["store"]]
        orig_rmw, orig_cas = self._saved[names["atomic"]], self._saved[names["atomic_cas"]]
        # The interpreter recomputes every 32-bit integer add, sub and mul in 64 bits to check for
        # overflow, then drops the check's assert unless debug=True: half of puzzle 10's grading time
        # for nothing. Off, the kernel wraps as compiled code does (a wrapped offset is caught as an
        # out-of-bounds access).
        self._saved["options"] = b.options
        if hasattr(b.options, "sanitize_overflow"):
            b.options = dataclasses.replace(b.options, sanitize_overflow=False)

        # Whether the kernel passed `other=` is taken from tl.load itself: Triton's semantic layer drops an
        # `other` that is false as a Python bool (`other.handle if other else None`), and the interpreter makes
        # a one-element block or a scalar truthy by its value, so `other=0.0` on a one-lane load (a scalar
        # pointer, a block of B0 == 1) reaches the builder as None although the kernel gave it.
        # The class's methods are wrapped, not the interpreter's instance's: Triton 3.6 gives every patched
        # builtin a semantic object of its own (3.7 shares one); the wrappers only watch, so a compile in this
        # process while they are in place is unchanged.
        other_given: list[bool] = []
        semantic_class = hooks.semantic_class
        self._semantic_saved = {name: semantic_class.__dict__.get(name, False) for name in hooks.load_methods}
        for name in hooks.load_methods:
            setattr(semantic_class, name, _watching_other(getattr(semantic_class, name), other_given))

        def masked_load(ptrs, mask, other, *rest, **kwargs):
            safe = self._check("load", ptrs, mask)
            loaded = orig_load(ptrs, safe, other, *rest, **kwargs)
            # A block pointer's or a descriptor's padding reaches the builder as `other` (no tl.load call gave it).
            without_other = other is None and not (other_given and other_given[-1])
            if without_other and not safe.data.all():
                self._poison_masked_lanes(loaded, safe, mask)
            return loaded

        def masked_store(ptrs, value, mask, *rest, **kwargs):
            safe = self._check("store", ptrs, mask, stored=value)
            return orig_store(ptrs, value, safe, *rest, **kwargs)

        def atomic_rmw(op, ptr, val, mask, *rest, **kwargs):
            kind = _RMW_NAMES.get(str(op).rsplit(".", 1)[-1], str(op).rsplit(".", 1)[-1].lower())
            safe = self._check("atomic", ptr, mask, kind)
            if kind == "xchg" and val.dtype.scalar.is_floating() and hasattr(_interp, "_interpreter"):
                return self._exchange_floats(ptr, val, safe)
            return orig_rmw(op, ptr, val, safe, *rest, **kwargs)

        def atomic_cas(ptr, cmp, val, *rest, **kwargs):
            all_lanes = _interp.TensorHandle(np.ones_like(ptr.data, dtype=bool), triton.language.int1)
            safe = self._check("atomic", ptr, all_lanes, "cas")
            if not safe.data.all():
                raise MemoryError("atomic_cas out of bounds (it has no mask: check its pointers)")
            return orig_cas(ptr, cmp, val, *rest, **kwargs)

        for role, wrapper in (("load", masked_load), ("store", masked_store), ("atomic", atomic_rmw),
                              ("atomic_cas", atomic_cas)):
            setattr(b, names[role], wrapper)
        # A descriptor's store writes whole 16-byte chunks on a GPU with TMA: stored so here too (descriptor_stores.py).
        if callable(getattr(b, DESCRIPTOR_STORE, None)):
            self._saved[DESCRIPTOR_STORE] = getattr(b, DESCRIPTOR_STORE)
            if DESCRIPTOR_STORE not in vars(b):
                self._from_class.add(DESCRIPTOR_STORE)
            setattr(b, DESCRIPTOR_STORE, self.tma.wrap(self._saved[DESCRIPTOR_STORE]))
        self._semantic_class = semantic_class
        return self

    def __exit__(self, *exc: object) -> None:
        b = _interp.interpreter_builder
        for name, fn in self._saved.items():
            if name in self._from_class:
                vars(b).pop(name, None)
            else:
                setattr(b, name, fn)
        for name, saved in self._semantic_saved.items():
            if saved is False:  # a base class's method: drop the wrapper
                delattr(self._semantic_class, name)
            else:
                setattr(self._semantic_class, name, saved)

    # -- the check ---------------------------------------------------------------------------
    def _poison_masked_lanes(self, loaded, safe, mask) -> None:
        """A masked load without `other=`: poison in every masked-off lane (the interpreter put 0 there),
        and the load's line noted where the kernel's own mask left lanes out (a lane masked off only because
        it was out of bounds is reported as that, not as a load without other=)."""
        data = loaded.data
        bits = masked_lane_bits(data.dtype)
        if bits is None:
            return
        off = ~np.broadcast_to(np.asarray(safe.data, dtype=bool), np.shape(data))
        data.view(bits[0])[off] = bits[1]
        if np.broadcast_to(np.asarray(mask.data, dtype=bool), np.shape(data)).all():
            return
        line = self._kernel_line()
        seen = self.trace.unfilled_loads.get(line)
        if seen is None:
            self.trace.unfilled_loads[line] = UnfilledLoad(line, _source_line(self.kernel_file, line), int(off.sum()))
        else:
            seen.lanes += int(off.sum())

    def _exchange_floats(self, ptr, val, safe):
        """tl.atomic_xchg of floats, which Triton's interpreter refuses ("Unsupported data type") and a GPU
        runs: the old values are read and the new ones written, lane by lane where the mask allows."""
        np_dtype = np.asarray(val.data).dtype
        zeros = np.zeros(np.shape(ptr.data), dtype=np_dtype)
        old = _interp._interpreter.load(ptr.data, safe.data, zeros, np_dtype)
        _interp._interpreter.store(ptr.data, val.data, safe.data)
        note = (f"Triton's interpreter cannot run tl.atomic_xchg on {val.dtype.scalar} (a GPU can): the grader "
                "ran it as a plain exchange")
        if note not in self.trace.emulated:
            self.trace.emulated.append(note)
        return _interp.TensorHandle(old, val.dtype.scalar)

    def _check(self, op: str, ptrs, mask, rmw: str = "", stored=None):
        addresses = np.asarray(ptrs.data, dtype=np.uint64)
        active = np.asarray(mask.data, dtype=bool)
        if active.shape != addresses.shape:
            active = np.broadcast_to(active, addresses.shape)
        program = tuple(int(i) for i in _interp.interpreter_builder.grid_idx)
        flat_addr = addresses[active]
        # Each address belongs to the nearest tensor that starts at or below it; guard zones
        # between tensors make that its own tensor for any plausible overshoot.
        slot = np.searchsorted(self.starts, flat_addr, side="right").astype(np.int64) - 1
        below_all = slot < 0
        np.maximum(slot, 0, out=slot)  # searchsorted's largest answer is len(starts): the last slot at most
        inside = ~below_all & (flat_addr < self.ends[slot])
        line = None
        if self.record or not inside.all():
            line = self._kernel_line()
        if not inside.all():
            self._report(op, flat_addr[~inside], slot[~inside], program, line,
                         np.flatnonzero(active.ravel())[~inside], addresses, active)
        if self._in_view and inside.any():
            inside = inside & ~self._outside_views(op, flat_addr, slot, inside, program, line)
        safe_active = active.copy()
        safe_active[active] = inside
        if self.record and inside.any():
            touched = slot[inside]
            # Nearly every access stays within one tensor: np.unique sorts, a comparison does not.
            for s in (touched[:1] if (touched == touched[0]).all() else np.unique(touched)):
                name = self.names[s]
                sel = inside & (slot == s)
                elements = ((flat_addr[sel] - self.starts[s]) // np.uint64(self.element_sizes[name])).astype(np.int64)
                values = None
                if stored is not None and name not in self.inputs:
                    values = np.broadcast_to(np.asarray(stored.data), addresses.shape)[active][sel].copy()
                self.trace.accesses.append(Access(
                    op, program, name, elements, int(addresses.size),
                    int(addresses.size - active.sum()), line, tuple(addresses.shape), rmw, values))
                if op != "load" and name in self.inputs:
                    self.trace.stores_to_inputs.append(InvalidAccess(
                        op, name, int(elements[0]), program, line, _source_line(self.kernel_file, line),
                        int(sel.sum()), elements, kind="store to an input", shape=self._shape(name)))
        elif self.record:
            # Every lane masked off, or every active lane out of bounds: the op still happened here,
            # in this order (the out-of-bounds report above says which tensor it went past).
            tensor = self.trace.invalid[-1].tensor if active.any() else ""
            self.trace.accesses.append(Access(op, program, tensor, np.empty(0, np.int64), int(addresses.size),
                                              int(addresses.size - active.sum()), line, tuple(addresses.shape), rmw))
        return _interp.TensorHandle(safe_active, triton.language.int1)

    def _report(self, op: str, addr: np.ndarray, slot: np.ndarray, program, line, lanes: np.ndarray,
                block: np.ndarray, active: np.ndarray) -> None:
        """Record the out-of-bounds lanes (`addr`, at flat positions `lanes` of the op's `block` of addresses,
        whose `active` lanes the mask let through)."""
        named = self._pointer_named(_source_line(self.kernel_file, line))
        if named is not None:
            # The line reads through one tensor's pointer: an overshoot past the tensors beyond it is still
            # that tensor's (a qweight index 8 times too large lands past z, but the learner wrote qweight_ptr).
            slot = np.full_like(slot, named)
        for s in np.unique(slot):
            name = self.names[s]
            sel = addr[slot == s]
            size = self.element_sizes[name]
            element = (sel.astype(np.int64) - np.int64(self.starts[s])) // size
            # Report the first offending lane (the one nearest the tensor), with how many more.
            nearest = int(np.argmin(np.abs(element)))
            first = int(element[nearest])
            shape = self._shape(name)
            coords = None
            if len(shape) >= 2 and np.prod(shape):
                elements = (block.astype(np.int64) - np.int64(self.starts[s])) // size
                lane = np.unravel_index(int(lanes[slot == s][nearest]), block.shape)
                coords = block_coordinates(elements, active, tuple(int(i) for i in lane), shape)
            self.trace.invalid.append(InvalidAccess(
                op, name, first, program, line, _source_line(self.kernel_file, line), int(sel.size), element,
                shape=shape, coords=coords, why=self.tma.current_note if op == "store" else ""))

    def _outside_views(self, op: str, addr: np.ndarray, slot: np.ndarray, inside: np.ndarray, program,
                       line: int | None) -> np.ndarray:
        """The lanes that land in a strided input's storage between its view's elements (to be masked off, as
        one past its end is), each such op reported as an access outside the tensor."""
        between = np.zeros_like(inside)
        for s, (layout, in_view) in self._in_view.items():
            here = inside & (slot == s)
            if not here.any():
                continue
            elements = ((addr[here] - self.starts[s]) // np.uint64(self.element_sizes[self.names[s]])).astype(np.int64)
            gap = ~in_view[elements]
            if not gap.any():
                continue
            name = self.names[s]
            line = line if line is not None else self._kernel_line()
            self.trace.invalid.append(InvalidAccess(
                op, name, int(elements[gap][0]), program, line, _source_line(self.kernel_file, line),
                int(gap.sum()), elements[gap], shape=self._shape(name),
                between=layout.describe_gap(int(elements[gap][0]), name)))
            between[np.flatnonzero(here)[gap]] = True
        return between

    def _pointer_named(self, source: str) -> int | None:
        """The slot of the one tensor whose pointer (`<name>_ptr`) the kernel line names, if exactly one.
        None for tensor lists (puzzle 21: `params[2]`), whose pointers come out of a table that the line names."""
        if any("[" in name for name in self.names):
            return None
        names = set(re.findall(r"\b(\w+)_ptr\b", source))
        slots = [i for i, name in enumerate(self.names) if name in names]
        return slots[0] if len(slots) == 1 and len(names) == 1 else None

    def _shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.trace.tensors.get(name, ((),))[0])

    def _kernel_line(self) -> int | None:
        """The innermost line being executed in the learner's code (not Triton's, not ours)."""
        frame = sys._getframe(3)
        while frame is not None:
            filename = frame.f_code.co_filename
            if not filename.startswith(LIBRARY_DIRS) and "importlib" not in filename:
                if self.kernel_file is None or filename == self.kernel_file:
                    return frame.f_lineno
            frame = frame.f_back
        return None


def _watching_other(load: Any, other_given: list[bool]) -> Any:
    """`load` (a semantic method receiving (ptr, mask, other, ...)), noting on `other_given` while it runs
    whether the kernel gave `other=`."""

    def watched(semantic_self, ptr, mask, other, *rest, **kwargs):
        other_given.append(other is not None)
        try:
            return load(semantic_self, ptr, mask, other, *rest, **kwargs)
        finally:
            other_given.pop()

    return watched


def block_coordinates(elements: np.ndarray, active: np.ndarray, lane: tuple[int, ...],
                      shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The coordinates of the element that `lane` of a block of flat element indices points at, as the block
    walks the tensor: from the active lane inside the tensor nearest the block's origin (the program's own
    start, whose coordinates the flat index gives right), each axis of the block moves one axis of the tensor
    (the outermost whose stride its step is a multiple of). A column mask left out sends `x[3, 7, 7 + 1]` to
    flat index 256 of a 4×8×8 tensor, which the flat index alone reads as x[4, 0, 0]; the block says it is
    column 8 of row 7. None where the block is not a grid of constant steps, or no lane is inside."""
    numel = int(np.prod(shape))
    inside = (elements >= 0) & (elements < numel) & active
    if not inside.any() or elements.ndim == 0:
        return None
    strides = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
    steps = []
    for k in range(elements.ndim):
        if elements.shape[k] < 2:
            steps.append(0)
            continue
        step = np.diff(elements, axis=k)
        if not (step == step.flat[0]).all():
            return None
        steps.append(int(step.flat[0]))
    positions = np.argwhere(inside)
    anchor = positions[np.argmin(positions.sum(1))]  # row-major order breaks ties
    coords = list(np.unravel_index(int(elements[tuple(anchor)]), shape))
    for k, step in enumerate(steps):
        moved = lane[k] - int(anchor[k])
        if not moved or not step:
            continue
        # The outermost axis whose stride the step is a multiple of: a step of W moves a row, not W columns.
        axis = min((d for d in range(len(shape)) if step % strides[d] == 0 and shape[d] > 1), default=len(shape) - 1)
        coords[axis] += moved * step // strides[axis]
    return tuple(int(c) for c in coords)


# Atomic operations by the interpreter's enum name; integer and float adds are both "add".
DESCRIPTOR_STORE = "create_descriptor_store"  # the interpreter builder's, on every Triton with descriptors
_RMW_NAMES = {"ADD": "add", "FADD": "add", "UMIN": "min", "UMAX": "max"}

# What a masked-off lane of a load without `other=` holds in the checked run: a NaN with a payload of
# its own (not the never-written marker), or a junk integer, so an output that depends on it shows.
_MASKED_LANE_BITS = {
    np.dtype(np.float32): (np.int32, 0x7FC0BAD0),
    np.dtype(np.float64): (np.int64, 0x7FF80000BAD0BAD0),
    np.dtype(np.float16): (np.int16, 0x7E0B),
    np.dtype(np.uint16): (np.uint16, 0x7FCB),  # bfloat16, as the interpreter stores it
    np.dtype(np.int32): (np.int32, 0x5A5A5A5A),
    np.dtype(np.int64): (np.int64, 0x5A5A5A5A5A5A5A5A),
    np.dtype(np.int16): (np.int16, 0x5A5A),
    np.dtype(np.int8): (np.int8, 0x5A),
    np.dtype(np.uint8): (np.uint8, 0xA5),
    np.dtype(np.uint32): (np.uint32, 0xA5A5A5A5),
}


def masked_lane_bits(np_dtype: np.dtype) -> tuple[type, int] | None:
    """(integer view, bit pattern) of the poison put in masked-off lanes of this dtype; None for booleans."""
    return _MASKED_LANE_BITS.get(np.dtype(np_dtype))


def _source_line(filename: str | None, line: int | None) -> str:
    if filename is None or line is None:
        return ""
    import linecache

    return linecache.getline(filename, line)
