"""Step 2 of grading: which puzzle, which sizes, and each size's inputs and expected output.

A `Case` is one size made concrete: a guarded arena of random inputs and a poisoned output, the
grid, and what the spec returns for those inputs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from puzzles.course.puzzle import OutputParts, Puzzle, Reduction, Sizes, SplitK, default_grid
from puzzles.course.spec import SpecError, call_spec, spec_signature
from puzzles.grading.inputs import build_arena, poison_, random_tensor
from puzzles.grading.layouts import storage_numel, strided_layout, strided_view, strides_of
from puzzles.running.recording import StridedLayout


@dataclass
class Case:
    sizes: Sizes
    seed: int
    grid: tuple[int, ...]
    arena: Any
    input_names: list[str]
    expected: torch.Tensor
    zero_init: bool = False
    rtol: float = 1e-3
    atol: float = 1e-3
    row_tolerance: bool = False
    guarded: list[str] | None = None  # regions no store may touch, when more than the kernel's inputs
    relink: Callable[[Any], None] | None = None  # rewrites an address table for another arena (GPU copy)
    split_k: SplitK | None = None  # the split-K contract to check from the recorded accesses
    reduction: Reduction | None = None  # the axis the kernel loops over: rows no load reached are named
    # What the spec gives for a contiguous reading of the strided inputs (puzzle 19): a kernel that
    # ignores the strides it is given writes this.
    contiguous_expected: torch.Tensor | None = None
    # The strided inputs' layouts: the access check reports a read between a view's elements.
    layouts: dict[str, StridedLayout] = field(default_factory=dict)
    # Computes the puzzle's likely mistakes and the output each gives on these inputs (a wrong output matching
    # one is told which slip it is): only when an output is wrong, never for a passing run (puzzle 12's slips
    # were most of its cases' time). `mistaken` holds the result.
    slips: Callable[[], list[tuple[str, torch.Tensor]]] | None = None
    # The sentences of the slips recognised by the rows they get wrong, not their values (`Mistake.by_rows`).
    slips_by_rows: frozenset[str] = frozenset()
    parts: OutputParts | None = None  # results packed into the output (puzzle 26's dx, dw, db): named in verdicts

    @functools.cached_property
    def mistaken(self) -> list[tuple[str, torch.Tensor]]:
        """(the slip's sentence at these sizes, the output it gives), for each likely slip computable here."""
        return self.slips() if self.slips is not None else []


def size_list(p: Puzzle | None, nelem: Sizes | None, B: Sizes | None, sizes: list[Sizes] | None) -> list[Sizes]:
    """The sizes to grade: `sizes` exactly where given (sizes_given_note says what that leaves out); else the
    grading cell's size (nelem, B: the canonical size with the values the cell gives) first where it is none of
    the puzzle's, then every one of the puzzle's sizes. Editing the cell never shrinks what a pass covers; each
    canonical size keeps its inputs (input_stream)."""
    if sizes is not None:
        return [dict(s) for s in sizes]
    given = {**(nelem or {}), **(B or {})}
    if p is None:
        if not given:
            raise ValueError("an unknown puzzle needs its sizes: test(kernel, spec, nelem={...}, B={...})")
        return [given]
    cell = _follow_rules(p, given)
    canonical = [dict(s) for s in p.sizes]
    return ([cell] if cell not in canonical else []) + canonical


def input_stream(p: Puzzle | None, sizes: Sizes, position: int) -> int:
    """The index a size's inputs are drawn by (make_case): a size of the puzzle's its own place in the puzzle's
    list, whatever else is graded beside it (its input scale and shaped inputs go by that place too); any other
    size its position in the list graded (the grading cell's edited size, first, the canonical's 0)."""
    return p.sizes.index(sizes) if p is not None and sizes in p.sizes else position


def sizes_given_note(p: Puzzle | None, sizes: list[Sizes] | None) -> str:
    """Where test(..., sizes=[...]) leaves out sizes of the puzzle on purpose: what its verdict is not ("" where
    every size of the puzzle is among them, or the puzzle is unknown)."""
    if p is None or sizes is None:
        return ""
    missing = [s for s in p.sizes if dict(s) not in [dict(t) for t in sizes]]
    if not missing:
        return ""
    shown = "; ".join(" ".join(f"{k}={v}" for k, v in s.items()) for s in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return (f"graded only the sizes given to test(sizes=...), which leave out {len(missing)} of the puzzle's "
            f"{len(p.sizes)} sizes ({shown}{more}): this is not a pass of puzzle {p.number}; without sizes= "
            "test() grades every size, as the scoreboard (python -m puzzles grade) does")


def unknown_sizes_note(p: Puzzle | None, nelem: Sizes | None, B: Sizes | None) -> str | None:
    """A note naming the sizes given to test() that the puzzle has no use for (a typo: `n0` for `N0`)."""
    if p is None:
        return None
    known = {k for s in p.sizes for k in s}
    unknown = [k for k in {**(nelem or {}), **(B or {})} if k not in known
               and not (p.tensor_lists is not None and k[:1] == "L" and k[1:].isdigit())]
    if not unknown:
        return None
    return (f"{', '.join(unknown)} {'is not a size' if len(unknown) == 1 else 'are not sizes'} of puzzle {p.number}, "
            f"so {'it' if len(unknown) == 1 else 'they'} changed nothing; its sizes are {', '.join(p.canonical)}")


class SizeRuleError(ValueError):
    """Sizes given to test() that the puzzle's own rules rule out."""


def _follow_rules(p: Puzzle, given: Sizes) -> Sizes:
    """The canonical size with the learner's values, and the sizes that depend on them.

    The rules are read off the sizes the puzzle tests: two sizes equal in every one of them
    (puzzle 1's B0 = N0) stay equal, and a block that is always a power of two must stay one.
    """
    sizes = {**p.canonical, **given}
    if len(p.sizes) < 2:
        return sizes
    keys = list(p.canonical)
    for a in keys:
        for b in keys:
            if a == b or not all(s.get(a) == s.get(b) for s in p.sizes):
                continue
            if a in given and b in given and given[a] != given[b]:
                raise SizeRuleError(f"Puzzle {p.number} needs {b} = {a}, and {a}={given[a]}, {b}={given[b]} break it: "
                                    f"pass only {a} (the grader sets {b} to match)")
            if a in given and b not in given:
                sizes[b] = given[a]
    for k in keys:
        v = sizes[k]
        if k.startswith("B") and all(s[k] & (s[k] - 1) == 0 for s in p.sizes) and (v <= 0 or v & (v - 1)):
            source = next((f" (the puzzle sets {k} = {a}, given as {a}={v})" for a in given if a != k
                           and all(s.get(a) == s.get(k) for s in p.sizes)), "")
            raise SizeRuleError(f"Puzzle {p.number} needs the block size {k} to be a power of two, not {v}{source}: "
                                "tl.arange and block shapes need powers of two")
    return sizes


def make_case(spec: Callable[..., Any], p: Puzzle | None, sizes: Sizes, seed: int, index: int) -> Case:
    """The inputs of the `index`-th size. Every size reports the run's `seed`, which
    reproduces all of them (each size draws from its own stream of it)."""
    scale = p.input_scale(index) if p else 1.0
    if p is not None and p.tensor_lists is not None:  # one allocation per tensor, and tables of them
        from puzzles.grading.tensor_lists import TensorLists, build

        arena, pointers, guarded, expected, relink = build(spec, p.tensor_lists, sizes, seed + index, scale)
        count = len(TensorLists.lengths(sizes))  # each list end to end, as the spec sees it
        flat = {name: torch.cat([arena.tensors[f"{name}[{k}]"] for k in range(count)]) for name in p.tensor_lists.lists}
        return Case(sizes, seed, p.grid(sizes), arena, pointers, expected, rtol=p.rtol, atol=p.atol,
                     guarded=guarded, relink=relink,
                     slips=_slips(p, flat, {}, sizes))
    inputs, out = spec_signature(spec)
    shapes = {t.name: (t.shape(sizes), t.dtype) for t in inputs}
    shapes[out.name] = (out.shape(sizes), out.dtype)
    # A strided input lives in a flat storage (the arena guards all of it); the spec sees the view.
    strided = {n: strides_of(names, sizes) for n, names in (p.strided_inputs if p else {}).items()}
    views = dict(shapes)
    for name, strides in strided.items():
        shapes[name] = ((storage_numel(shapes[name][0], strides),), shapes[name][1])
    arena = build_arena(shapes)
    gen = torch.Generator().manual_seed(seed + index)
    for t in inputs:
        arena.tensors[t.name].copy_(random_tensor(shapes[t.name][0], t.dtype, gen, scale))
    # A puzzle may shape some inputs so that its known bugs fail at every seed (puzzle 9's keys
    # grow along the row, so the running maximum changes between chunks).
    draw = p.draw_inputs if p else None
    for name, tensor in (draw(sizes, index, gen) if draw else {}).items():
        arena.tensors[name].copy_(tensor)
    seen = {n: strided_view(arena.tensors[n], views[n][0], s) for n, s in strided.items()}
    if p is not None and p.output_init == "zeros":
        arena.tensors[out.name].zero_()
    else:
        poison_(arena.tensors[out.name])
    expected = call_spec(spec, [seen.get(t.name, arena.tensors[t.name]).clone() for t in inputs], sizes)
    if not isinstance(expected, torch.Tensor):
        raise SpecError(f"{spec.__name__} must return a tensor, returned {type(expected).__name__}")
    if tuple(expected.shape) != shapes[out.name][0] or expected.dtype != out.dtype:
        raise SpecError(
            f"{spec.__name__} returned {expected.dtype} of shape {tuple(expected.shape)} but its annotation says "
            f"{out.dtype} of shape {shapes[out.name][0]}")
    grid = (p.grid if p else default_grid)(sizes)
    rtol, atol = (p.rtol, p.atol) if p else (1e-3, 1e-3)
    zero_init = p is not None and p.output_init == "zeros"
    names = [t.name for t in inputs]
    row = p is not None and p.tolerance == "row"
    contiguous = None
    if strided:
        read = {n: _contiguous_reading(arena.tensors[n], views[n][0]) for n in strided}
        if all(t is not None for t in read.values()):
            contiguous = call_spec(spec, [read.get(t.name, arena.tensors[t.name]).clone() for t in inputs], sizes)
    # A slip may read a strided input's gaps (a hard-coded stride): it gets a view of the whole storage.
    slips = _slips(p, {t.name: arena.tensors[t.name] for t in inputs},
                   {n: (views[n][0], strided[n]) for n in strided}, sizes)
    layouts = {n: strided_layout(views[n][0], p.strided_inputs[n], sizes) for n in strided} if p else {}
    by_rows = frozenset(m.text_at(sizes) for m in p.likely_mistakes if m.by_rows) if p else frozenset()
    return Case(sizes, seed, grid, arena, names, expected, zero_init=zero_init, rtol=rtol, atol=atol,
                 row_tolerance=row, split_k=p.split_k if p else None, contiguous_expected=contiguous,
                 slips=slips, slips_by_rows=by_rows, reduction=p.reduced_axis if p else None, layouts=layouts,
                 parts=p.output_parts if p else None)


def _slips(p: Puzzle | None, inputs: dict[str, torch.Tensor],
           strided: dict[str, tuple[tuple[int, ...], tuple[int, ...]]],
           sizes: Sizes) -> Callable[[], list[tuple[str, torch.Tensor]]] | None:
    """What each of the puzzle's likely slips gives on these inputs, computed when called (None: no slips). The
    inputs are copied now, as the kernel is given them (a kernel run in this process may store into them); a
    strided input by its storage, seen through its view (`strided`: name -> shape, strides). A slip that cannot
    be computed at these sizes (sizes given to test() outside the puzzle's rules) is left out: it only ever adds
    a note."""
    if p is None or not p.likely_mistakes:
        return None
    kept = {name: t.clone() for name, t in inputs.items()}

    def fresh() -> dict[str, torch.Tensor]:
        return {name: strided_view(t.clone(), *strided[name]) if name in strided else t.clone()
                for name, t in kept.items()}

    def compute() -> list[tuple[str, torch.Tensor]]:
        found = []
        # Small tensors: on one thread. Several spin waiting for each other where the cores are busy (the runs'
        # children, a shared machine): puzzle 28's thirteen slips took seconds a size on two loaded cores.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for m in p.likely_mistakes:
                try:
                    out = m.output(fresh(), sizes)
                except Exception:  # noqa: BLE001 - a note we cannot make is no failure
                    continue
                if isinstance(out, torch.Tensor):
                    found.append((m.text_at(sizes), out))
        finally:
            torch.set_num_threads(threads)
        return found

    return compute


def _contiguous_reading(storage: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor | None:
    """The storage read from its first element as if the view were contiguous (None if it is too short)."""
    numel = 1
    for n in shape:
        numel *= n
    return storage[:numel].view(shape) if storage.numel() >= numel else None
